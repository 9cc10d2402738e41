import pytest

from rag.models import Codebase

pytestmark = pytest.mark.django_db


def test_it_lists_only_my_codebases(alice_client, alice, bob):
    Codebase.objects.create(
        owner=alice, name="my-repo", status="ready", file_count=3, chunk_count=9
    )
    Codebase.objects.create(owner=bob, name="bobs-repo")
    response = alice_client.get("/codebases/")
    assert response.status_code == 200
    assert b"my-repo" in response.content
    assert b"bobs-repo" not in response.content
    assert b'class="badge ready"' in response.content


def test_it_links_ready_codebases_to_a_new_planning_session(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="r", status="ready")
    Codebase.objects.create(owner=alice, name="p", status="pending")
    response = alice_client.get("/codebases/")
    assert response.content.count(b"/sessions/new/?codebase=") == 1
    assert f"/sessions/new/?codebase={codebase.pk}".encode() in response.content


def test_it_requires_login(client):
    response = client.get("/codebases/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
