"""Creating and finding codebases, for views and other apps. Nothing here knows about HTTP."""

from __future__ import annotations

import re
import shutil
from pathlib import Path, PurePath

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404

from planagents.jobs import dispatch
from rag.indexing import index_codebase
from rag.models import Codebase
from rag.parsers.archive import is_zip, read_zip
from rag.parsers.repomix import PackError, sniff


class UploadError(Exception):
    """The upload cannot become a codebase; the message tells the uploader what to fix."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


User = AuthUser | AnonymousUser


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


def create_codebase_from_upload(
    owner: AuthUser, name: str, uploads: list[UploadedFile]
) -> Codebase:
    """Check the upload, keep its bytes, create the codebase and queue it for indexing."""
    parts, style = _check_uploads(uploads)
    name = name.strip() or _name_from(parts[0][0])
    with transaction.atomic():
        codebase = Codebase.objects.create(owner=owner, name=name[:200], source_format=style)
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


def _check_uploads(uploads: list[UploadedFile]) -> tuple[list[tuple[str, bytes]], str]:
    """The uploads' (name, bytes) and detected style; UploadError for anything we cannot read."""
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
    style = ""
    for upload in uploads:
        label = upload.name or "upload"
        data = b"".join(upload.chunks())
        if not data.strip():
            raise UploadError(f"{label} is empty: expected a Repomix pack, found 0 bytes of text.")
        try:
            if is_zip(data):
                if len(uploads) > 1:
                    raise PackError("Upload a zip on its own, not together with other files.")
                read_zip(data)  # check it now, so a bad zip is refused before it is kept
                style = "zip"
            else:
                style = style or sniff(data)
        except PackError as exc:
            raise UploadError(f"{label}: {exc.message}") from None
        parts.append((label, data))

    return parts, style


def upload_new_version(codebase: Codebase, uploads: list[UploadedFile]) -> None:
    """Replace the codebase's kept upload with a new version and queue a re-index.

    The re-index reuses the vectors of every chunk whose text did not change, so a new
    version with a few edited files indexes in seconds.
    """
    parts, _ = _check_uploads(uploads)
    if codebase.status == Codebase.Status.INDEXING:
        raise UploadError("This codebase is being indexed; wait for it to finish, then upload.")
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
    Codebase.objects.filter(pk=codebase.pk).update(upload_path=folder.as_posix())
    dispatch(index_codebase, codebase.pk)


def reindex(codebase: Codebase) -> None:
    """Queue a rebuild of the codebase's index from its kept upload."""
    dispatch(index_codebase, codebase.pk)


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
