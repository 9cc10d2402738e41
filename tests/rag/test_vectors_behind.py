import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from rag import api, embeddings, services
from rag.indexing import index_codebase
from rag.models import Codebase
from rag.retrieval import retrieve_files

pytestmark = pytest.mark.django_db

PACK = {
    "shop/cart.py": "class Cart:\n    def total(self):\n        return sum(self.prices)\n",
    "shop/pay.py": "def charge(cart):\n    return cart.total()\n",
}


@pytest.fixture
def upload(alice, make_codebase):
    return make_codebase(alice, json.dumps({"files": PACK}).encode())


def test_a_codebase_opens_for_search_before_its_vectors_are_computed(upload, monkeypatch):
    seen = []
    # On the job's thread (the vectors themselves are computed on a thread of their own, which
    # does not share this test's database transaction).
    original = embeddings.embed_below

    def watching(texts, batch_size=32):
        if not seen:  # the first batch of chunk vectors: what could a user do right now?
            codebase = Codebase.objects.get(pk=upload.pk)
            seen.append((codebase.status, api.vector_counts(upload.pk)))
            seen.append([f.path for f in retrieve_files(codebase, "Cart total", 2)])
        return original(texts, batch_size)

    monkeypatch.setattr(embeddings, "embed_below", watching)
    index_codebase(upload.pk)
    assert seen[0] == ("ready", (0, 2))
    assert seen[1][0] == "shop/cart.py"  # found lexically, by symbol and path, meanwhile
    assert api.vector_counts(upload.pk) == (2, 2)


def test_an_embedding_crash_after_opening_leaves_it_searchable(alice_client, upload, monkeypatch):
    def boom(texts, batch_size=32):
        raise RuntimeError("the encoder fell over")

    monkeypatch.setattr(embeddings, "embed", boom)
    index_codebase(upload.pk)
    upload.refresh_from_db()
    assert upload.status == "ready"
    assert [f.path for f in retrieve_files(upload, "Cart total", 1)] == ["shop/cart.py"]
    html = alice_client.get(reverse("rag:detail", args=[upload.pk])).content.decode()
    assert '<b id="vectors-count">0 of 2</b>vectors' in html
    assert "Vectors: 0 of 2, still being computed" in html


def test_the_status_says_how_many_vectors_are_there(alice_client, upload):
    index_codebase(upload.pk)
    data = alice_client.get(reverse("rag:status", args=[upload.pk])).json()
    assert data["vectors"] == {"done": 2, "total": 2}
    html = alice_client.get(reverse("rag:detail", args=[upload.pk])).content.decode()
    assert '<b id="vectors-count">2 of 2</b>vectors' in html and "still being computed" not in html


def test_a_new_version_while_vectors_fill_in_stops_them_and_is_indexed_next(upload, monkeypatch):
    dispatched = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: dispatched.append(job))
    monkeypatch.setattr("rag.indexing.dispatch", lambda job, *ids: dispatched.append(job))
    original = embeddings.embed_below  # on the job's thread, as above
    calls = []

    def new_version_arrives(texts, batch_size=32):
        calls.append(len(texts))
        if len(calls) == 1:
            v2 = json.dumps({"files": {"shop/cart.py": "X = 2\n"}}).encode()
            codebase = Codebase.objects.get(pk=upload.pk)
            services.upload_new_version(codebase, [SimpleUploadedFile("v2.json", v2)])
        return original(texts, batch_size)

    monkeypatch.setattr(embeddings, "embed_below", new_version_arrives)
    monkeypatch.setattr(embeddings, "BATCH_SIZE", 1)
    monkeypatch.setattr("rag.api.embeddings.embed_many", _one_at_a_time(embeddings))
    index_codebase(upload.pk)
    upload.refresh_from_db()
    assert upload.status == "pending"  # the new version's, not the old "ready"
    assert calls == [1]  # the second vector of the old version was never computed
    # The new version's job met our lease and left; it is started again once we let go.
    assert [job.__name__ for job in dispatched] == ["index_codebase", "resume_indexing"]


def _one_at_a_time(module):
    original = module.embed_many

    def embed_many(texts, done=None, batch_size=32):
        return original(texts, done, batch_size=1)

    return embed_many


def test_a_new_version_shows_indexing_at_once(alice_client, upload, monkeypatch):
    index_codebase(upload.pk)
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: None)
    v2 = SimpleUploadedFile("v2.json", json.dumps({"files": {"a.py": "A = 1\n"}}).encode())
    response = alice_client.post(reverse("rag:new_version", args=[upload.pk]), {"pack": v2})
    html = alice_client.get(response["Location"]).content.decode()
    assert 'id="codebase-progress"' in html
    assert ">Ready</span>" not in html


def test_a_handle_waits_for_the_indexing_it_started(alice_client, upload, monkeypatch):
    index_codebase(upload.pk)
    started = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: started.append((job, ids)))
    v2 = SimpleUploadedFile("v2.json", json.dumps({"files": {"a.py": "A = 1\n"}}).encode())
    handle = services.upload_new_version(upload, [v2])
    assert not handle.done()
    with pytest.raises(TimeoutError):
        handle.wait(timeout=0)
    [(job, ids)] = started
    job(*ids)
    codebase = handle.wait(timeout=0, vectors=True)
    assert codebase.status == "ready" and codebase.file_count == 1


@pytest.mark.django_db(transaction=True)  # the awaited reads run on another thread's connection
def test_a_handle_can_be_awaited(upload):
    import asyncio

    index_codebase(upload.pk)
    codebase = asyncio.run(_awaited(services.IndexHandle(upload.pk)))
    assert codebase.pk == upload.pk and codebase.status == "ready"


async def _awaited(handle):
    return await handle


def test_a_handle_says_when_indexing_failed(alice, make_codebase):
    codebase = make_codebase(alice, b"not a pack at all")
    index_codebase(codebase.pk)
    with pytest.raises(services.IndexingFailed):
        services.IndexHandle(codebase.pk).wait(timeout=0)


def test_vectors_that_stopped_filling_in_are_resumed_when_someone_looks(
    alice_client, upload, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    from rag.indexing import stale_after

    def boom(texts, batch_size=32):
        raise RuntimeError("the encoder fell over")

    monkeypatch.setattr(embeddings, "embed", boom)
    index_codebase(upload.pk)
    monkeypatch.undo()
    resumed = []
    monkeypatch.setattr("rag.indexing.dispatch", lambda job, *ids: resumed.append((job, ids)))
    alice_client.get(reverse("rag:detail", args=[upload.pk]))
    assert resumed == []  # a lease period first: the job may still be on it
    long_ago = timezone.now() - stale_after() - timedelta(minutes=1)
    Codebase.objects.filter(pk=upload.pk).update(updated_at=long_ago)
    html = alice_client.get(reverse("rag:detail", args=[upload.pk])).content.decode()
    assert 'id="codebase-progress"' in html
    [(job, ids)] = resumed
    job(*ids)
    assert api.vector_counts(upload.pk) == (2, 2)
    Codebase.objects.filter(pk=upload.pk).update(updated_at=long_ago)
    alice_client.get(reverse("rag:detail", args=[upload.pk]))
    assert len(resumed) == 1  # complete now: nothing more to resume
