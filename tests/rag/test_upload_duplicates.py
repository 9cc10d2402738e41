"""The same bytes uploaded twice: the owner is told and offered the codebase they have."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.models import Codebase
from rag.services import DuplicateUpload, create_codebase_from_upload, upload_digest

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def dispatched(monkeypatch):
    calls = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: calls.append(ids))
    return calls


def upload(data, name="sample.xml"):
    return SimpleUploadedFile(name, data)


def test_the_upload_digest_is_stored(alice, pack_bytes):
    codebase = create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())])
    assert codebase.upload_sha256 == upload_digest([("x", pack_bytes())])
    assert len(codebase.upload_sha256) == 64


def test_the_same_bytes_again_name_the_existing_codebase(alice, pack_bytes, dispatched):
    first = create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())])
    with pytest.raises(
        DuplicateUpload, match="already uploaded exactly these bytes as “Todo”"
    ) as e:
        create_codebase_from_upload(alice, "Other", [upload(pack_bytes(), "renamed.xml")])
    assert e.value.existing == first
    assert Codebase.objects.count() == 1 and len(dispatched) == 1


def test_confirming_makes_a_second_copy_with_a_distinct_name(alice, pack_bytes):
    create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())])
    again = create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())], allow_duplicate=True)
    third = create_codebase_from_upload(alice, "Todo", [upload(b'{"files": {"a.py": "x"}}')])
    assert (again.name, third.name) == ("Todo (2)", "Todo (3)")


def test_another_owners_identical_upload_is_not_a_duplicate(alice, bob, pack_bytes):
    create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())])
    theirs = create_codebase_from_upload(bob, "Todo", [upload(pack_bytes())])
    assert theirs.owner == bob and theirs.name == "Todo"


def test_a_failed_copy_does_not_block_a_new_upload(alice, pack_bytes):
    failed = create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())])
    Codebase.objects.filter(pk=failed.pk).update(status="failed")
    assert create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())]).pk != failed.pk


def test_the_upload_page_links_the_existing_codebase_and_asks_to_confirm(
    alice_client, alice, pack_bytes
):
    first = create_codebase_from_upload(alice, "Todo", [upload(pack_bytes())])
    response = alice_client.post("/codebases/upload/", {"name": "", "pack": upload(pack_bytes())})
    html = response.content.decode()
    assert response.status_code == 409
    assert f'href="/codebases/{first.pk}/"' in html and "Open “Todo”" in html
    assert 'name="allow_duplicate"' in html
    confirmed = {"name": "", "pack": upload(pack_bytes()), "allow_duplicate": "on"}
    assert alice_client.post("/codebases/upload/", confirmed).status_code == 302
    assert Codebase.objects.filter(owner=alice).count() == 2
