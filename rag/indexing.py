"""The indexing job: raw upload → files, chunks, vectors and search indexes.

Stages and their share of the progress bar: parsing 0–10, chunking 10–20, embedding 20–90,
indexing 90–100. The job is safe to run twice: it claims the codebase with a compare-and-swap,
builds everything new outside the database, and swaps the old files and chunks for the new
ones in one transaction.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rag import embeddings, index, pipeline
from rag.models import Chunk, Codebase, CodeFile
from rag.parsers.archive import is_zip, read_zip
from rag.parsers.repomix import PackError, ParsedFile, parse_repomix, sniff
from rag.pipeline import FileRecord

log = logging.getLogger(__name__)

Status = Codebase.Status
STALE_AFTER = timedelta(minutes=10)
"""An "indexing" codebase untouched this long was left by a crashed worker; take it over."""


def index_codebase(codebase_id: int) -> None:
    """Build (or rebuild) a codebase's files, chunks and indexes, ending ready or failed."""
    if not _claim(codebase_id):
        log.info("codebase %s is missing or being indexed elsewhere; skipping", codebase_id)
        return
    try:
        _build(codebase_id)
    except PackError as exc:
        _fail(codebase_id, exc.message)
    except Exception as exc:
        log.exception("indexing codebase %s failed", codebase_id)
        _fail(codebase_id, f"Indexing failed unexpectedly ({type(exc).__name__}: {exc}).")


def _claim(codebase_id: int) -> bool:
    now = timezone.now()
    fields = {"status": Status.INDEXING, "progress": 0, "progress_stage": "parsing", "error": ""}
    claimable = Codebase.objects.filter(pk=codebase_id)
    if claimable.exclude(status=Status.INDEXING).update(**fields, updated_at=now):
        return True
    stale = claimable.filter(status=Status.INDEXING, updated_at__lt=now - STALE_AFTER)
    return stale.update(**fields, updated_at=now) == 1


def _progress(codebase_id: int, percent: int, stage: str) -> None:
    Codebase.objects.filter(pk=codebase_id, status=Status.INDEXING).update(
        progress=max(0, min(100, percent)), progress_stage=stage, updated_at=timezone.now()
    )


def _fail(codebase_id: int, message: str) -> None:
    Codebase.objects.filter(pk=codebase_id, status=Status.INDEXING).update(
        status=Status.FAILED, error=message, progress_stage="failed", updated_at=timezone.now()
    )


def read_upload(codebase: Codebase) -> tuple[str, list[ParsedFile]]:
    """Parse the raw upload: one pack, or several parts (e.g. Repomix --split-output)."""
    if not codebase.upload_path:
        raise PackError("Expected an uploaded pack but this codebase has none on record.")
    root = Path(settings.DATA_DIR) / codebase.upload_path
    parts = sorted(p for p in root.iterdir() if p.is_file()) if root.is_dir() else [root]
    if not parts or not all(p.exists() for p in parts):
        raise PackError(f"Expected the uploaded pack at {codebase.upload_path} but it is gone.")
    style = ""
    merged: dict[str, ParsedFile] = {}
    for part in parts:
        data = part.read_bytes()
        if is_zip(data):
            style = style or "zip"
            files = read_zip(data).files
        else:
            style = style or sniff(data)
            files = parse_repomix(data)
        for parsed in files:
            merged.pop(parsed.path, None)
            merged[parsed.path] = parsed
    return style, list(merged.values())


def _build(codebase_id: int) -> None:
    codebase = Codebase.objects.get(pk=codebase_id)
    style, parsed = read_upload(codebase)
    _progress(codebase_id, 10, "chunking")
    records = pipeline.prepare(parsed)
    dense = pipeline.chunk_texts(records)
    _progress(codebase_id, 20, "embedding")

    known = (
        index.load_vectors(codebase_id)
        if codebase.embedding_model == embeddings.model_name()
        else {}
    )

    def report(done: int, total: int) -> None:
        _progress(codebase_id, 20 + 70 * done // max(total, 1), "embedding")

    vectors, computed = pipeline.embed_texts([t for _, t in dense], known, report)
    log.info("codebase %s: %d vectors, %d computed", codebase_id, len(dense), computed)
    _progress(codebase_id, 90, "indexing")

    if any(r.chunks for r in records):
        index.write_dense(codebase_id, vectors)
        index.write_lexical(codebase_id, pipeline.lexical_documents(records))
        index.write_lexical(codebase_id, pipeline.file_documents(records), index.FILES_POINTER)
        index.write_map(codebase_id, pipeline.code_map(records, [o for o, _ in dense]).to_json())
        index.write_vectors(codebase_id, [pipeline.text_key(t) for _, t in dense], vectors)
    else:
        index.delete(codebase_id)
    _store(codebase_id, style, records)


def _store(codebase_id: int, style: str, files: list[FileRecord]) -> None:
    with transaction.atomic():
        CodeFile.objects.filter(codebase_id=codebase_id).delete()  # cascades to chunks
        rows = CodeFile.objects.bulk_create(
            [
                CodeFile(
                    codebase_id=codebase_id,
                    path=f.path,
                    language=f.language,
                    role=f.role,
                    size=f.size,
                    line_count=f.line_count,
                    sha256=f.sha256,
                    content=f.content,
                )
                for f in files
            ],
            batch_size=500,
        )
        chunks: list[Chunk] = []
        for row, f in zip(rows, files, strict=True):
            for c in f.chunks:
                chunks.append(
                    Chunk(
                        codebase_id=codebase_id,
                        file=row,
                        ordinal=len(chunks),
                        start_line=c.start_line,
                        end_line=c.end_line,
                        symbols=c.symbols,
                        text=c.text,
                    )
                )
        Chunk.objects.bulk_create(chunks, batch_size=500)
        digest = hashlib.sha256()
        for path, sha in sorted((f.path, f.sha256) for f in files):
            digest.update(f"{path}\0{sha}\n".encode("utf-8", "surrogatepass"))
        done = Codebase.objects.filter(pk=codebase_id, status=Status.INDEXING).update(
            status=Status.READY,
            source_format=style,
            progress=100,
            progress_stage="ready",
            error="",
            file_count=len(files),
            chunk_count=len(chunks),
            total_bytes=sum(f.size for f in files),
            languages=dict(Counter(f.language or "other" for f in files).most_common()),
            content_hash=digest.hexdigest(),
            embedding_model=embeddings.model_name(),
            updated_at=timezone.now(),
        )
        if done != 1:
            # Someone else changed the codebase meanwhile (deleted it, or a stale takeover):
            # keep their state rather than ours.
            transaction.set_rollback(True)
