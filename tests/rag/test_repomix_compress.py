"""Packs made with `repomix --compress` keep only extracted fragments, joined by `⋮----` lines,
so their line numbers are the pack's, not the repository's: the codebase records that, and
plans and sessions on it say so next to their citations."""

import json

import pytest
from django.urls import reverse

from agents.citations import line_note
from agents.plan import codebase_paths, render_plan
from conversations.models import PlanningSession, PlanningState
from rag.indexing import index_codebase
from rag.parsers import parse_upload
from rag.parsers.listing import LINE_WARNINGS

COMPRESSED = next(w for w in LINE_WARNINGS if "--compress" in w)


def warnings_of(data: bytes) -> list[str]:
    return parse_upload([("pack", data)]).warnings


def test_a_real_compressed_pack_is_recognised(pack_bytes):
    assert COMPRESSED in warnings_of(pack_bytes("sample.compress.xml"))


def test_it_is_recognised_by_its_fragments_without_the_summary(pack_bytes):
    # `--no-file-summary` drops the notes that say so; the ⋮---- lines remain.
    text = pack_bytes("sample.compress.xml").decode()
    assert "⋮----" in text
    bare = text[text.index("<directory_structure>") :]
    assert "compressed" not in bare.lower()
    assert COMPRESSED in warnings_of(bare.encode())


def test_a_repository_that_keeps_a_compressed_pack_is_not_itself_compressed(pack_bytes):
    files = {f"src/m{n}.py": f"def f{n}():\n    return {n}\n" for n in range(30)}
    files["tests/fixtures/sample.compress.xml"] = pack_bytes("sample.compress.xml").decode()
    pack = json.dumps({"files": files}).encode()
    assert warnings_of(pack) == []


def test_an_uncompressed_pack_says_nothing_about_line_numbers(pack_bytes):
    assert not set(warnings_of(pack_bytes("sample.xml"))) & set(LINE_WARNINGS)


@pytest.fixture
def compressed(alice, make_codebase, pack_bytes):
    codebase = make_codebase(alice, pack_bytes("sample.compress.xml"))
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    return codebase


def make_session(codebase):
    session = PlanningSession.objects.create(
        owner=codebase.owner, codebase=codebase, title="Rate limit", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    return session


def test_the_codebase_records_it_and_plans_on_it_say_so(compressed, alice_client):
    assert any(COMPRESSED in w for w in compressed.warnings)
    assert line_note(compressed) == COMPRESSED
    plan = {"summary": "s", "steps": [{"title": "t", "detail": "See `todo/api.py:12`."}]}
    markdown = render_plan(plan, codebase_paths(compressed), title="Rate limit")
    assert markdown.startswith(f"# Plan: Rate limit\n\n> **Line numbers.** {COMPRESSED}")
    page = alice_client.get(
        reverse("conversations:detail", args=[make_session(compressed).pk])
    ).content.decode()
    assert "line-note" in page and "Repomix --compress" in page


def test_sessions_on_an_ordinary_pack_show_no_note(indexed, alice_client):
    assert line_note(indexed) == "" and codebase_paths(indexed).line_note == ""
    page = alice_client.get(
        reverse("conversations:detail", args=[make_session(indexed).pk])
    ).content.decode()
    assert "line-note" not in page
