"""Body caps inside daphne, where the bytes arrive, before it buffers or parses them.

Daphne calls the ASGI app only once Twisted has received the whole body into a temporary file;
Twisted first parses any form or multipart body into `request.args` (read whole into memory,
on the event loop, for nothing: daphne passes the raw body on), then daphne pushes the body
into the app's queue in one loop. So BodyLimitMiddleware alone would answer a 100 MB POST
with a 413 only after all of that had stalled every other request for seconds.

`CappedWebRequest` stops it at the protocol. Form parsing is off. A request may send the
anonymous cap; one that wants more and carries a session cookie (or an API token) stops being
read while the session (or token) is looked up, then gets the largest cap if it is a login
(BodyLimitMiddleware applies the exact one for the page later) or the 413 if not. Past its cap
a request gets the 413 at once and its connection is closed: straight away when anonymous,
after a short linger for a logged-in user, so that their browser shows the page rather than a
connection reset.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from daphne import http_protocol

from planagents.limits import BodyCaps, Cap, bearer_token, session_key, shows_login

# After a 413 to a logged-in user (an upload that is too large), keep reading and dropping for
# this long so the browser can show the answer instead of a reset, then close (nginx's
# "lingering close", bounded in time and bytes).
LINGER_SECONDS = 2.0
LINGER_BYTES = 8 * 1024 * 1024


def _response(cap: Cap) -> bytes:
    page = cap.page()
    return (
        b"HTTP/1.1 413 Content Too Large\r\n"
        b"Content-Type: text/html; charset=utf-8\r\n"
        b"Content-Length: " + str(len(page)).encode() + b"\r\n"
        b"Connection: close\r\n\r\n" + page
    )


class CappedWebRequest(http_protocol.WebRequest):  # type: ignore[misc]  # daphne is untyped
    """daphne's request, with its body counted against a cap and never parsed as a form."""

    caps: ClassVar[BodyCaps]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parsePOSTFormSubmission = False
        self._cap = self.caps.for_anonymous()
        self._declared: int | None = None
        self._body_bytes = 0
        self._logged_in = False
        self._checking = False  # the session lookup is under way; reading is paused
        self._received: tuple[bytes, bytes, bytes] | None = None  # held until it is done
        self._refused_at: int | None = None
        self._linger: Any = None  # the reactor's IDelayedCall for the lingering close

    def gotLength(self, length: int | None) -> None:
        self._declared = length
        if length is None or length > self._cap.limit:
            cookies = self.requestHeaders.getRawHeaders(b"cookie") or []
            authorization = self.requestHeaders.getRawHeaders(b"authorization") or []
            if session_key(cookies) is not None or bearer_token(authorization) is not None:
                self._check_session(cookies, authorization)
            elif length is not None:
                self._refuse()
                return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        self._body_bytes += len(data)
        if self._refused_at is not None:
            if self._body_bytes - self._refused_at > LINGER_BYTES:
                self._close()
            return
        # While the session is looked up, what was read before the pause is kept, up to the
        # most any login may send.
        limit = self.caps.largest if self._checking else self._cap.limit
        if self._body_bytes > limit:
            self._refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self._refused_at is not None:
            self._close()
        elif self._checking:
            self._received = (command, path, version)
        else:
            super().requestReceived(command, path, version)

    def _check_session(self, cookies: list[bytes], authorization: list[bytes]) -> None:
        self._checking = True
        self.channel.transport.pauseProducing()
        lookup = asyncio.ensure_future(shows_login(cookies, authorization))
        lookup.add_done_callback(self._session_checked)

    def _session_checked(self, lookup: asyncio.Future[bool]) -> None:
        self._checking = False
        if self._refused_at is not None or self.channel is None:
            return  # refused meanwhile, or the client left
        self._logged_in = not lookup.cancelled() and lookup.exception() is None and lookup.result()
        if self._logged_in:
            self._cap = self.caps.for_upload()  # the most a login may send to any page
        if max(self._declared or 0, self._body_bytes) > self._cap.limit:
            self._refuse()
            return
        self.channel.transport.resumeProducing()
        if self._received is not None:
            super().requestReceived(*self._received)

    def _refuse(self) -> None:
        # Imported here: importing the reactor picks Twisted's default one unless daphne has
        # installed its asyncio reactor first, which it has once a request arrives.
        from twisted.internet import reactor

        self._refused_at = self._body_bytes
        content = getattr(self, "content", None)  # a file once the body began
        if content is not None:
            content.close()
            self.content = None
        # Twisted would send "100 Continue" right after this answer otherwise.
        self.requestHeaders.removeHeader(b"expect")
        self.channel.transport.write(_response(self._cap))
        if not self._logged_in:
            self._close()
            return
        self.channel.transport.resumeProducing()  # read and drop, for a moment
        clock: Any = reactor  # an IReactorTime, which mypy cannot see through zope
        self._linger = clock.callLater(LINGER_SECONDS, self._close)

    def _close(self) -> None:
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        self._linger = None
        if self.channel is not None and self.channel.transport is not None:
            self.channel.transport.loseConnection()


def install(caps: BodyCaps) -> None:
    """Make every daphne server in this process build its requests as CappedWebRequest.

    daphne has no option for its request class: its HTTPFactory reads the module's WebRequest
    name each time it builds a connection's protocol, so that name is what we replace."""
    CappedWebRequest.caps = caps
    http_protocol.WebRequest = CappedWebRequest
