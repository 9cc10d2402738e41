"""A codebase deleted while it is being indexed leaves nothing on disk, and folders left by a
job that died before it could clean up are swept away."""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag import embeddings, index, indexing
from rag.indexing import index_codebase, remove_orphan_indexes
from rag.models import Codebase
from rag.services import create_codebase_from_upload
from tests.conftest import FIXTURES

# transaction=True: the delete commits at once, so its on-commit clean-up runs in the middle
# of the job, as it does when another request deletes the codebase.
pytestmark = pytest.mark.django_db(transaction=True)

STAGES = ("chunking", "writing", "indexing", "vectors")
"""Where the delete lands: after parsing, between two files of the lexical index (the job
writes the next one into a folder the delete just removed), as the rows are about to be stored,
and while the vectors fill in behind an open codebase."""


def folders(settings) -> list[str]:
    root = Path(settings.PLANAGENTS_INDEX_DIR)
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def uploads(settings) -> list[str]:
    root = Path(settings.DATA_DIR) / "uploads"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


@pytest.fixture
def uploaded(user, monkeypatch):
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: None)
    pack = (FIXTURES / "repomix/sample.xml").read_bytes()

    def _uploaded(n: int) -> Codebase:
        upload = SimpleUploadedFile("sample.xml", pack)
        return create_codebase_from_upload(user, f"sample {n}", [upload], allow_duplicate=True)

    return _uploaded


@pytest.fixture
def delete_at(monkeypatch):
    """Delete the codebase being indexed when the job reaches `stage`."""
    target: dict[str, int | str] = {}
    real_progress, real_embed_many = indexing._progress, embeddings.embed_many
    real_write_lexical = index.write_lexical

    def delete_if(stage: str) -> None:
        if target.get("stage") == stage:
            Codebase.objects.filter(pk=target["pk"]).delete()
            target.clear()

    def progress(codebase_id: int, percent: int, stage: str) -> None:
        delete_if(stage)
        real_progress(codebase_id, percent, stage)

    def embed_many(*args, **kwargs):
        delete_if("vectors")
        return real_embed_many(*args, **kwargs)

    def write_lexical(*args, **kwargs):
        real_write_lexical(*args, **kwargs)
        delete_if("writing")

    monkeypatch.setattr(index, "write_lexical", write_lexical)
    monkeypatch.setattr(indexing, "_progress", progress)
    monkeypatch.setattr(embeddings, "embed_many", embed_many)

    def _delete_at(codebase: Codebase, stage: str) -> None:
        target.update(pk=codebase.pk, stage=stage)

    return _delete_at


def test_ten_codebases_deleted_mid_index_leave_no_index_or_upload_folder(
    uploaded, delete_at, settings, caplog
):
    for n in range(10):
        codebase = uploaded(n)
        delete_at(codebase, STAGES[n % len(STAGES)])
        index_codebase(codebase.pk)
        assert not Codebase.objects.filter(pk=codebase.pk).exists()

    assert folders(settings) == []
    assert uploads(settings) == []
    # A delete is not a failure: no traceback for the maintainers to chase.
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


def test_the_sweep_removes_folders_of_codebases_that_are_gone_and_keeps_the_rest(
    uploaded, settings
):
    kept = uploaded(1)
    index_codebase(kept.pk)
    root = Path(settings.PLANAGENTS_INDEX_DIR)
    (root / "999999").mkdir(parents=True)
    (root / "999999" / "dense.faiss").write_bytes(b"left by a job that died")
    (root / "not-a-codebase").mkdir()

    assert remove_orphan_indexes() == [999999]
    assert folders(settings) == sorted([str(kept.pk), "not-a-codebase"])


def test_the_recovery_sweep_removes_orphan_folders_too(settings):
    orphan = Path(settings.PLANAGENTS_INDEX_DIR) / "424242"
    orphan.mkdir(parents=True)

    indexing.recover_stalled_indexing()

    assert not orphan.exists()
