import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from rag.indexing import index_codebase

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    calls = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: calls.append(ids))
    return calls


def test_the_detail_page_offers_a_new_version_upload(alice_client, indexed):
    response = alice_client.get(reverse("rag:detail", args=[indexed.pk]))
    assert b"Upload a new version" in response.content


def test_a_new_version_replaces_the_upload_and_reindexes(alice_client, indexed, queued):
    pack = json.dumps({"files": {"app.py": "def hello():\n    return 1\n"}}).encode()
    url = reverse("rag:new_version", args=[indexed.pk])
    response = alice_client.post(url, {"pack": SimpleUploadedFile("v2.json", pack)})
    assert response.status_code == 302
    assert queued == [(indexed.pk,)]
    index_codebase(indexed.pk)
    indexed.refresh_from_db()
    assert indexed.status == "ready"
    assert list(indexed.files.values_list("path", flat=True)) == ["app.py"]


def test_a_bad_new_version_keeps_the_old_one(alice_client, indexed, queued):
    url = reverse("rag:new_version", args=[indexed.pk])
    response = alice_client.post(url, {"pack": SimpleUploadedFile("v2.txt", b"no markers")})
    assert response.status_code == 400
    assert b"Expected a Repomix pack" in response.content
    assert queued == []
    assert indexed.files.count() == 10


def test_someone_elses_codebase_is_not_found(client, bob, indexed, queued):
    client.force_login(bob)
    pack = SimpleUploadedFile("v2.json", b'{"files": {"a.py": "x"}}')
    response = client.post(reverse("rag:new_version", args=[indexed.pk]), {"pack": pack})
    assert response.status_code == 404
    assert queued == []
