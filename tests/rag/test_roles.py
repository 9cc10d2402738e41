import pytest

from rag.roles import ROLES, role_for


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("todo/api.py", "source"),
        ("static/app.js", "source"),
        ("tests/test_api.py", "test"),
        ("pkg/api_test.go", "test"),
        ("src/button.spec.tsx", "test"),
        ("conftest.py", "test"),
        ("README.md", "docs"),
        ("docs/usage.md", "docs"),
        ("LICENSE", "docs"),
        ("pyproject.toml", "config"),
        (".github/workflows/ci.yml", "config"),
        ("Dockerfile", "config"),
        ("dist/app.min.js", "generated"),
        ("package-lock.json", "generated"),
        ("proto/user_pb2.py", "generated"),
        ("node_modules/left-pad/index.js", "vendored"),
        ("third_party/lib/x.c", "vendored"),
        ("data/cities.csv", "data"),
        ("app/fixtures/users.json", "data"),
    ],
)
def test_it_guesses_the_role_from_the_path(path, role):
    assert role_for(path) == role
    assert role in ROLES
