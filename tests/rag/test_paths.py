import io
import json
import zipfile

import pytest

from rag import paths
from rag.indexing import index_codebase
from rag.parsers import parse_upload
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


# rag.paths: the one normaliser, citation parser and resolver.


@pytest.mark.parametrize(
    ("written", "spelled"),
    [
        ("./todo/api.py", "todo/api.py"),
        ("././todo/api.py", "todo/api.py"),
        (".github/ci.yml", ".github/ci.yml"),
        ("./.github/ci.yml", ".github/ci.yml"),
        (".env", ".env"),
        ("todo\\api.py", "todo/api.py"),
        ("todo//api.py", "todo/api.py"),
        ("/todo/api.py", "todo/api.py"),
        ("  todo/api.py  ", "todo/api.py"),
        ("todo/./api.py", "todo/api.py"),
        ("docs/My Notes.md", "docs/My Notes.md"),
    ],
)
def test_it_spells_a_path_the_codebase_way_and_keeps_dotfiles(written, spelled):
    assert paths.normalize(written) == spelled


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("../etc/passwd", "climbs out of its folder"),
        ("todo/../../x.py", "climbs out of its folder"),
        ("bad\nname.py", "line break"),
        ("bad\rname.py", "line break"),
        ("bad\u2028name.py", "line break"),
        ("nul\x00.py", "NUL"),
        ("tab\there.py", "invisible or control character"),
        ("bell\x07.py", "invisible or control character"),
        ("evil\u202egnp.py", "invisible or control character"),
        ("a/" * 600 + "b.py", "longer than 1000 characters"),
        ("./", "empty"),
    ],
)
def test_it_rejects_paths_no_file_can_have(written, reason):
    assert reason in paths.problem(paths.tidy(written))
    with pytest.raises(paths.InvalidPath, match=reason) as raised:
        paths.normalize(written)
    assert "\n" not in str(raised.value) and "\x00" not in str(raised.value)


@pytest.mark.parametrize(
    "written",
    ["`todo/api.py`", "'todo/api.py'", "(todo/api.py)", "todo/api.py,", "todo/api.py.",
     "todo/api.py:12", "todo/api.py:12-30", "todo/api.py#L3", "todo/api.py#L3-L9",
     "`todo/api.py:12`,"],
)  # fmt: skip
def test_it_cleans_what_models_write_around_a_path(written):
    assert paths.clean(written) == "todo/api.py"


def test_cleaning_never_turns_dot_dot_into_a_usable_path():
    with pytest.raises(paths.InvalidPath):
        paths.clean("todo/..")


@pytest.mark.parametrize(
    ("text", "path", "start", "end"),
    [
        ("see todo/api.py:12 for it", "todo/api.py", 12, 12),
        ("in `todo/api.py:12-30`.", "todo/api.py", 12, 30),
        ("todo/api.py#L3", "todo/api.py", 3, 3),
        ("(todo/api.py#L3-L9)", "todo/api.py", 3, 9),
        ("todo/api.py#L3-9", "todo/api.py", 3, 9),
        ("`.github/ci.yml:4`", ".github/ci.yml", 4, 4),
        ("./todo/api.py:7", "todo/api.py", 7, 7),
        ("api.py:20-10", "api.py", 10, 20),
        ("api.py:3-0", "api.py", 3, 3),
        ("src/Makefile:2", "src/Makefile", 2, 2),
        ("tài_liệu/ghi_chú.md:5", "tài_liệu/ghi_chú.md", 5, 5),
        ("todo\\api.py:5", "todo/api.py", 5, 5),
    ],
)
def test_it_reads_every_way_of_citing_a_line(text, path, start, end):
    assert paths.find_citations(text) == [paths.Citation(path, start, end)]


@pytest.mark.parametrize(
    "text",
    ["localhost:8000", "step 2:3", "ratio 16:9", "https://example.com/a.py:3",
     "todo/api.py:12abc", "todo/api.py:", "todo/api.py:0", "todo/api.py:1234567890",
     "e.g.:3", "../../etc/passwd:1"],
)  # fmt: skip
def test_it_does_not_take_other_things_for_citations(text):
    assert paths.find_citations(text) == []


def test_it_finds_several_citations_in_order():
    text = "Change todo/api.py:12, then `todo/auth.py#L5` and todo/api.py:12 again."
    assert [(c.path, c.start) for c in paths.find_citations(text)] == [
        ("todo/api.py", 12),
        ("todo/auth.py", 5),
        ("todo/api.py", 12),
    ]


def test_it_parses_one_citation_or_nothing():
    assert paths.parse_citation("`todo/api.py#L3-L9`") == paths.Citation("todo/api.py", 3, 9)
    assert paths.parse_citation("todo/api.py:3") == paths.Citation("todo/api.py", 3, 3)
    assert paths.parse_citation("x = todo/api.py:3") is None
    assert paths.parse_citation("todo/api.py") is None


# Inputs built to make a backtracking pattern retry at every position (runs of path
# characters that never end in a line number, colons, anchors, digits past the cap).
ADVERSARIAL = {
    "a path that never ends": ("a/" * 50_000, 0),
    "dots without an extension": ("a." * 50_000 + ":", 0),
    "colons with no line": ("a.py:" * 20_000, 0),
    "ranges run together": ("x.py:1-" * 14_285, 1),
    "slashes then a line": ("/" * 100_000 + ":1", 0),
    "a line number 100 000 digits long": ("a.py:" + "1" * 100_000, 0),
    "anchors with no line": ("a.py#L" * 16_666, 0),
    "citations in backticks": ("`a.py:1` " * 11_111, 11_111),
}


@pytest.mark.parametrize(("text", "count"), ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_a_100_kb_adversarial_text_is_read_by_a_linear_time_engine(text, count):
    # RE2 compiles the pattern to an automaton: its work is linear in the text by
    # construction, so no input can make it backtrack. The counts show it read them right.
    assert type(paths.CITATION).__module__.startswith("re2")
    assert len(text) >= 99_990
    assert len(paths.find_citations(text)) == count
    assert paths.parse_citation(text) is None


@pytest.fixture
def files():
    return paths.FileSet(
        ["todo/api.py", "todo/auth.py", "tests/test_api.py", "README.md", "readme.md",
         ".github/ci.yml", "src/app/views.py", "lib/views.py"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("written", "real", "how"),
    [
        ("todo/api.py", "todo/api.py", "exact"),
        ("./todo/api.py:12", "todo/api.py", "exact"),
        (".github/ci.yml", ".github/ci.yml", "exact"),
        ("TODO/API.py", "todo/api.py", "case"),
        ("api.py#L3", "todo/api.py", "suffix"),
        ("AUTH.PY", "todo/auth.py", "suffix"),
        ("app/views.py", "src/app/views.py", "suffix"),
    ],
)
def test_it_resolves_a_written_path_and_says_how(files, written, real, how):
    found = files.resolve(written)
    assert (found.path, found.how) == (real, how)


def test_it_does_not_guess_between_several_files(files):
    found = files.resolve("views.py")
    assert found.path is None and found.how == "ambiguous"
    assert set(found.candidates) == {"src/app/views.py", "lib/views.py"}
    assert files.resolve("Readme.md").how == "ambiguous"


def test_a_suffix_match_is_whole_folders_only(files):
    assert files.resolve("pi.py").how == "missing"  # not "todo/api.py"
    assert files.resolve("github/ci.yml").how == "missing"  # lstrip("./") once made this


def test_an_invalid_path_resolves_to_nothing_and_is_shown_escaped(files):
    found = files.resolve("x.py` | exists |\n| `todo/api.py")
    assert found.path is None and found.how == "invalid"
    assert "\n" not in found.written and "\\n" in found.written
    assert "line break" in found.reason


@pytest.mark.parametrize(
    "given", ["api.py", "todo/API.PY", "todo/api.py#L3-L9"], ids=["tail", "case", "anchor"]
)
def test_the_database_lookup_resolves_the_same_way(indexed, given):
    assert resolve_path(indexed, given) == "todo/api.py"


def test_a_citation_link_spelled_another_way_reaches_the_real_file(indexed, alice_client):
    response = alice_client.get(f"/codebases/{indexed.pk}/file/TODO/API.py?hl=3-4")
    assert response.status_code == 302
    assert response["Location"] == f"/codebases/{indexed.pk}/file/todo/api.py?hl=3-4"
    missing = alice_client.get(f"/codebases/{indexed.pk}/file/todo/nothing.py")
    assert missing.status_code == 404


# Uploads: every parser's paths pass rag.paths' check in parse_upload, the common entry.


def zip_of(entries: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return buffer.getvalue()


PARSABLE_XML = (
    '<repomix><files><file path="ok.py">x = 1</file>'
    '<file path="bad&#10;name.py">y = 2</file></files></repomix>'
)
UNUSABLE_PATHS = {
    "a zip member with a line break": ("repo.zip", zip_of({"ok.py": "x", "bad\nname.py": "y"})),
    "a zip member with a control character": (
        "repo.zip",
        zip_of({"ok.py": "x", "bell\x07.py": "y"}),
    ),
    "a JSON pack path that climbs out": (
        "p.json",
        json.dumps({"files": {"ok.py": "x", "../../escape.py": "y"}}).encode(),
    ),
    "a JSON pack path with a NUL": (
        "p.json",
        json.dumps({"files": {"ok.py": "x", "nul\x00.py": "y"}}).encode(),
    ),
    "an escaped line break in parsable XML": ("p.xml", PARSABLE_XML.encode()),
}


@pytest.mark.parametrize(("name", "data"), UNUSABLE_PATHS.values(), ids=UNUSABLE_PATHS.keys())
def test_files_no_page_could_show_are_left_out_with_a_clear_warning(name, data):
    result = parse_upload([(name, data)])
    assert [f.path for f in result.files] == ["ok.py"]
    (warning,) = result.warnings
    assert warning.startswith("Left out 1 file(s) whose path holds a line break")
    assert "rename them and upload a new version" in warning
    assert warning.isprintable()  # the path is shown escaped


def test_a_codebase_with_a_line_break_in_a_path_still_shows_its_page(
    alice, alice_client, make_codebase
):
    pack = json.dumps({"files": {"todo/api.py": "x = 1\n", "bad\nname.py": "y = 2\n"}})
    codebase = make_codebase(alice, pack.encode())
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    assert list(codebase.files.values_list("path", flat=True)) == ["todo/api.py"]
    assert any("bad\\nname.py" in w for w in codebase.warnings)
    assert alice_client.get(f"/codebases/{codebase.pk}/").status_code == 200
