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
    if not uploads:
        raise UploadError("Choose a Repomix pack (.xml, .json, .md or .txt) to upload.")
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
            style = style or sniff(data)
        except PackError as exc:
            raise UploadError(f"{label}: {exc.message}") from None
        parts.append((label, data))

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


def reindex(codebase: Codebase) -> None:
    """Queue a rebuild of the codebase's index from its kept upload."""
    dispatch(index_codebase, codebase.pk)


def _name_from(filename: str) -> str:
    stem = PurePath(filename).name
    for suffix in (".xml", ".json", ".md", ".txt"):
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
