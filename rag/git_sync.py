"""Codebases from git: add one from a URL and a ref, sync it, and the job that fetches.

The job (`fetch_codebase`, dispatched through planagents.jobs like indexing) fetches the
commit (rag.git_source), keeps the zip of its tree as the codebase's upload, exactly where an
uploaded zip is kept, and runs the indexing job on it: from there a git codebase is a zip
codebase, so a sync makes a new CodebaseVersion and plans resting on changed code go stale.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User as AuthUser
from django.db import transaction
from django.utils import timezone

from planagents import leases
from planagents.jobs import dispatch
from rag import git_source, indexing
from rag.indexing import index_codebase
from rag.models import Codebase, CodebaseVersion
from rag.services import IndexHandle, IndexingBusy, UploadError, _distinct_name, upload_digest

log = logging.getLogger(__name__)

Status = Codebase.Status
FETCHING = "fetching from git"


def add_from_git(owner: AuthUser, name: str, source: git_source.Source) -> Codebase:
    """Create the codebase for `source` (checked by git_source.check_source) and queue the
    fetch; `IndexHandle(codebase.pk)` waits for the fetch and the indexing after it."""
    with transaction.atomic():
        codebase = Codebase.objects.create(
            owner=owner,
            name=_distinct_name(owner, name.strip() or source.name),
            git_url=source.url,
            git_ref=source.ref,
            progress_stage=FETCHING,
        )
        dispatch(fetch_codebase, codebase.pk)
    return codebase


def sync(codebase: Codebase) -> IndexHandle:
    """Fetch the codebase's URL and ref again; a new commit becomes a new version.

    UploadError for a codebase that was uploaded, or whose source this server now refuses;
    IndexingBusy while a fetch or an indexing is on it."""
    if not codebase.git_url:
        raise UploadError("This codebase was uploaded, not added from git; upload a new version.")
    if codebase.status in indexing.UNFINISHED and not indexing.is_stalled(codebase):
        raise IndexingBusy()
    try:
        git_source.check_source(codebase.git_url, codebase.git_ref)
    except git_source.GitSourceError as exc:
        raise UploadError(exc.message) from None
    with transaction.atomic():
        moved = Codebase.objects.filter(pk=codebase.pk, status=codebase.status).update(
            status=Status.PENDING,
            progress=0,
            progress_stage=FETCHING,
            error="",
            git_error="",
            updated_at=timezone.now(),
        )
        if not moved:
            raise UploadError("Someone else changed this codebase just now; reload the page.")
        dispatch(fetch_codebase, codebase.pk)
    return IndexHandle(codebase.pk)


def fetch_lease(codebase_id: int) -> str:
    """The lease a fetch holds: one fetch per codebase at a time. Not the indexing lease, which
    the job still filling in the previous version's vectors may hold for minutes."""
    return f"gitfetch:{codebase_id}"


def fetch_codebase(codebase_id: int) -> None:
    """The job: fetch the codebase's commit, keep its zip as the upload, index it. A failed
    fetch leaves an indexed codebase as it was (ready, with why in `git_error`) and fails a
    codebase that has no version yet."""
    try:
        with leases.held(fetch_lease(codebase_id), on_renew=lambda: _beat(codebase_id)):
            codebase = Codebase.objects.filter(
                pk=codebase_id, status__in=indexing.UNFINISHED
            ).first()
            if codebase is None or not codebase.git_url:
                return
            try:
                source = git_source.check_source(codebase.git_url, codebase.git_ref)
                fetched = git_source.fetch(source)
            except git_source.GitSourceError as exc:
                log.info("codebase %s: fetching %s failed: %s", codebase_id, codebase.git_url, exc)
                _fetch_failed(codebase, exc.message)
                return
            changed = _keep(codebase, fetched)
    except leases.LeaseHeld:
        log.info("codebase %s is being fetched by another job; skipping", codebase_id)
        return
    if changed:
        # When an indexing job still holds the codebase (the last version's vectors), it sees
        # the codebase pending again, stops, and dispatches the indexing of this upload itself.
        index_codebase(codebase_id)


def _beat(codebase_id: int) -> None:
    Codebase.objects.filter(pk=codebase_id, status__in=indexing.UNFINISHED).update(
        updated_at=timezone.now()
    )


def _has_version(codebase: Codebase) -> bool:
    return bool(codebase.upload_path) and CodebaseVersion.objects.filter(codebase=codebase).exists()


def _fetch_failed(codebase: Codebase, message: str) -> None:
    fields: dict[str, object] = {"git_error": message, "updated_at": timezone.now()}
    if _has_version(codebase):
        # The code indexed before is all there still: keep it usable, say why the sync failed.
        fields.update(status=Status.READY, progress=100, progress_stage="ready")
    else:
        fields.update(status=Status.FAILED, error=message, progress_stage="failed")
    Codebase.objects.filter(pk=codebase.pk, status__in=indexing.UNFINISHED).update(**fields)


def _keep(codebase: Codebase, fetched: git_source.Fetched) -> bool:
    """Keep the fetched zip as the codebase's upload (where an uploaded zip is kept); False
    when it is the version indexed already (the same commit: the codebase is ready again)."""
    digest = upload_digest([(fetched.label, fetched.zip_bytes)])
    latest = CodebaseVersion.objects.filter(codebase=codebase).order_by("-number").first()
    now = timezone.now()
    if latest is not None and latest.upload_sha256 == digest and codebase.upload_sha256 == digest:
        Codebase.objects.filter(pk=codebase.pk, status=Status.PENDING).update(
            status=Status.READY,
            progress=100,
            progress_stage="ready",
            git_commit=fetched.commit,
            git_fetched_at=now,
            updated_at=now,
        )
        return False
    folder = Path("uploads") / str(codebase.pk)
    target = Path(settings.DATA_DIR) / folder
    staging = Path(settings.DATA_DIR) / "uploads" / f".{codebase.pk}-git"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        (staging / f"001-{fetched.label}").write_bytes(fetched.zip_bytes)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        _fetch_failed(codebase, f"The fetched code could not be stored ({exc.strerror}).")
        return False
    # Pending again whatever happened meanwhile (an indexing of the previous upload resumed
    # by the page, say): the upload is this one now, and it is what must be indexed next.
    return bool(
        Codebase.objects.filter(pk=codebase.pk).update(
            upload_path=folder.as_posix(),
            upload_sha256=digest,
            uploaded_at=now,
            git_commit=fetched.commit,
            git_fetched_at=now,
            status=Status.PENDING,
            progress=0,
            progress_stage="",
            error="",
            updated_at=now,
        )
    )
