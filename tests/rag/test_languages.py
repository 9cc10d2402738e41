import pytest

from rag.languages import language_for


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("todo/api.py", "python"),
        ("static/app.js", "javascript"),
        ("src/App.TSX", "typescript"),
        ("README.md", "markdown"),
        ("Dockerfile", "dockerfile"),
        ("deploy/Dockerfile.prod", "dockerfile"),
        ("Makefile", "makefile"),
        (".env.example", "dotenv"),
        ("LICENSE", ""),
    ],
)
def test_it_guesses_the_language_from_the_file_name(path, language):
    assert language_for(path) == language
