"""API tokens' use cases: make one, list and revoke a user's, and find the live one a request
shows. Nothing here knows about HTTP. Codebases, sessions and plans are served through their
own apps' services (rag.services, conversations.services): this module adds no permission
of its own to them.

A token is `pa_` and 43 URL-safe characters (256 random bits). It is shown once; the database
keeps its sha256 and its first characters. A fast hash is enough for a random secret that
long (nothing to guess from a dictionary), and it lets a request be matched by one indexed
lookup instead of a slow hash per token of the user's.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from api.models import ApiToken

TOKEN_PREFIX = "pa_"
SHOWN_CHARS = 8
"""Characters of the token (after `pa_`) the account page shows to recognise it by."""
MAX_TOKENS = 50
"""Live tokens one user may hold: enough for every machine and job, not a table to fill."""
USE_RESOLUTION = timedelta(minutes=1)
"""`last_used_at` is written at most once a minute per token, so a busy client's every
request is not a write (on SQLite, one writer at a time)."""
MAX_TOKEN_CHARS = 200
"""Longer than any token we issue: anything longer is refused without hashing it."""


class TokenError(Exception):
    """A token could not be made or revoked; the message says why."""


@dataclass(frozen=True)
class NewToken:
    """A token just made: the row, and the secret, which exists only here."""

    token: ApiToken
    secret: str


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def tokens_for(user: Any) -> QuerySet[ApiToken]:
    """The user's tokens, live and revoked, newest first."""
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(owner=user)


def create_token(user: Any, name: str, scope: str) -> NewToken:
    name = " ".join(str(name).split())
    if not name:
        raise TokenError("Name the token (where it will be used), so you can tell it apart later.")
    if len(name) > 100:
        raise TokenError("A token's name may be at most 100 characters.")
    if scope not in ApiToken.Scope.values:
        raise TokenError(f"Unknown scope {scope!r}: choose read or write.")
    if tokens_for(user).filter(revoked_at__isnull=True).count() >= MAX_TOKENS:
        raise TokenError(f"You have {MAX_TOKENS} live tokens; revoke one you no longer use first.")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        owner=user,
        name=name,
        scope=scope,
        digest=digest(secret),
        prefix=secret[: len(TOKEN_PREFIX) + SHOWN_CHARS],
    )
    return NewToken(token=token, secret=secret)


def revoke_token(user: Any, token_id: int) -> ApiToken:
    """Revoke the user's token `token_id` (again is fine); TokenError for anyone else's."""
    token = tokens_for(user).filter(pk=token_id).first()
    if token is None:
        raise TokenError("That token does not exist.")
    # Compare-and-swap: a second revoke keeps the first time.
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


def _live(secret: str) -> QuerySet[ApiToken]:
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > MAX_TOKEN_CHARS:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(
        digest=digest(secret), revoked_at__isnull=True, owner__is_active=True
    )


def is_live(secret: str) -> bool:
    """Whether `secret` is a live token (no bookkeeping: the body cap asks this)."""
    return _live(secret).exists()


def authenticate(secret: str) -> ApiToken | None:
    """The live token whose secret this is, with its owner; None for anything else (unknown,
    revoked, malformed, or its owner deactivated)."""
    token = _live(secret).select_related("owner").first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= USE_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
