"""Citations in agent text are read by rag.paths and checked against the codebase's files."""

import pytest

from agents.citations import Citation, extract_citations, line_note
from conversations.rendering import render_markdown
from rag.models import Codebase, CodeFile
from rag.parsers.listing import LINE_WARNINGS

pytestmark = pytest.mark.django_db

FILES = {"todo/api.py": 40, "todo/auth.py": 30, ".github/ci.yml": 12, "tests/test_api.py": 20}


@pytest.fixture
def small(user):
    codebase = Codebase.objects.create(owner=user, name="small", status="ready")
    for path, lines in FILES.items():
        CodeFile.objects.create(
            codebase=codebase, path=path, line_count=lines, content="x\n" * lines
        )
    return codebase


def test_a_dotfile_folder_keeps_its_dot(small):
    # lstrip("./") once turned this into github/ci.yml, which does not exist.
    assert extract_citations(small, "See `.github/ci.yml:3`.") == [
        Citation(".github/ci.yml", 3, 3, True)
    ]


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("TODO/API.py:3", Citation("todo/api.py", 3, 3, True)),
        ("`api.py#L3-L9`", Citation("todo/api.py", 3, 9, True)),
        ("auth.py:7", Citation("todo/auth.py", 7, 7, True)),
        ("./todo/api.py:40", Citation("todo/api.py", 40, 40, True)),
    ],
)
def test_it_resolves_paths_as_the_plan_checks_do(small, text, cited):
    assert extract_citations(small, text) == [cited]


def test_missing_files_and_lines_past_the_end_are_marked(small):
    assert extract_citations(small, "todo/api.py:41 and todo/nothing.py:1") == [
        Citation("todo/api.py", 41, 41, False),
        Citation("todo/nothing.py", 1, 1, False),
    ]


def test_the_same_citation_spelled_twice_is_listed_once(small):
    text = "todo/api.py:3, then TODO/API.py:3 and todo/api.py#L3."
    assert extract_citations(small, text) == [Citation("todo/api.py", 3, 3, True)]


def test_it_does_not_see_other_codebases_files(small, other_user):
    theirs = Codebase.objects.create(owner=other_user, name="theirs", status="ready")
    assert extract_citations(theirs, "todo/api.py:3") == [Citation("todo/api.py", 3, 3, False)]


def test_an_anchored_citation_in_a_message_becomes_a_link():
    html = str(
        render_markdown("Look at `TODO/API.py#L3-L9`.", file_url_prefix="/codebases/1/file/")
    )
    assert '<a href="/codebases/1/file/TODO/API.py?hl=3-9#L3"' in html  # the view redirects
    assert "<a" not in str(render_markdown("`localhost:8000`", file_url_prefix="/f/"))


def test_line_note_finds_the_warning_that_line_numbers_moved(small):
    compress = next(w for w in LINE_WARNINGS if "--compress" in w)
    assert line_note(small) == ""
    small.warnings = ["The pack's directory listing names 1 file(s) that are not in it: x.py."]
    assert line_note(small) == ""
    small.warnings = ["part-2.xml: " + compress]  # a multi-part upload names the part
    assert line_note(small) == compress
