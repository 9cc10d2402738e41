from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from rag.indexing import index_codebase
from rag.models import Codebase

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "repomix"


@pytest.fixture(autouse=True)
def rag_settings(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.PLANAGENTS_INDEX_DIR = tmp_path / "data" / "indexes"
    settings.DATA_DIR.mkdir()
    return settings


def _pack_bytes(name: str = "sample.xml") -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.fixture
def pack_bytes():
    """Bytes of a fixture pack in tests/fixtures/repomix/, by file name."""
    return _pack_bytes


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="wonderland-123")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="builder-123")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


def _make_codebase(owner, data: bytes, settings, name: str = "sample") -> Codebase:
    codebase = Codebase.objects.create(owner=owner, name=name)
    folder = Path("uploads") / str(codebase.pk)
    (settings.DATA_DIR / folder).mkdir(parents=True)
    (settings.DATA_DIR / folder / "001-pack").write_bytes(data)
    codebase.upload_path = folder.as_posix()
    codebase.save()
    return codebase


@pytest.fixture
def make_codebase(rag_settings):
    """Make a pending codebase whose upload is on disk, as the upload service leaves it."""

    def make(owner, data: bytes, name: str = "sample") -> Codebase:
        return _make_codebase(owner, data, rag_settings, name)

    return make


@pytest.fixture
def indexed(alice, make_codebase) -> Codebase:
    codebase = make_codebase(alice, _pack_bytes())
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == Codebase.Status.READY, codebase.error
    return codebase
