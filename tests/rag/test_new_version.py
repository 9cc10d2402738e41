import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from planagents import leases
from rag.indexing import index_codebase, lease_name, stale_after
from rag.models import Codebase
from rag.services import upload_digest

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
    pack = SimpleUploadedFile("v2.txt", b"no markers")
    response = alice_client.post(url, {"pack": pack}, follow=True)
    assert response.redirect_chain == [(reverse("rag:detail", args=[indexed.pk]), 302)]
    assert "not uploaded: v2.txt: Expected a Repomix pack" in response.content.decode()
    assert queued == []
    assert indexed.files.count() == 10
    indexed.refresh_from_db()
    assert indexed.status == "ready"


def test_someone_elses_codebase_is_not_found(client, bob, indexed, queued):
    client.force_login(bob)
    pack = SimpleUploadedFile("v2.json", b'{"files": {"a.py": "x"}}')
    response = client.post(reverse("rag:new_version", args=[indexed.pk]), {"pack": pack})
    assert response.status_code == 404
    assert queued == []


def test_a_failed_codebase_offers_a_new_version_upload(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="bad", status="failed", error="No.")
    html = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()
    assert "Upload a new version" in html
    assert f'action="{reverse("rag:new_version", args=[codebase.pk])}"' in html


def test_a_new_version_during_indexing_is_refused_with_the_reason_shown(
    alice_client, alice, queued
):
    codebase = Codebase.objects.create(owner=alice, name="busy", status="indexing")
    assert leases.acquire(lease_name(codebase.pk), "a live job", 60)
    pack = SimpleUploadedFile("v2.json", b'{"files": {"a.py": "x"}}')
    url = reverse("rag:new_version", args=[codebase.pk])
    response = alice_client.post(url, {"pack": pack}, follow=True)
    # Back on the codebase page (a reload there never posts the form again), saying why.
    assert response.redirect_chain == [(reverse("rag:detail", args=[codebase.pk]), 302)]
    html = response.content.decode()
    assert (
        '<li class="error">The new version was not uploaded: This codebase is being indexed' in html
    )
    assert queued == []
    # The message is shown once, not on every later visit.
    later = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()
    assert "was not uploaded" not in later


def test_a_new_version_with_no_file_says_so(alice_client, indexed, queued):
    url = reverse("rag:new_version", args=[indexed.pk])
    response = alice_client.post(url, {}, follow=True)
    assert "The new version was not uploaded: This field is required." in response.content.decode()
    assert queued == []


def test_a_codebase_stuck_indexing_accepts_a_new_version(alice_client, alice, queued, settings):
    codebase = Codebase.objects.create(owner=alice, name="stuck", status="indexing")
    long_ago = timezone.now() - stale_after() - timedelta(minutes=1)
    Codebase.objects.filter(pk=codebase.pk).update(updated_at=long_ago)
    pack = SimpleUploadedFile("v2.json", b'{"files": {"a.py": "x"}}')
    url = reverse("rag:new_version", args=[codebase.pk])
    response = alice_client.post(url, {"pack": pack}, follow=True)
    assert "New version uploaded; indexing it now." in response.content.decode()
    assert queued == [(codebase.pk,)]
    codebase.refresh_from_db()
    assert codebase.status == "pending"


def test_a_quiet_codebase_whose_job_holds_its_lease_is_not_stuck(alice_client, alice, queued):
    codebase = Codebase.objects.create(owner=alice, name="slow", status="indexing")
    long_ago = timezone.now() - stale_after() - timedelta(minutes=1)
    Codebase.objects.filter(pk=codebase.pk).update(updated_at=long_ago)
    assert leases.acquire(lease_name(codebase.pk), "a live job", 60)
    pack = SimpleUploadedFile("v2.json", b'{"files": {"a.py": "x"}}')
    url = reverse("rag:new_version", args=[codebase.pk])
    response = alice_client.post(url, {"pack": pack}, follow=True)
    assert "being indexed right now" in response.content.decode()
    assert queued == []


def test_the_same_bytes_as_the_indexed_version_are_refused(alice_client, alice, queued):
    pack = b'{"files": {"a.py": "x"}}'
    codebase = Codebase.objects.create(
        owner=alice, name="same", status="ready", upload_sha256=upload_digest([("v1", pack)])
    )
    url = reverse("rag:new_version", args=[codebase.pk])
    response = alice_client.post(url, {"pack": SimpleUploadedFile("v2.json", pack)}, follow=True)
    assert "exactly the bytes of the version already indexed" in response.content.decode()
    assert queued == []


def test_a_new_version_records_its_digest(alice_client, indexed, queued):
    pack = b'{"files": {"b.py": "y"}}'
    alice_client.post(
        reverse("rag:new_version", args=[indexed.pk]), {"pack": SimpleUploadedFile("v.json", pack)}
    )
    indexed.refresh_from_db()
    assert indexed.upload_sha256 == upload_digest([("v.json", pack)])


def test_a_codebase_left_pending_still_shows_the_new_version_form(alice_client, alice):
    codebase = Codebase.objects.create(owner=alice, name="left", status="pending")
    html = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()
    assert f'action="{reverse("rag:new_version", args=[codebase.pk])}"' in html
