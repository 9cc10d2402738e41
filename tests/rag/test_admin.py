import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


def test_staff_can_see_codebases_and_their_files(client, indexed):
    admin = get_user_model().objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    listing = client.get("/admin/rag/codebase/")
    assert listing.status_code == 200 and b"sample" in listing.content
    page = client.get(f"/admin/rag/codebase/{indexed.pk}/change/")
    assert page.status_code == 200
    assert b"todo/api.py" in page.content


def test_staff_cannot_edit_what_indexing_computed(client, indexed):
    admin = get_user_model().objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    page = client.get(f"/admin/rag/codebase/{indexed.pk}/change/").content.decode()
    for field in ("upload_sha256", "warnings", "status", "content_hash"):
        assert f'name="{field}"' not in page
    code_file = indexed.files.get(path="todo/api.py")
    page = client.get(f"/admin/rag/codefile/{code_file.pk}/change/").content.decode()
    assert 'name="withheld_reason"' not in page


def test_staff_see_a_codebases_versions(client, indexed):
    admin = get_user_model().objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    page = client.get(f"/admin/rag/codebase/{indexed.pk}/change/").content.decode()
    assert "Codebase versions" in page
    assert "First upload" in page
