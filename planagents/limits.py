"""Request body caps enforced at the ASGI edge, before Django buffers or parses a byte of it.

Django's own limits (DATA_UPLOAD_MAX_MEMORY_SIZE, the upload service's size check) apply only
after its ASGI handler has spooled the whole body and the CSRF middleware has parsed it, so one
anonymous 100 MB POST used to stall every other page for seconds. `BodyLimitMiddleware` wraps
the HTTP app: a declared Content-Length over the cap gets a 413 without the body being read at
all, and a body without one (chunked) is counted as it arrives and cut off with a 413 as soon as
it passes the cap. The cap depends on who asks and where:

- a request without a logged-in session: `anonymous` (the login form is all it can post);
- the upload views (`rag:upload`, `rag:new_version`): `upload`;
- anything else a logged-in user posts: `default`.

Who is logged in is only looked up (one session query) for a body larger than the smallest cap,
so ordinary requests cost nothing extra. A request may show an API token instead of a session
(`Authorization: Bearer …`): the API app registers how to check one (`accept_tokens`), since
this layer imports nothing above it; a live token counts as a login, and the API's upload
operations take the upload cap. Under daphne, `daphne_limits.py` has already applied
the same caps, coarsely (no page), as the bytes arrived.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from html import escape
from importlib import import_module
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.http import HttpRequest
from django.http.cookie import parse_cookie
from django.template.defaultfilters import filesizeformat
from django.urls import Resolver404, resolve

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]  # Django's handler types its arguments more narrowly

UPLOAD_VIEWS = {"rag:upload", "rag:new_version"}
"""View names that take the upload cap (the API adds its own through `accept_tokens`)."""
_token_check: Callable[[str], bool] | None = None


def accept_tokens(check: Callable[[str], bool], upload_views: set[str]) -> None:
    """Count a request whose bearer token `check` accepts as logged in, and give the views
    named in `upload_views` the upload cap (the API app calls this once, at start-up)."""
    global _token_check
    _token_check = check
    UPLOAD_VIEWS.update(upload_views)


def bearer_token(authorization_headers: list[bytes]) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, if any."""
    for raw in authorization_headers:
        scheme, _, token = raw.decode("latin-1").strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return None


@database_sync_to_async
def is_live_token(token: str) -> bool:
    return _token_check is not None and _token_check(token)


async def shows_login(cookie_headers: list[bytes], authorization_headers: list[bytes]) -> bool:
    """Whether a request with these headers comes from a login: a live session or API token."""
    key = session_key(cookie_headers)
    if key is not None and await is_logged_in(key):
        return True
    token = bearer_token(authorization_headers)
    return token is not None and await is_live_token(token)


# Room for what a multipart upload carries besides the files: boundaries, part headers, the
# CSRF token and the form's other fields. Without it a pack of exactly the limit would be cut.
MULTIPART_SLACK = 1024 * 1024


@dataclass(frozen=True)
class BodyCaps:
    """The most bytes of request body each kind of request may send."""

    anonymous: int
    default: int
    upload: int  # the files of one upload, in all; the request may add MULTIPART_SLACK

    @classmethod
    def from_settings(cls) -> BodyCaps:
        return cls(
            anonymous=settings.PLANAGENTS_MAX_ANONYMOUS_BODY_BYTES,
            default=settings.PLANAGENTS_MAX_BODY_BYTES,
            upload=settings.PLANAGENTS_MAX_UPLOAD_BYTES,
        )

    @property
    def largest(self) -> int:
        return max(self.anonymous, self.default, self.upload + MULTIPART_SLACK)

    @property
    def smallest(self) -> int:
        return min(self.anonymous, self.default, self.upload + MULTIPART_SLACK)

    def for_anonymous(self) -> Cap:
        return Cap(
            self.anonymous,
            "Log in first: without a login a request may carry at most "
            f"{filesizeformat(self.anonymous)}.",
        )

    def for_upload(self) -> Cap:
        return Cap(
            self.upload + MULTIPART_SLACK,
            f"An upload may be at most {filesizeformat(self.upload)} in all. "
            "Pack fewer files (Repomix --include / --ignore) and try again.",
        )

    def for_page(self) -> Cap:
        return Cap(self.default, f"This page accepts at most {filesizeformat(self.default)}.")


@dataclass(frozen=True)
class Cap:
    """The cap that applies to one request, and what to tell a client that passes it."""

    limit: int
    advice: str

    def page(self) -> bytes:
        """The 413 page: what happened and what to do."""
        return (
            "<!doctype html><html lang=en><meta charset=utf-8><title>Request too large</title>"
            f"<h1>Request too large</h1><p>{escape(self.advice)}</p>"
            '<p><a href="/">Back to PlanAgents</a></p></html>\n'
        ).encode()


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


def declared_length(scope: Scope) -> int | None:
    """The Content-Length the client declared, or None when it gave none (or nonsense).

    A bad value is left to the server to refuse; the body is counted as it arrives anyway."""
    raw = _header(scope, b"content-length")
    if raw is None or not raw.strip().isdigit():
        return None
    return int(raw)


def session_key(cookie_headers: list[bytes]) -> str | None:
    """The session cookie's value among these Cookie headers, if any."""
    for raw in cookie_headers:
        key = parse_cookie(raw.decode("latin-1")).get(settings.SESSION_COOKIE_NAME)
        if key:
            return key
    return None


@database_sync_to_async
def is_logged_in(key: str) -> bool:
    # Exactly the check AuthenticationMiddleware makes: a forged, expired or logged-out session
    # key (or a user deactivated since) comes back anonymous.
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(key)
    return bool(get_user(request).is_authenticated)


def _view_name(scope: Scope) -> str | None:
    path = str(scope.get("path", "/"))
    root = str(scope.get("root_path", ""))
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    try:
        return resolve(path).view_name
    except Resolver404:
        return None


class BodyLimitMiddleware:
    """ASGI middleware: 413 for a request body over its cap, before the app reads past it."""

    def __init__(self, app: ASGIApp, caps: BodyCaps | None = None) -> None:
        self.app = app
        self.caps = caps or BodyCaps.from_settings()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = declared_length(scope)
        cap: Cap | None = None
        if declared is not None and declared > self.caps.smallest:
            cap = await self.cap_for(scope)
            if declared > cap.limit:
                await self.reject(send, cap)
                return

        received = 0
        rejected = False

        async def counted_receive() -> Message:
            nonlocal received, rejected, cap
            if rejected:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] != "http.request":
                return message
            received += len(message.get("body", b""))
            if received > self.caps.smallest:
                if cap is None:
                    cap = await self.cap_for(scope)
                if received > cap.limit:
                    # Answer the client ourselves and tell the app the client left: Django
                    # stops reading at a disconnect and sends nothing.
                    rejected = True
                    await self.reject(send, cap)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not rejected:
                await send(message)

        await self.app(scope, counted_receive, guarded_send)

    async def cap_for(self, scope: Scope) -> Cap:
        headers = scope.get("headers", [])
        cookies = [value for name, value in headers if name == b"cookie"]
        authorization = [value for name, value in headers if name == b"authorization"]
        if not await shows_login(cookies, authorization):
            return self.caps.for_anonymous()
        if _view_name(scope) in UPLOAD_VIEWS:
            return self.caps.for_upload()
        return self.caps.for_page()

    @staticmethod
    async def reject(send: Send, cap: Cap) -> None:
        body = cap.page()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    # The rest of the body is never read, so the connection cannot be reused.
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
