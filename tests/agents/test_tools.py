"""The investigation tools on the sample pack: each finds what is there, answers "not found,
did you mean …" for what is not, stays bounded, and never shows a withheld file."""

from __future__ import annotations

import pytest

from agents.investigation.tools import MAX_CHARS, MAX_LINES, Workspace
from rag.models import CodeFile

pytestmark = pytest.mark.django_db


@pytest.fixture
def ws(codebase) -> Workspace:
    CodeFile.objects.create(
        codebase=codebase, path="todo/secrets.py", sha256="x", content="API_KEY = 'sk-live'\n",
        withheld_reason="Looks like it holds an API key.",
    )  # fmt: skip
    big = "".join(f"value_{n} = {n}  # {'x' * 60}\n" for n in range(1, 5001))
    CodeFile.objects.create(
        codebase=codebase, path="todo/huge.py", sha256="y", content=big, line_count=5000
    )
    return Workspace.of(codebase)


def test_find_symbol_returns_the_definition_with_its_lines(ws):
    result = ws.find_symbol("TokenStore")
    assert result.found and result.path == "todo/auth.py"
    assert result.location.startswith("todo/auth.py:")
    assert "class TokenStore" in result.text


def test_find_symbol_suggests_close_names_when_missing(ws):
    result = ws.find_symbol("TokenStor")
    assert not result.found
    assert "Did you mean" in result.message and "TokenStore" in result.message


def test_find_references_lists_the_lines_that_name_it(ws):
    result = ws.find_references("check_password")
    assert result.found
    assert "todo/api.py:" in result.text  # login() calls it


def test_find_references_of_an_unknown_name_says_so(ws):
    result = ws.find_references("no_such_function_here")
    assert not result.found and "Nothing in this codebase" in result.message


def test_read_file_reads_numbered_lines(ws):
    result = ws.read_file("todo/auth.py", 1, 5)
    assert result.found and result.location == "todo/auth.py:1-5"
    assert result.text.splitlines()[0].startswith("1: ")
    assert len(result.text.splitlines()) == 5


def test_read_file_out_of_range_is_a_clear_answer(ws):
    result = ws.read_file("todo/auth.py", 9000, 9010)
    assert not result.found
    assert "out of range" in result.message and "lines" in result.message


def test_read_file_of_a_huge_file_is_bounded(ws):
    result = ws.read_file("todo/huge.py", 1, 5000)
    shown = result.text.splitlines()
    assert result.found and len(shown) <= MAX_LINES
    assert len(result.text) <= MAX_CHARS + 200
    assert result.end == len(shown) and "of 5000" in result.message


def test_read_file_takes_a_citation_argument(ws):
    result = ws.call("read_file", "todo/auth.py:3-4")
    assert result.location == "todo/auth.py:3-4"


def test_read_file_of_a_missing_path_suggests_real_ones(ws):
    result = ws.read_file("todo/auht.py")
    assert not result.found and "todo/auth.py" in result.message


def test_withheld_files_are_refused_by_every_tool(ws):
    for tool in ("read_file", "outline", "related"):
        result = ws.call(tool, "todo/secrets.py")
        assert not result.found and "withheld" in result.message, tool
        assert "sk-live" not in result.text
    assert "secrets.py" not in ws.list_dir("todo").text
    assert "sk-live" not in ws.search("API_KEY sk-live").text


def test_outline_lists_definitions(ws):
    result = ws.outline("todo/storage.py")
    assert result.found and "class TodoStorage" in result.text and "mark_done" in result.text


def test_outline_of_a_missing_file_suggests(ws):
    result = ws.outline("todo/storag.py")
    assert not result.found and "todo/storage.py" in result.message


def test_outline_of_a_name_outlines_the_file_that_defines_it(ws):
    result = ws.call("outline", "TokenStore")
    assert result.found and result.path == "todo/auth.py"
    assert "`TokenStore` is not a file; it is defined at todo/auth.py:" in result.message
    assert "class TokenStore" in result.text  # the file's outline


def test_find_symbol_of_a_file_outlines_that_file(ws):
    result = ws.call("find_symbol", "todo/storage.py")
    assert result.found and result.tool == "find_symbol" and result.path == "todo/storage.py"
    assert "`todo/storage.py` is a file, not a name; its outline." in result.message
    assert "class TodoStorage" in result.text and "mark_done" in result.text
    # A file this codebase lacks is still a name that names nothing.
    assert not ws.call("find_symbol", "todo/nothing_here.py").found


def test_read_file_of_a_name_reads_its_definition(ws):
    result = ws.call("read_file", "TodoStorage.mark_done")
    assert result.found and result.tool == "read_file" and result.path == "todo/storage.py"
    assert "def mark_done" in result.text


def test_a_name_that_names_nothing_is_still_no_file(ws):
    for tool in ("outline", "read_file"):
        result = ws.call(tool, "NoSuchThing")
        assert not result.found and result.message.startswith("No file `NoSuchThing`"), tool


def test_list_dir_lists_children_and_suggests_for_a_missing_folder(ws):
    root = ws.list_dir("")
    assert root.found and "todo/" in root.text
    missing = ws.list_dir("tood")
    assert not missing.found and "todo" in missing.message


def test_related_gives_imports_importers_and_tests(ws):
    result = ws.related("todo/auth.py")
    assert result.found
    assert "todo/api.py" in result.text.split("imported by:")[1]


def test_search_finds_code(ws):
    result = ws.search("hash a password with a salt")
    assert result.found and result.path


def test_an_unknown_tool_or_empty_argument_never_raises(ws):
    assert "No tool named" in ws.call("grep", "x").message
    assert not ws.call("search", "").found
    assert not ws.call("read_file", "").found


def test_search_for_a_quoted_line_cites_the_line_where_it_appears_word_for_word(ws):
    result = ws.search("token=secrets.token_urlsafe( TOKEN_BYTES )")
    lines = ws._all_lines("todo/auth.py")
    number = next(n for n, t in enumerate(lines, 1) if "token_urlsafe" in t)
    assert result.found and result.location == f"todo/auth.py:{number}-{number}"
    assert result.message.endswith(f"appears word for word at todo/auth.py:{number}.")
    assert f"{number}: {lines[number - 1]}" in result.text  # with the lines around it
    assert f"{number - 1}: " in result.text


def test_a_quoted_line_from_a_withheld_file_is_never_shown(ws):
    result = ws.search("API_KEY = 'sk-live'")
    assert "todo/secrets.py" not in result.text and result.path != "todo/secrets.py"
    assert not ws.find_text("API_KEY = 'sk-live'").found


def test_find_symbol_takes_a_file_path_with_a_qualified_name(ws):
    result = ws.find_symbol("todo/auth.py::TokenStore.issue")
    assert result.found and result.path == "todo/auth.py"
    assert "def issue" in result.text


def test_every_tools_description_fits_an_evidence_steps_why():
    # A native tool call's step is explained by its tool's description (native.py).
    from agents.investigation.evidence import EvidenceStep
    from agents.investigation.tools import TOOLS

    limit = next(
        m.max_length for m in EvidenceStep.model_fields["why"].metadata if hasattr(m, "max_length")
    )
    assert all(len(tool.does) <= limit for tool in TOOLS.values())
