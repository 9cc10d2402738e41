import pytest

from rag.models import Codebase

pytestmark = pytest.mark.django_db


def test_it_reports_status_as_json(alice_client, alice):
    codebase = Codebase.objects.create(
        owner=alice, name="x", status="indexing", progress=55, progress_stage="embedding"
    )
    response = alice_client.get(f"/codebases/{codebase.pk}/status.json")
    assert response.status_code == 200
    assert response.json() == {
        "status": "indexing",
        "progress": 55,
        "stage": "embedding",
        "error": "",
        "file_count": 0,
        "chunk_count": 0,
        "vectors": {"done": 0, "total": 0},
    }


def test_it_hides_other_peoples_status(alice_client, bob):
    codebase = Codebase.objects.create(owner=bob, name="x")
    assert alice_client.get(f"/codebases/{codebase.pk}/status.json").status_code == 404


def test_it_requires_login(client, alice):
    codebase = Codebase.objects.create(owner=alice, name="x")
    assert client.get(f"/codebases/{codebase.pk}/status.json").status_code == 302
