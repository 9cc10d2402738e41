import hashlib
import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone

from planagents import leases
from planagents.models import JobLease
from rag import indexing
from rag.indexing import index_codebase
from rag.models import Codebase, CodeFile

pytestmark = pytest.mark.django_db


def test_it_indexes_the_sample_pack(indexed, settings):
    assert indexed.status == "ready"
    assert indexed.progress == 100
    assert indexed.source_format == "repomix-xml"
    assert indexed.file_count == 10 == indexed.files.count()
    assert indexed.chunk_count == indexed.chunks.count() > 10
    assert indexed.languages["python"] == 6
    assert indexed.embedding_model == "all-MiniLM-L6-v2"
    assert len(indexed.content_hash) == 64
    assert (settings.PLANAGENTS_INDEX_DIR / str(indexed.pk) / "dense.faiss").exists()
    assert (settings.PLANAGENTS_INDEX_DIR / str(indexed.pk) / "lexical.json").exists()


def test_it_stores_file_facts(indexed):
    api = indexed.files.get(path="todo/api.py")
    assert api.language == "python" and api.role == "source"
    assert api.sha256 == hashlib.sha256(api.content.encode()).hexdigest()
    assert api.size == len(api.content.encode())
    assert api.line_count == api.content.count("\n") + 1
    assert indexed.files.get(path="tests/test_api.py").role == "test"


def test_it_numbers_chunks_as_rows_of_the_index(indexed):
    ordinals = list(indexed.chunks.values_list("ordinal", flat=True))
    assert ordinals == list(range(indexed.chunk_count))
    chunk = next(c for c in indexed.chunks.all() if "check_password" in c.symbols)
    lines = chunk.file.content.split("\n")
    assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_it_rebuilds_cleanly_when_run_again(indexed):
    first = sorted(indexed.chunks.values_list("file__path", "start_line", "end_line"))
    index_codebase(indexed.pk)
    indexed.refresh_from_db()
    assert indexed.status == "ready"
    assert CodeFile.objects.filter(codebase=indexed).count() == 10
    assert sorted(indexed.chunks.values_list("file__path", "start_line", "end_line")) == first


def test_equal_packs_get_equal_content_hashes(indexed, alice, make_codebase, pack_bytes):
    other = make_codebase(alice, pack_bytes("sample.json"))
    index_codebase(other.pk)
    other.refresh_from_db()
    assert other.source_format == "repomix-json"
    assert other.content_hash == indexed.content_hash


def test_it_fails_with_the_parsers_message(alice, make_codebase):
    codebase = make_codebase(alice, b"just some notes, no files here")
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "failed"
    assert "Expected a Repomix pack" in codebase.error


def test_it_fails_clearly_when_the_upload_is_gone(alice, make_codebase, settings):
    codebase = make_codebase(alice, b"x")
    for part in (settings.DATA_DIR / codebase.upload_path).iterdir():
        part.unlink()
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "failed"
    assert "gone" in codebase.error


def test_it_never_leaves_a_codebase_indexing_after_a_crash(
    alice, make_codebase, pack_bytes, monkeypatch, caplog
):
    def boom(*args, **kwargs):
        raise TypeError("'NoneType' object is not subscriptable")

    # Before the codebase opens (an embedding crash after it is in test_vectors_behind.py).
    monkeypatch.setattr("rag.index.write_lexical", boom)
    codebase = make_codebase(alice, pack_bytes())
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "failed"
    # The uploader reads what to do; the traceback goes to the log.
    assert codebase.error == indexing.UNEXPECTED
    assert "TypeError" not in codebase.error and "NoneType" not in codebase.error
    assert "NoneType" in caplog.text and f"indexing codebase {codebase.pk} failed" in caplog.text


def test_a_recursion_error_becomes_words_not_a_traceback(alice, make_codebase, monkeypatch):
    def deep(path, content):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("rag.pipeline.role_for", deep)
    codebase = make_codebase(alice, b'{"files": {"a.py": "x = 1"}}')
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "failed"
    assert codebase.error == indexing.TOO_DEEP
    assert "maximum recursion" not in codebase.error


def test_it_leaves_a_codebase_another_worker_is_indexing(alice, make_codebase, pack_bytes):
    codebase = make_codebase(alice, pack_bytes())
    Codebase.objects.filter(pk=codebase.pk).update(status="indexing", updated_at=timezone.now())
    assert leases.acquire(indexing.lease_name(codebase.pk), "another worker", 60)
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "indexing"
    assert codebase.files.count() == 0


def test_it_takes_over_a_codebase_a_crashed_worker_left_indexing(alice, make_codebase, pack_bytes):
    codebase = make_codebase(alice, pack_bytes())
    long_ago = timezone.now() - timedelta(hours=1)
    Codebase.objects.filter(pk=codebase.pk).update(status="indexing", updated_at=long_ago)
    assert leases.acquire(indexing.lease_name(codebase.pk), "a crashed worker", 60)
    JobLease.objects.filter(name=indexing.lease_name(codebase.pk)).update(expires_at=long_ago)
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready"
    assert not leases.is_live(indexing.lease_name(codebase.pk))  # released when done


def test_it_merges_split_output_parts(alice, make_codebase, settings):
    codebase = make_codebase(alice, b'{"files": {"a.py": "A = 1", "b.py": "B = 1"}}')
    folder = settings.DATA_DIR / codebase.upload_path
    (folder / "002-part2.json").write_bytes(b'{"files": {"b.py": "B = 2", "c.py": "C = 3"}}')
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    contents = dict(codebase.files.values_list("path", "content"))
    assert contents == {"a.py": "A = 1", "b.py": "B = 2", "c.py": "C = 3"}


def test_it_reports_progress_stages_in_order(alice, make_codebase, pack_bytes, monkeypatch):
    seen = []
    original = indexing._progress

    def record(codebase_id, percent, stage):
        seen.append((percent, stage))
        original(codebase_id, percent, stage)

    monkeypatch.setattr(indexing, "_progress", record)
    codebase = make_codebase(alice, pack_bytes())
    index_codebase(codebase.pk)
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)
    # Vectors are computed after the codebase opens (tests/rag/test_vectors_behind.py).
    assert list(dict.fromkeys(stage for _, stage in seen)) == ["chunking", "indexing"]
    assert (10, "chunking") in seen and (90, "indexing") in seen
    codebase.refresh_from_db()
    assert (codebase.progress, codebase.progress_stage) == (100, "ready")


def test_it_keeps_what_the_uploader_should_know(alice, make_codebase):
    long_path = "/".join(["folder"] * 150) + "/deep.py"  # 1,057 characters: no row holds it
    pack = json.dumps({"files": {"a.py": "A = 1", long_path: "B = 2"}}).encode()
    codebase = make_codebase(alice, pack)
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    assert list(codebase.files.values_list("path", flat=True)) == ["a.py"]
    (warning,) = codebase.warnings
    assert warning.startswith("Left out 1 file(s) whose path") and "folder/folder/" in warning


def test_a_zip_seventy_folders_deep_indexes_and_opens(alice_client, alice, make_codebase):
    deep = "/".join(f"d{n}" for n in range(70)) + "/leaf.py"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(f"repo/{deep}", "def leaf():\n    return 1\n")
        zf.writestr("repo/main.py", "print(1)\n")
    codebase = make_codebase(alice, buffer.getvalue())
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    page = alice_client.get(f"/codebases/{codebase.pk}/?folder=" + deep.rsplit("/", 1)[0])
    assert page.status_code == 200 and "leaf.py" in page.content.decode()
    assert alice_client.get(f"/codebases/{codebase.pk}/file/{deep}").status_code == 200


def test_a_later_index_forgets_the_earlier_warnings(alice, make_codebase, settings):
    codebase = make_codebase(alice, b'{"files": {"a.py": "A = 1"}}')
    Codebase.objects.filter(pk=codebase.pk).update(warnings=["about an older version"])
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.warnings == []
