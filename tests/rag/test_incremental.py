"""Re-indexing a changed upload embeds only the chunks whose text changed."""

import json

import pytest

from rag import embeddings
from rag.indexing import index_codebase
from rag.retrieval import retrieve, retrieve_files

pytestmark = pytest.mark.django_db

V1 = {
    "app/users.py": "def create_user(name):\n    return {'name': name}\n",
    "app/orders.py": "def place_order(user, item):\n    return {'user': user, 'item': item}\n",
    "app/billing.py": "def invoice(order):\n    return {'order': order, 'paid': False}\n",
}
V2 = {**V1, "app/billing.py": "def invoice(order, tax=0.2):\n    return {'order': order}\n"}


def write_upload(codebase, files, settings):
    folder = settings.DATA_DIR / codebase.upload_path
    for part in folder.iterdir():
        part.unlink()
    (folder / "001-pack.json").write_text(json.dumps({"files": files}))


@pytest.fixture
def counting(monkeypatch):
    seen: list[str] = []
    real = embeddings.embed

    def embed(texts, batch_size=32):
        seen.extend(texts)
        return real(texts, batch_size)

    monkeypatch.setattr(embeddings, "embed", embed)
    return seen


def test_a_reindex_embeds_only_changed_chunks(alice, make_codebase, settings, counting):
    codebase = make_codebase(alice, json.dumps({"files": V1}).encode())
    index_codebase(codebase.pk)
    assert len(counting) == 3
    counting.clear()
    write_upload(codebase, V2, settings)
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready"
    assert len(counting) == 1 and "tax=0.2" in counting[0]


def test_an_incremental_index_equals_a_full_rebuild(alice, make_codebase, settings):
    codebase = make_codebase(alice, json.dumps({"files": V1}).encode())
    index_codebase(codebase.pk)
    write_upload(codebase, V2, settings)
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    fresh = make_codebase(alice, json.dumps({"files": V2}).encode(), name="fresh")
    index_codebase(fresh.pk)
    fresh.refresh_from_db()
    for query in ("invoice tax", "create a user", "place an order for an item"):
        assert retrieve(codebase, query, k=3) == retrieve(fresh, query, k=3)
        assert retrieve_files(codebase, query, k=3) == retrieve_files(fresh, query, k=3)
