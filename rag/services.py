"""Creating and finding codebases, for views and other apps. Nothing here knows about HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import shutil
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from planagents.jobs import dispatch
from rag import api, completeness, indexing, roles
from rag.indexing import index_codebase
from rag.models import Codebase

log = logging.getLogger(__name__)


class UploadError(Exception):
    """The upload cannot become a codebase; the message tells the uploader what to fix."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


User = AuthUser | AnonymousUser


class IndexingFailed(Exception):
    """The indexing a handle waited for ended in failure; the message is the codebase's."""


@dataclass(frozen=True)
class IndexHandle:
    """The indexing of one codebase, started by the app (an upload, a new version, a retry,
    changed roles), to wait for from a script, a test or a view: `handle.wait()` in sync code,
    `await handle` in async code. It reads the codebase's row, so it works whether the job runs
    in this process or on a Celery worker."""

    codebase_id: int

    def state(self) -> tuple[str, str, tuple[int, int]]:
        """(status, error, (vectors written, vectors wanted)) now."""
        row = Codebase.objects.filter(pk=self.codebase_id).values("status", "error").first()
        if row is None:
            raise IndexingFailed("The codebase was deleted.")
        return row["status"], row["error"], api.vector_counts(self.codebase_id)

    def done(self, vectors: bool = False) -> bool:
        """Ready (with every vector, when `vectors`); IndexingFailed if it failed."""
        status, error, (written, wanted) = self.state()
        if status == Codebase.Status.FAILED:
            raise IndexingFailed(error or "Indexing failed.")
        return status == Codebase.Status.READY and (not vectors or written >= wanted)

    def wait(self, timeout: float | None = None, *, vectors: bool = False) -> Codebase:
        """The codebase once ready (searchable; with `vectors`, once its vectors are all in);
        TimeoutError after `timeout` seconds (0: look once), IndexingFailed if it failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done(vectors):
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"Codebase {self.codebase_id} is not indexed yet.")
            time.sleep(POLL_SECONDS)
        return Codebase.objects.get(pk=self.codebase_id)

    def __await__(self) -> Generator[Any, None, Codebase]:
        return self._wait_async().__await__()

    async def _wait_async(self) -> Codebase:
        while not await sync_to_async(self.done)():
            await asyncio.sleep(POLL_SECONDS)
        return await Codebase.objects.aget(pk=self.codebase_id)


POLL_SECONDS = 0.25


def can_view_codebase(user: User, codebase: Codebase) -> bool:
    return bool(user.is_authenticated and codebase.owner_id == user.pk)


def codebases_for(user: User) -> QuerySet[Codebase]:
    if isinstance(user, AnonymousUser) or not user.is_authenticated:
        return Codebase.objects.none()
    return Codebase.objects.filter(owner=user)


def get_codebase_for(user: User, pk: int) -> Codebase:
    """The user's codebase `pk`; Http404 for a missing one or someone else's."""
    try:
        return codebases_for(user).get(pk=pk)
    except Codebase.DoesNotExist:
        raise Http404("No such codebase.") from None


class DuplicateUpload(UploadError):
    """The owner already has a codebase made from exactly these bytes."""

    def __init__(self, existing: Codebase) -> None:
        uploaded = timezone.localtime(existing.created_at).strftime("%Y-%m-%d %H:%M")
        super().__init__(
            f"You already uploaded exactly these bytes as “{existing.name}” ({uploaded}). "
            "Open that codebase, or tick “Index it again anyway” and upload once more."
        )
        self.existing = existing


class NothingChanged(UploadError):
    """The new version is byte for byte the one already indexed: no version is made."""


class IndexingBusy(UploadError):
    """The codebase is being indexed right now; it takes no new version or retry until done."""

    def __init__(self) -> None:
        super().__init__(
            "This codebase is being indexed right now, so it cannot take a new version yet. "
            "Wait for it to finish (this page updates by itself), then upload it again."
        )


def create_codebase_from_upload(
    owner: AuthUser,
    name: str,
    uploads: list[UploadedFile] | CheckedUpload,
    *,
    allow_duplicate: bool = False,
) -> Codebase:
    """Check the upload, keep its bytes, create the codebase and queue it for indexing.

    `uploads` is the uploaded files, or what `check_uploads` made of them already (the upload
    form checks in its own clean, to refuse an incomplete pack there). The checks read the
    whole upload in a child process (rag.completeness); the rest of parsing is the indexing
    job's. The same bytes uploaded again by the same owner raise DuplicateUpload naming the
    existing codebase, unless `allow_duplicate`. `IndexHandle(codebase.pk)` waits for the
    indexing it starts.
    """
    checked = uploads if isinstance(uploads, CheckedUpload) else check_uploads(uploads)
    parts, style = checked.parts, checked.style
    digest = upload_digest(parts)
    if not allow_duplicate:
        existing = (
            codebases_for(owner)
            .filter(upload_sha256=digest)
            .exclude(status=Codebase.Status.FAILED)
            .first()
        )
        if existing is not None:
            raise DuplicateUpload(existing)
    with transaction.atomic():
        codebase = Codebase.objects.create(
            owner=owner,
            name=_distinct_name(owner, name.strip() or _name_from(parts[0][0])),
            source_format=style,
            upload_sha256=digest,
            uploaded_at=timezone.now(),
        )
        folder = Path("uploads") / str(codebase.pk)
        target = Path(settings.DATA_DIR) / folder
        try:
            target.mkdir(parents=True, exist_ok=True)
            for n, (label, data) in enumerate(parts, start=1):
                (target / f"{n:03d}-{_safe_name(label)}").write_bytes(data)
            codebase.upload_path = folder.as_posix()
            codebase.save(update_fields=["upload_path"])
        except BaseException as exc:
            # The transaction rolls the row back; take the bytes with it.
            shutil.rmtree(target, ignore_errors=True)
            if isinstance(exc, OSError):
                raise UploadError(f"The upload could not be stored ({exc.strerror}).") from None
            raise
        dispatch(index_codebase, codebase.pk)
    return codebase


def upload_digest(parts: list[tuple[str, bytes]]) -> str:
    """sha256 of the uploaded bytes, parts in order (each with its length, so splits differ)."""
    digest = hashlib.sha256()
    for _, data in parts:
        digest.update(f"{len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


def _distinct_name(owner: AuthUser, name: str) -> str:
    """`name`, or `name (2)`, `name (3)`…: two codebases of one owner never look alike in a list."""
    name = name[:190]
    taken = set(codebases_for(owner).filter(name__startswith=name).values_list("name", flat=True))
    if name not in taken:
        return name
    n = 2
    while f"{name} ({n})" in taken:
        n += 1
    return f"{name} ({n})"


@dataclass(frozen=True)
class CheckedUpload:
    """An upload that passed `check_uploads`: its parts and what the checks found."""

    parts: list[tuple[str, bytes]]
    """(file name, bytes) of each uploaded file, in upload order."""
    style: str
    """How it was packed: "zip" or a Repomix style such as "repomix-xml"."""
    incomplete: str
    """Why the pack is incomplete (rag.parsers.listing.incomplete); "" when it is not."""


def check_uploads(uploads: list[UploadedFile]) -> CheckedUpload:
    """The uploads' parts, style and completeness; UploadError for anything we cannot read.

    Checks that read the whole upload (sniffing the style, a zip's directory, parsing the pack
    to judge its completeness) run in one child process (rag.completeness.judge_apart), never
    in the server's, where they would stall every other request for as long as they take. A
    child that gives no verdict refuses the upload: nothing unchecked is kept."""
    if not uploads:
        raise UploadError("Choose a Repomix pack (.xml, .json, .md or .txt) or a .zip to upload.")
    limit = settings.PLANAGENTS_MAX_UPLOAD_BYTES
    total = sum(upload.size or 0 for upload in uploads)
    if total > limit:
        raise UploadError(
            f"The upload is {_human(total)}; the limit is {_human(limit)}. "
            "Pack fewer files (Repomix --include / --ignore) and try again."
        )
    parts: list[tuple[str, bytes]] = []
    for upload in uploads:
        label = upload.name or "upload"
        data = b"".join(upload.chunks())
        if not data or data.isspace():  # isspace stops at the first other byte
            raise UploadError(f"{label} is empty: expected a Repomix pack, found 0 bytes of text.")
        parts.append((label, data))
    try:
        verdict = completeness.judge_apart(parts)
    except completeness.CheckFailed as exc:
        names = ", ".join(label for label, _ in parts)
        log.error("checking an upload (%s) failed: %s", names, exc.detail)
        if exc.bug:
            # A parser bug, not the uploader's: they get words, the log gets the traceback.
            raise UploadError(
                "The upload could not be read: it tripped an error on our side, which was "
                "logged. If it is a Repomix pack or a zip of a repository, pack it again and "
                "retry."
            ) from None
        raise UploadError(
            "The upload could not be checked (the check failed on our side and was logged), "
            "so nothing was kept. Try again in a minute."
        ) from None
    if verdict.error:
        raise UploadError(verdict.error)
    return CheckedUpload(parts=parts, style=verdict.style, incomplete=verdict.incomplete)


def upload_new_version(codebase: Codebase, uploads: list[UploadedFile]) -> IndexHandle:
    """Replace the codebase's kept upload with a new version and queue a re-index.

    The re-index reuses the vectors of every chunk whose text did not change, so a new
    version with a few edited files indexes in seconds.
    """
    parts = check_uploads(uploads).parts
    if codebase.status == Codebase.Status.INDEXING and not indexing.is_stalled(codebase):
        raise IndexingBusy()
    digest = upload_digest(parts)
    if digest == codebase.upload_sha256 and codebase.status == Codebase.Status.READY:
        raise NothingChanged(
            "These are exactly the bytes of the version already indexed, so nothing changed. "
            "Pack the repository again after your changes and upload that."
        )
    folder = Path("uploads") / str(codebase.pk)
    target = Path(settings.DATA_DIR) / folder
    staging = Path(settings.DATA_DIR) / "uploads" / f".{codebase.pk}-new"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        for n, (label, data) in enumerate(parts, start=1):
            (staging / f"{n:03d}-{_safe_name(label)}").write_bytes(data)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise UploadError(f"The upload could not be stored ({exc.strerror}).") from None
    with transaction.atomic():
        Codebase.objects.filter(pk=codebase.pk).update(
            upload_path=folder.as_posix(),
            upload_sha256=digest,
            uploaded_at=timezone.now(),
            status=Codebase.Status.PENDING,
            progress=0,
            progress_stage="",
            error="",
            updated_at=timezone.now(),
        )
        dispatch(index_codebase, codebase.pk)
    return IndexHandle(codebase.pk)


def override_one(codebase: Codebase, path: str, role: str) -> dict[str, str]:
    """The codebase's role overrides with `path` (a file or a "folder/") set to `role`, or
    back to what its content says when `role` is empty."""
    overrides = dict(codebase.role_overrides or {})
    path = roles.override_key(path)
    if not path:
        raise UploadError("Say which path's role to change.")
    if role:
        if role not in roles.ROLES:
            raise UploadError(f"{role!r} is not a role ({', '.join(roles.ROLES)}).")
        overrides[path] = role
    else:
        overrides.pop(path, None)
    return overrides


def set_role_overrides(codebase: Codebase, overrides: dict[str, str]) -> IndexHandle:
    """Keep the uploader's roles (path or "folder/" → role) and index the codebase again from
    its kept upload with them: no upload needed, and every vector whose text is unchanged is
    reused, so only files that became source are embedded.

    IndexingBusy while a live job is on it; UploadError when nothing changed or there is no
    kept upload to index again."""
    if codebase.status in indexing.UNFINISHED and not indexing.is_stalled(codebase):
        raise IndexingBusy()
    if overrides == (codebase.role_overrides or {}):
        raise UploadError("Those are the roles already in use; nothing changed.")
    if not codebase.upload_path:
        raise UploadError("This codebase keeps no upload to index again; upload a new version.")
    with transaction.atomic():
        moved = Codebase.objects.filter(pk=codebase.pk, status=codebase.status).update(
            role_overrides=overrides,
            status=Codebase.Status.PENDING,
            progress=0,
            progress_stage="",
            error="",
            updated_at=timezone.now(),
        )
        if not moved:
            raise UploadError("Someone else changed this codebase just now; reload the page.")
        dispatch(index_codebase, codebase.pk)
    return IndexHandle(codebase.pk)


def retry_indexing(codebase: Codebase) -> None:
    """Index a failed codebase again from its kept upload, or one whose job died.

    IndexingBusy while a live job is on it; UploadError for a ready one (upload a new version
    to change it)."""
    if codebase.status in indexing.UNFINISHED:
        if not indexing.resume_if_stalled(codebase.pk):
            raise IndexingBusy()
        return
    if codebase.status != Codebase.Status.FAILED:
        raise UploadError("This codebase is indexed already; upload a new version to change it.")
    with transaction.atomic():
        moved = Codebase.objects.filter(pk=codebase.pk, status=Codebase.Status.FAILED).update(
            status=Codebase.Status.PENDING, progress=0, progress_stage="", error=""
        )
        if not moved:
            raise UploadError("Someone else changed this codebase just now; reload the page.")
        dispatch(index_codebase, codebase.pk)


def resume_if_stalled(codebase: Codebase) -> bool:
    """Start indexing again when the job that should be doing it is gone (a restart, a killed
    worker), or its vectors stopped filling in; True when it was. Cheap for every other
    codebase: no query."""
    if codebase.status == Codebase.Status.READY:
        return indexing.resume_vectors_if_stalled(codebase)
    if codebase.status not in indexing.UNFINISHED:
        return False
    if codebase.updated_at >= timezone.now() - indexing.stale_after():
        return False
    return indexing.resume_if_stalled(codebase.pk)


def _name_from(filename: str) -> str:
    stem = PurePath(filename).name
    for suffix in (".xml", ".json", ".md", ".txt", ".zip"):
        stem = stem.removesuffix(suffix)
    return stem or "codebase"


def _safe_name(filename: str) -> str:
    return re.sub(r"[^\w.-]+", "_", PurePath(filename).name)[:100] or "upload"


def _human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"
