import pytest

from rag.models import Codebase
from rag.retrieval import Hit, retrieve

pytestmark = pytest.mark.django_db


def paths(hits):
    return [h.path for h in hits]


def test_it_finds_the_code_that_answers_a_question(indexed):
    hits = retrieve(indexed, "where are passwords hashed and checked?", k=3)
    assert hits[0].path == "todo/auth.py"
    assert all(isinstance(h, Hit) for h in hits)


def test_it_returns_real_lines_with_a_reason_and_score(indexed):
    hits = retrieve(indexed, "mark a todo as done", k=6)
    assert len(hits) == 6
    assert hits == sorted(hits, key=lambda h: -h.score)
    for hit in hits:
        content = indexed.files.get(path=hit.path).content.split("\n")
        assert hit.text == "\n".join(content[hit.start_line - 1 : hit.end_line])
        assert hit.reason
    assert "todo/storage.py" in paths(hits[:2])


def test_it_finds_identifiers_lexically(indexed):
    hits = retrieve(indexed, "TokenStore.user_for", k=3)
    assert hits[0].path == "todo/auth.py"
    assert "lexical" in hits[0].reason


def test_it_says_when_a_hit_matched_both_ways(indexed):
    hits = retrieve(indexed, "bearer token authentication", k=6)
    assert any(h.reason.startswith("dense+lexical") for h in hits)


def test_it_favours_files_the_query_names(indexed):
    hits = retrieve(indexed, "what does export.py do", k=3)
    assert hits[0].path == "todo/export.py"
    assert "path match" in hits[0].reason


def test_it_prefers_source_over_tests_for_the_same_topic(indexed):
    hits = retrieve(indexed, "login with a bad password returns 401", k=6)
    top_source = next(i for i, h in enumerate(hits) if h.path.startswith("todo/"))
    assert top_source <= 2


def test_it_returns_nothing_for_an_empty_query(indexed):
    assert retrieve(indexed, "   ") == []


def test_it_returns_nothing_until_the_codebase_is_ready(alice):
    pending = Codebase.objects.create(owner=alice, name="pending")
    assert retrieve(pending, "anything") == []


def test_it_keeps_working_after_a_restart(indexed):
    from rag import index

    before = retrieve(indexed, "json file storage", k=3)
    index._cache.clear()  # as if the process had restarted
    assert retrieve(indexed, "json file storage", k=3) == before


def test_it_still_answers_for_a_codebase_indexed_before_code_maps(indexed, settings):
    from rag import index

    (settings.PLANAGENTS_INDEX_DIR / str(indexed.pk) / "map.json").unlink()
    index._cache.clear()
    hits = retrieve(indexed, "check_password is too slow", k=3)
    assert hits and hits[0].path == "todo/auth.py"
