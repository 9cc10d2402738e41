import pytest

from rag.retrieval import closest_paths, file_exists, read_lines, resolve_path

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "given",
    [
        "todo/api.py",
        "./todo/api.py",
        "/todo/api.py",
        "todo\\api.py",
        "`todo/api.py`",
        "todo/api.py:12",
        "todo/api.py#L3-L9",
        "TODO/API.py",
    ],
)
def test_it_resolves_the_ways_a_plan_may_write_a_path(indexed, given):
    assert resolve_path(indexed, given) == "todo/api.py"
    assert file_exists(indexed, given)


def test_it_says_a_missing_file_does_not_exist(indexed):
    assert resolve_path(indexed, "todo/rate_limit.py") is None
    assert not file_exists(indexed, "todo/rate_limit.py")
    assert not file_exists(indexed, "")


def test_it_suggests_the_closest_real_paths(indexed):
    assert closest_paths(indexed, "todo/storge.py")[0] == "todo/storage.py"
    assert "todo/api.py" in closest_paths(indexed, "src/api.py")
    assert len(closest_paths(indexed, "todo/x.py", n=2)) <= 2


def test_it_does_not_see_other_codebases_files(indexed, bob, make_codebase):
    other = make_codebase(bob, b"{}")
    assert not file_exists(other, "todo/api.py")


def test_it_reads_exact_lines_of_a_file(indexed):
    assert read_lines(indexed, "todo/__init__.py", 3, 3) == '__version__ = "0.1.0"'
    assert read_lines(indexed, "nope.py") is None
