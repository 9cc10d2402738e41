"""A codebase's versions: which upload replaced the index when, and which files it changed.

A new version re-indexes the same Codebase row in place (rag.indexing._store swaps the file
rows in one transaction), so the old code is gone once it is indexed. What stays is a
`CodebaseVersion` row per upload, written in that same transaction, comparing the old rows'
sha256 with the new ones: its number, when it was uploaded and indexed, and the files added,
removed and changed. Sessions learn from `indexed_at` which version they started on and what
changed under them (conversations.stale.session_code).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Max, QuerySet

from rag.models import Codebase, CodebaseVersion


def record(
    codebase_id: int,
    old: dict[str, str],
    new: Iterable[tuple[str, str]],
    *,
    upload_sha256: str,
    content_hash: str,
    uploaded_at: datetime | None,
    indexed_at: datetime,
) -> CodebaseVersion | None:
    """Record the version just indexed (call inside the transaction that swaps the rows):
    `old` and `new` are path → sha256 of the files before and after. None when it is the
    version recorded last (same upload, same files: a retry, changed roles, vectors resumed)."""
    latest = CodebaseVersion.objects.filter(codebase_id=codebase_id).order_by("-number").first()
    if (
        latest is not None
        and latest.upload_sha256 == upload_sha256
        and latest.content_hash == content_hash
    ):
        return None
    now = dict(new)
    first = latest is None and not old
    added = sorted(set(now) - set(old))
    removed = sorted(set(old) - set(now))
    changed = sorted(p for p in now.keys() & old.keys() if now[p] != old[p])
    cap = CodebaseVersion.MAX_LISTED
    return CodebaseVersion.objects.create(
        codebase_id=codebase_id,
        number=(latest.number if latest else 0) + 1,
        kind=CodebaseVersion.Kind.FIRST if first else CodebaseVersion.Kind.UPLOAD,
        upload_sha256=upload_sha256,
        content_hash=content_hash,
        uploaded_at=uploaded_at,
        indexed_at=indexed_at,
        file_count=len(now),
        added=[] if first else added[:cap],
        removed=removed[:cap],
        changed=changed[:cap],
        added_count=0 if first else len(added),
        removed_count=len(removed),
        changed_count=len(changed),
    )


def history(codebase: Codebase) -> QuerySet[CodebaseVersion]:
    """Its versions, newest first."""
    return CodebaseVersion.objects.filter(codebase=codebase).order_by("-number")


def latest_numbers(codebase_ids: Iterable[int]) -> dict[int, CodebaseVersion]:
    """The latest version of each codebase that has one, by codebase id (one query each way)."""
    ids = list(codebase_ids)
    tops = (
        CodebaseVersion.objects.filter(codebase_id__in=ids)
        .values("codebase_id")
        .annotate(top=Max("number"))
    )
    wanted = {(row["codebase_id"], row["top"]) for row in tops}
    rows = CodebaseVersion.objects.filter(
        codebase_id__in={c for c, _ in wanted}, number__in={n for _, n in wanted}
    )
    return {v.codebase_id: v for v in rows if (v.codebase_id, v.number) in wanted}


def in_use_at(codebase: Codebase, when: datetime) -> CodebaseVersion | None:
    """The version the index held at `when`; None when that is before the recorded history."""
    return history(codebase).filter(indexed_at__lte=when).first()


def indexed_since(codebase: Codebase, when: datetime) -> list[CodebaseVersion]:
    """The versions that replaced the index after `when`, oldest first (the row written when
    version history began replaced nothing)."""
    later = history(codebase).filter(indexed_at__gt=when)
    return list(later.exclude(kind=CodebaseVersion.Kind.RECORDED).order_by("number"))
