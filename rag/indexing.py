"""The indexing job: raw upload → files, chunks, vectors and search indexes.

Stages and their share of the progress bar: parsing 0–10, chunking and the lexical index
10–90, storing the rows 90–100. The codebase is ready (searchable lexically, by symbol and by
path) as soon as the rows are stored; its vectors are computed after that, in blocks written
as they are done, and the ranking uses those there are (the page shows "vectors: k of n"). The job is safe to run twice: it holds the codebase's lease while it works
(planagents.leases, renewed from a thread that also beats `updated_at`), so a second copy
leaves at once; it builds everything new outside the database and swaps the old files and
chunks for the new ones in one transaction that checks nobody changed the codebase meanwhile.

A job that dies (a restart, a killed worker) stops renewing its lease. `resume_if_stalled`
sends such a codebase to a new job (`resume_indexing`) once the lease has run out and nothing
has moved for as long: the codebase page calls it when it looks (the embedded default has no
other process to notice), and every Celery worker's sweep calls `recover_stalled_indexing`.
A job the shutdown cut is parked (`park_indexing`): the next start's sweep resumes it at once.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from planagents import leases, shutdown
from planagents.jobs import dispatch
from rag import api, embeddings, index, pipeline, profile, versions
from rag.models import Chunk, Codebase, CodeFile
from rag.parsers import PackError, ParseResult, parse_upload
from rag.pipeline import FileRecord

log = logging.getLogger(__name__)

Status = Codebase.Status
UNFINISHED = (Status.PENDING, Status.INDEXING)
UNEXPECTED = (
    "Indexing stopped on an error on our side, not in your upload; it was logged for the "
    "maintainers. Press “Index again”; if it fails again, upload a new version."
)
TOO_DEEP = (
    "Indexing stopped: something in the upload is nested too deeply to read (a document or "
    "folders hundreds of levels deep). Upload a new version without it."
)
TOO_BIG = (
    "Indexing ran out of memory on this upload. Pack fewer files (Repomix --include / "
    "--ignore) and upload a new version."
)


def lease_name(codebase_id: int) -> str:
    return f"codebase:{codebase_id}"


def stale_after() -> timedelta:
    """How long an unfinished codebase may go without a sign of life before it is resumed:
    one lease period, three missed renewals."""
    return timedelta(seconds=settings.PLANAGENTS_JOB_LEASE_SECONDS)


def index_codebase(codebase_id: int) -> None:
    """Build (or rebuild) a codebase's files, chunks and indexes, ending ready or failed."""
    _run(codebase_id, Codebase.objects.filter(pk=codebase_id))


def resume_indexing(codebase_id: int) -> None:
    """The job `resume_if_stalled` dispatches: index the codebase only if it still waits.
    The sweep cannot tell a job that died from one still queued behind others; when it was
    the latter, this copy finds the codebase ready and leaves it be."""
    _run(codebase_id, Codebase.objects.filter(pk=codebase_id, status__in=UNFINISHED))


def _run(codebase_id: int, claimable: QuerySet[Codebase]) -> None:
    try:
        with leases.held(lease_name(codebase_id), on_renew=lambda: _beat(codebase_id)):
            if not _claim(claimable):
                log.info("codebase %s is gone or indexed already; skipping", codebase_id)
                return
            try:
                _index(codebase_id)
            finally:
                _remove_if_deleted(codebase_id)
    except leases.LeaseHeld:
        log.info("codebase %s is being indexed by another job; skipping", codebase_id)
        return
    # A new version that came while we filled in vectors found our lease and left: its job
    # is ours to start, now that the lease is free.
    if Codebase.objects.filter(pk=codebase_id, status=Status.PENDING).exists():
        dispatch(resume_indexing, codebase_id)


def park_indexing(codebase_id: int) -> None:
    """Leave a codebase whose job a stopping server cut (planagents.jobs.PARKERS, once its
    lease is released) for the next start: its heartbeat is set back past a lease period, so
    the sweep there (recover_stalled_indexing) dispatches it again at once, and the page
    resumes a ready one whose vectors stopped. A lease another job took meanwhile keeps the
    codebase that job's."""
    if leases.is_live(lease_name(codebase_id)):
        return
    long_ago = timezone.now() - stale_after() - timedelta(seconds=1)
    if Codebase.objects.filter(pk=codebase_id, status__in=(*UNFINISHED, Status.READY)).update(
        updated_at=long_ago
    ):
        log.warning("codebase %s parked: its indexing resumes at the next start", codebase_id)


def _remove_if_deleted(codebase_id: int) -> None:
    """A codebase deleted while its job ran lost its folder to the delete, but the job kept
    writing and made it again: once the job stops writing, take it away for good."""
    if not Codebase.objects.filter(pk=codebase_id).exists():
        index.delete(codebase_id)


def remove_orphan_indexes() -> list[int]:
    """Remove the index folders of codebases that no longer exist (deleted while a job that
    died before its clean-up was writing); the ids removed. Folders are listed before the
    database is asked, and a folder is only ever made for a codebase already stored, so a
    codebase being created now is never taken for an orphan."""
    root = Path(settings.PLANAGENTS_INDEX_DIR)
    if not root.is_dir():
        return []
    found = {
        int(p.name) for p in root.iterdir() if p.is_dir() and p.name.isascii() and p.name.isdigit()
    }
    kept = set(Codebase.objects.filter(pk__in=found).values_list("pk", flat=True))
    orphans = sorted(found - kept)
    for codebase_id in orphans:
        index.delete(codebase_id)
    if orphans:
        log.info("removed the index folders of %d deleted codebase(s)", len(orphans))
    return orphans


def _index(codebase_id: int) -> None:
    try:
        _build(codebase_id)
    except Superseded:
        log.info(
            "codebase %s changed (a new version, a delete) while indexing; stopped", codebase_id
        )
    except PackError as exc:
        _fail(codebase_id, exc.message)
    except RecursionError:
        log.exception("indexing codebase %s recursed too deep", codebase_id)
        _fail(codebase_id, TOO_DEEP)
    except MemoryError:
        log.exception("indexing codebase %s ran out of memory", codebase_id)
        _fail(codebase_id, TOO_BIG)
    except Exception:
        if not Codebase.objects.filter(pk=codebase_id).exists():
            # Deleted under us (its rows could no longer be stored): nothing failed.
            log.info("codebase %s was deleted while indexing; stopped", codebase_id)
            return
        # The details are for the log: an exception's text is no message for an uploader.
        log.exception("indexing codebase %s failed", codebase_id)
        _fail(codebase_id, UNEXPECTED)


def _claim(claimable: QuerySet[Codebase]) -> bool:
    """Move the codebase to indexing. We hold its lease, so no other job is on it: one that
    left it "indexing" is gone."""
    fields = {"status": Status.INDEXING, "progress": 0, "progress_stage": "parsing", "error": ""}
    return claimable.update(**fields, warnings=[], updated_at=timezone.now()) == 1


def _beat(codebase_id: int) -> None:
    Codebase.objects.filter(pk=codebase_id, status=Status.INDEXING).update(
        updated_at=timezone.now()
    )


def _progress(codebase_id: int, percent: int, stage: str) -> None:
    """Record progress; Superseded when the codebase is no longer ours to index (deleted, or
    a new version took it over), so the job stops instead of writing a folder for nobody."""
    fields = {"progress": max(0, min(100, percent)), "progress_stage": stage}
    if not shutdown.stopping():  # a parked job (park_indexing) must not look alive again
        fields["updated_at"] = timezone.now()
    moved = Codebase.objects.filter(pk=codebase_id, status=Status.INDEXING).update(**fields)
    if not moved:
        raise Superseded()


def _fail(codebase_id: int, message: str) -> None:
    Codebase.objects.filter(pk=codebase_id, status=Status.INDEXING).update(
        status=Status.FAILED, error=message, progress_stage="failed", updated_at=timezone.now()
    )


def is_stalled(codebase: Codebase) -> bool:
    """Whether the codebase waits for a job that is gone (nothing moved for a lease period and
    nobody holds its lease)."""
    return (
        codebase.status in UNFINISHED
        and codebase.updated_at < timezone.now() - stale_after()
        and not leases.is_live(lease_name(codebase.pk))
    )


def resume_if_stalled(codebase_id: int) -> bool:
    """Send a codebase whose indexing job died to a new job; True when this call did.

    Several callers may race (page polls, sweeps on every worker): the compare-and-swap on
    `updated_at` lets one of them through per lease period, and a job that finds the
    codebase already claimed leaves it alone."""
    if leases.is_live(lease_name(codebase_id)):
        return False
    now = timezone.now()
    with transaction.atomic():
        moved = Codebase.objects.filter(
            pk=codebase_id, status__in=UNFINISHED, updated_at__lt=now - stale_after()
        ).update(status=Status.PENDING, progress=0, progress_stage="", updated_at=now)
        if moved:
            log.warning("codebase %s: its indexing job died; dispatched it again", codebase_id)
            dispatch(resume_indexing, codebase_id)
    return bool(moved)


def resume_vectors_if_stalled(codebase: Codebase) -> bool:
    """Index a ready codebase again when its vectors stopped filling in (the job died, or the
    encoder failed after the codebase opened) and nothing has moved for a lease period; True
    when this call did. The vectors computed so far are kept and reused."""
    if codebase.status != Status.READY or codebase.updated_at >= timezone.now() - stale_after():
        return False
    done, total = api.vector_counts(codebase.pk)
    if done >= total or leases.is_live(lease_name(codebase.pk)):
        return False
    with transaction.atomic():
        moved = Codebase.objects.filter(
            pk=codebase.pk, status=Status.READY, updated_at=codebase.updated_at
        ).update(status=Status.PENDING, progress=0, progress_stage="", updated_at=timezone.now())
        if moved:
            log.warning("codebase %s: its vectors stopped at %d of %d", codebase.pk, done, total)
            dispatch(index_codebase, codebase.pk)
    return bool(moved)


def recover_stalled_indexing() -> list[int]:
    """Dispatch again every codebase whose indexing job died; the ids it dispatched. The
    folders such jobs left for deleted codebases go too (remove_orphan_indexes)."""
    remove_orphan_indexes()
    cutoff = timezone.now() - stale_after()
    candidates = Codebase.objects.filter(status__in=UNFINISHED, updated_at__lt=cutoff)
    return [pk for pk in candidates.values_list("pk", flat=True) if resume_if_stalled(pk)]


def read_upload(codebase: Codebase) -> ParseResult:
    """Parse the kept upload: one pack, several parts (Repomix --split-output), or a zip."""
    if not codebase.upload_path:
        raise PackError("Expected an uploaded pack but this codebase has none on record.")
    root = Path(settings.DATA_DIR) / codebase.upload_path
    parts = sorted(p for p in root.iterdir() if p.is_file()) if root.is_dir() else [root]
    if not parts or not all(p.exists() for p in parts):
        raise PackError(f"Expected the uploaded pack at {codebase.upload_path} but it is gone.")
    # Parts are kept as "001-<uploaded name>"; messages name the part as it was uploaded.
    return parse_upload([(p.name.partition("-")[2] or p.name, p.read_bytes()) for p in parts])


def _build(codebase_id: int) -> None:
    codebase = Codebase.objects.get(pk=codebase_id)
    parsed = read_upload(codebase)
    _progress(codebase_id, 10, "chunking")
    known = (
        index.load_vectors(codebase_id)
        if codebase.embedding_model == embeddings.model_name()
        else {}
    )

    opened: list[str] = []  # the upload digest the rows were stored for, once they are

    def report(done: int, total: int) -> None:
        if opened:
            # The codebase is open; vectors fill in behind. Stop when a new version (or a
            # delete) took it over: its job waits for our lease.
            if not Codebase.objects.filter(
                pk=codebase_id, status=Status.READY, upload_sha256=opened[0]
            ).exists():
                raise Superseded()
        else:
            _progress(codebase_id, 20 + 70 * done // max(total, 1), "embedding")

    def open_codebase(built: api.Built) -> None:
        """The lexical index is written: store the rows and open the codebase for search.
        Vectors keep coming; the ranking uses those there are (rag.api.vector_counts)."""
        _progress(codebase_id, 90, "indexing")
        profile.build_into(index.index_dir(codebase_id), built.records)
        if not _store(codebase_id, parsed, built.records):
            raise Superseded()
        opened.append(codebase.upload_sha256)
        if any(r.chunks for r in pipeline.searchable(built.records)):
            # Each file was parsed once, for its chunks and the profile; the vectors still to
            # come need neither (on astropy the parses held 66 -> 147 MB through embedding).
            for record in built.records:
                record.symbols = None

    # rag.api does roles (with the uploader's overrides), chunks, a vector for every source
    # chunk, BM25 and the code map: the same code the retrieval benches measure. The lexical
    # side is written first and the codebase opens then (open_codebase); the vectors follow.
    # Withheld files are stored (so the page can say so) but never searched.
    built = api.index_files(
        parsed.files,
        index.index_dir(codebase_id),
        role_overrides=codebase.role_overrides or None,
        known=known,
        progress=report,
        keep_text=False,
        vectors_behind=True,
        on_lexical=open_codebase,
    )
    log.info(
        "codebase %s: %d vectors, %d computed",
        codebase_id,
        len(built.dense_ordinals),
        built.computed,
    )
    if not any(r.chunks for r in pipeline.searchable(built.records)):
        index.delete(codebase_id)
        profile.build_into(index.index_dir(codebase_id), built.records)


class Superseded(Exception):
    """The codebase changed while its vectors were filling in (a new version, a delete)."""


def _store(codebase_id: int, parsed: ParseResult, files: list[FileRecord]) -> bool:
    """Store the rows and mark the codebase ready; False (nothing stored) when it is no longer
    being indexed by us."""
    with transaction.atomic():
        old = dict(CodeFile.objects.filter(codebase_id=codebase_id).values_list("path", "sha256"))
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
                    withheld_reason=f.withheld_reason[:200],
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
        now = timezone.now()
        done = Codebase.objects.filter(pk=codebase_id, status=Status.INDEXING).update(
            status=Status.READY,
            source_format=parsed.style,
            warnings=parsed.warnings,
            progress=100,
            progress_stage="ready",
            error="",
            file_count=len(files),
            chunk_count=len(chunks),
            total_bytes=sum(f.size for f in files),
            languages=dict(Counter(f.language or "other" for f in files).most_common()),
            content_hash=digest.hexdigest(),
            embedding_model=embeddings.model_name(),
            updated_at=now,
        )
        if done == 1:
            kept = Codebase.objects.values("upload_sha256", "uploaded_at").get(pk=codebase_id)
            versions.record(
                codebase_id,
                old,
                ((f.path, f.sha256) for f in files),
                upload_sha256=kept["upload_sha256"],
                content_hash=digest.hexdigest(),
                uploaded_at=kept["uploaded_at"],
                indexed_at=now,
            )
        if done != 1:
            # Someone else changed the codebase meanwhile (deleted it, or a stale takeover):
            # keep their state rather than ours.
            transaction.set_rollback(True)
    return done == 1
