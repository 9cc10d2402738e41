"""Versions of a codebase (issue 19, item 11): each upload that replaces the index is a
numbered version recording when it was uploaded and indexed and which files it added, removed
and changed (by content hash); the list shows the latest version, the codebase page them all."""

import importlib
import json

import pytest
from django.apps import apps as django_apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from rag import services
from rag.indexing import index_codebase
from rag.models import Codebase, CodebaseVersion

pytestmark = pytest.mark.django_db

V1 = {
    "app/users.py": "def create_user(name):\n    return {'name': name}\n",
    "app/orders.py": "def place_order(user, item):\n    return {'user': user, 'item': item}\n",
    "app/billing.py": "def invoice(order):\n    return {'order': order, 'paid': False}\n",
}
V2 = {
    "app/users.py": V1["app/users.py"],
    "app/billing.py": "def invoice(order, tax=0.2):\n    return {'order': order}\n",
    "app/tax.py": "RATE = 0.2\n",
}


def pack(files: dict[str, str]) -> bytes:
    return json.dumps({"files": files}).encode()


@pytest.fixture
def queued(monkeypatch):
    calls = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: calls.append(ids))
    return calls


@pytest.fixture
def first(alice, queued):
    upload = SimpleUploadedFile("v1.json", pack(V1))
    codebase = services.create_codebase_from_upload(alice, "shop", [upload])
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    return codebase


def upload_again(codebase, files: dict[str, str], name: str = "v2.json") -> Codebase:
    services.upload_new_version(codebase, [SimpleUploadedFile(name, pack(files))])
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    return codebase


def test_the_first_upload_is_version_1_with_no_changes_listed(first):
    (version,) = first.versions.all()
    assert (version.number, version.kind, version.file_count) == (1, "first", 3)
    assert (version.added, version.removed, version.changed) == ([], [], [])
    assert version.uploaded_at == first.uploaded_at is not None
    assert version.indexed_at >= version.uploaded_at


def test_a_new_version_lists_the_files_it_added_removed_and_changed(first):
    codebase = upload_again(first, V2)
    latest, older = codebase.versions.all()
    assert (latest.number, latest.kind, older.number) == (2, "upload", 1)
    assert latest.added == ["app/tax.py"]
    assert latest.removed == ["app/orders.py"]
    assert latest.changed == ["app/billing.py"]
    assert (latest.added_count, latest.removed_count, latest.changed_count) == (1, 1, 1)
    assert latest.change_summary == "1 added, 1 removed, 1 modified"
    assert latest.uploaded_at == codebase.uploaded_at > older.uploaded_at


def test_indexing_the_same_upload_again_records_no_new_version(first):
    # A retry, changed roles or vectors resumed index the kept upload again: same code.
    Codebase.objects.filter(pk=first.pk).update(status="pending")
    index_codebase(first.pk)
    assert list(first.versions.values_list("number", flat=True)) == [1]


def test_new_bytes_with_the_same_files_are_a_version_that_changed_nothing(first):
    # Repomix writes the time into its header: the bytes differ, the files do not.
    with_header = json.dumps({"fileSummary": {"generated": "now"}, "files": V1}).encode()
    services.upload_new_version(first, [SimpleUploadedFile("v2.json", with_header)])
    index_codebase(first.pk)
    latest = first.versions.first()
    assert latest.number == 2
    assert latest.touched_count == 0


def test_the_list_shows_the_latest_version_and_when_it_was_uploaded(alice_client, first):
    created = first.created_at
    Codebase.objects.filter(pk=first.pk).update(created_at=created.replace(year=2020))
    codebase = upload_again(first, V2)
    html = alice_client.get(reverse("rag:list")).content.decode()
    assert ">v2</a>" in html
    uploaded = timezone.localtime(codebase.versions.first().uploaded_at)
    assert uploaded.strftime("%Y-%m-%d %H:%M") in html
    assert "2020-" not in html  # not the first upload's time


def test_the_list_says_when_a_newer_upload_is_not_indexed_yet(alice_client, first):
    services.upload_new_version(first, [SimpleUploadedFile("v2.json", pack(V2))])
    html = alice_client.get(reverse("rag:list")).content.decode()
    assert ">v1</a>" in html
    assert "not indexed)" in html


def test_the_codebase_page_lists_each_version_with_its_files(alice_client, first):
    upload_again(first, V2)
    html = alice_client.get(reverse("rag:detail", args=[first.pk])).content.decode()
    assert "Versions (2)" in html
    assert "3 files changed: 1 added, 1 removed, 1 modified" in html
    assert '<details class="version-files" open>' in html  # short: open
    for label, path in (("added", "app/tax.py"), ("removed", "app/orders.py")):
        assert f"{label}</span> <code>{path}</code>" in html
    assert "modified</span> <code>app/billing.py</code>" in html
    assert "First upload." in html


def test_a_long_list_of_changed_files_is_folded(alice_client, first):
    many = {f"pkg/mod{n}.py": f"VALUE = {n}\n" for n in range(12)}
    upload_again(first, {**V1, **many})
    html = alice_client.get(reverse("rag:detail", args=[first.pk])).content.decode()
    assert "12 files changed: 12 added" in html
    assert '<details class="version-files">' in html


def test_the_migration_records_existing_code_as_version_1_without_changes(alice, first):
    CodebaseVersion.objects.all().delete()
    never_indexed = Codebase.objects.create(owner=alice, name="empty", status="failed")
    migration = importlib.import_module("rag.migrations.0004_codebase_versions")
    migration.record_current_versions(django_apps, None)
    (version,) = CodebaseVersion.objects.all()
    assert (version.codebase_id, version.number, version.kind) == (first.pk, 1, "recorded")
    assert version.file_count == 3 and version.touched_count == 0
    assert version.uploaded_at is not None  # the kept upload's time, read off the disk
    assert not never_indexed.versions.exists()
    # The next upload is compared with it.
    codebase = upload_again(first, V2)
    assert codebase.versions.first().changed == ["app/billing.py"]
