"""Read-only share links to a plan. The link carries a random token; only its sha256 is stored,
so a copy of the database opens nothing and the owner sees the token once, at creation.
Nothing here knows about HTTP: views turn the named errors into 404s."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from conversations.models import Message, PlanningSession, ShareLink
from conversations.services import SessionNotFound, get_session_for

# What the owner may pick on the plan page: form value → lifetime (None: never expires).
EXPIRY_CHOICES: dict[str, tuple[str, timedelta | None]] = {
    "never": ("Never", None),
    "1d": ("1 day", timedelta(days=1)),
    "7d": ("7 days", timedelta(days=7)),
    "30d": ("30 days", timedelta(days=30)),
}

# secrets.token_urlsafe(32) gives 43 characters of the URL-safe base64 alphabet.
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")


class ShareLinkError(Exception):
    """A share-link action was refused; the message says why."""


class ShareLinkNotFound(ShareLinkError):
    """No such link for this user, or a token that opens nothing (unknown, revoked, expired)."""


@dataclass(frozen=True)
class CreatedLink:
    link: ShareLink
    token: str
    """The raw token: shown to the owner once, never stored."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


def create_link(user: Any, session_id: int, expiry: str) -> CreatedLink:
    """A new link to the session's plan, for its owner only."""
    session = _own_session(user, session_id)
    if expiry not in EXPIRY_CHOICES:
        raise ShareLinkError("Choose when the link expires: never, 1 day, 7 days or 30 days.")
    if not session.plans.exists():
        raise ShareLinkError("This session has no plan to share yet.")
    lifetime = EXPIRY_CHOICES[expiry][1]
    token = new_token()
    link = ShareLink.objects.create(
        session=session,
        token_hash=hash_token(token),
        expires_at=timezone.now() + lifetime if lifetime else None,
        created_by=user,
    )
    return CreatedLink(link=link, token=token)


def revoke_link(user: Any, session_id: int, link_id: int) -> ShareLink:
    """Revoke one of the owner's links; revoking a revoked link changes nothing."""
    session = _own_session(user, session_id)
    link = ShareLink.objects.filter(pk=link_id, session=session).first()
    if link is None:
        raise ShareLinkNotFound("That share link does not exist.")
    revoke(ShareLink.objects.filter(pk=link.pk))
    link.refresh_from_db()
    return link


def revoke(links: QuerySet[ShareLink]) -> int:
    """Revoke the links not revoked yet (the first revocation time stays); returns how many."""
    return links.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def active_links(user: Any, session_id: int) -> QuerySet[ShareLink]:
    return ShareLink.objects.filter(session=_own_session(user, session_id)).active()


def resolve(token: str) -> ShareLink:
    """The working link a token opens. The lookup is by the token's hash, so the database
    compares digests, never the token: its timing tells nothing about a valid token."""
    if not _TOKEN_SHAPE.fullmatch(token):
        raise ShareLinkNotFound("No such link.")
    link = (
        ShareLink.objects.active()
        .select_related("session")
        .filter(token_hash=hash_token(token))
        .first()
    )
    if link is None:
        raise ShareLinkNotFound("No such link.")
    return link


def evidence(session: PlanningSession) -> QuerySet[Message]:
    """What the investigation found: its system messages, in order."""
    return session.messages.filter(role=Message.Role.SYSTEM, node="investigate").order_by("seq")


def _own_session(user: Any, session_id: int) -> PlanningSession:
    try:
        return get_session_for(user, session_id)
    except SessionNotFound:
        raise ShareLinkNotFound("That session does not exist.") from None
