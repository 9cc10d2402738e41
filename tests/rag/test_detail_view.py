import pytest

from rag.models import Codebase

pytestmark = pytest.mark.django_db


def test_it_shows_progress_while_indexing(alice_client, alice):
    codebase = Codebase.objects.create(
        owner=alice, name="big", status="indexing", progress=42, progress_stage="embedding"
    )
    response = alice_client.get(f"/codebases/{codebase.pk}/")
    assert response.status_code == 200
    assert b'aria-valuenow="42"' in response.content and b"style=" not in response.content
    assert b"embedding" in response.content
    assert f'data-status-url="/codebases/{codebase.pk}/status.json"'.encode() in response.content
    assert b"js/codebase.js" in response.content


def test_it_shows_stats_and_a_file_tree_when_ready(alice_client, indexed):
    response = alice_client.get(f"/codebases/{indexed.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "js/codebase.js" not in html
    assert "<b>10</b>files" in html
    assert "python 6" in html
    assert "<summary>todo/" in html
    assert f'href="/codebases/{indexed.pk}/file/todo/api.py"' in html
    assert "<details open><summary>tests/" in html


def test_it_shows_why_indexing_failed(alice_client, alice):
    codebase = Codebase.objects.create(
        owner=alice, name="bad", status="failed", error="Expected a Repomix pack but found <b>"
    )
    response = alice_client.get(f"/codebases/{codebase.pk}/")
    assert b"Expected a Repomix pack but found &lt;b&gt;" in response.content


def test_it_hides_other_peoples_codebases(alice_client, bob):
    codebase = Codebase.objects.create(owner=bob, name="secret")
    assert alice_client.get(f"/codebases/{codebase.pk}/").status_code == 404
