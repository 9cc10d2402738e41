"""Request bodies are capped at the ASGI edge, before Django reads or parses them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.core.asgi import get_asgi_application
from django.test import Client

from planagents.limits import BodyCaps, BodyLimitMiddleware

KB = 1024
CAPS = BodyCaps(anonymous=64 * KB, default=256 * KB, upload=1024 * KB)


class FakeClient:
    """The server's side of one request: hands the app `total` bytes of body in `chunk`-byte
    messages (a whole 100 MB upload unless something stops reading) and records its reply."""

    def __init__(self, chunk: int, total: int = 100 * 1024 * KB) -> None:
        self.chunk = chunk
        self.total = total
        self.receive_calls = 0
        self.bytes_read = 0
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        self.receive_calls += 1
        size = min(self.chunk, self.total - self.bytes_read)
        self.bytes_read += size
        more = self.bytes_read < self.total
        return {"type": "http.request", "body": b"x" * size, "more_body": more}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        starts = [m for m in self.sent if m["type"] == "http.response.start"]
        assert len(starts) == 1, [m for m in self.sent if m["type"] == "http.response.start"]
        return int(starts[0]["status"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")


def scope(path: str = "/accounts/login/", length: int | None = None, cookie: str = "") -> dict:
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/x-www-form-urlencoded")]
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


class EchoApp:
    """An app that reads the whole body, then answers 200 with how many bytes it got."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(size).encode()})


async def test_it_refuses_a_declared_oversized_body_without_reading_any_of_it():
    app = EchoApp()
    client = FakeClient(64 * KB)

    await BodyLimitMiddleware(app, CAPS)(scope(length=100 * 1024 * KB), client.receive, client.send)

    assert client.status == 413
    assert client.receive_calls == 0
    assert app.calls == 0
    assert b"Log in first" in client.body


async def test_it_cuts_off_a_chunked_body_as_soon_as_it_passes_the_cap():
    # The real Django app behind it: its ASGI handler would spool the whole body, then the CSRF
    # middleware would parse it. Here it must see a disconnect after at most one chunk too many.
    django_app = get_asgi_application()
    client = FakeClient(8 * KB)

    await BodyLimitMiddleware(django_app, CAPS)(scope(), client.receive, client.send)

    assert client.status == 413
    assert client.receive_calls == 64 // 8 + 1
    assert client.bytes_read == 72 * KB


async def test_it_counts_the_bytes_sent_not_the_length_declared():
    app = EchoApp()
    client = FakeClient(16 * KB)

    await BodyLimitMiddleware(app, CAPS)(scope(length=10), client.receive, client.send)

    assert client.status == 413
    assert client.bytes_read <= 64 * KB + 16 * KB


async def test_a_body_under_the_cap_reaches_the_app_whole():
    app = EchoApp()
    client = FakeClient(20 * KB, total=64 * KB)

    await BodyLimitMiddleware(app, CAPS)(scope(length=64 * KB), client.receive, client.send)

    assert client.status == 200
    assert client.body == str(64 * KB).encode()


async def test_the_served_application_goes_through_the_guard():
    from planagents.asgi import application

    client = FakeClient(64 * KB)

    await application(scope(length=100 * 1024 * KB), client.receive, client.send)

    assert client.status == 413
    assert client.receive_calls == 0


@pytest.fixture
def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def run(app: Any, request_scope: dict, total: int) -> FakeClient:
    client = FakeClient(64 * KB, total)
    asyncio.run(BodyLimitMiddleware(app, CAPS)(request_scope, client.receive, client.send))
    return client


@pytest.mark.django_db(transaction=True)
def test_a_logged_in_user_may_send_an_upload_larger_than_the_anonymous_cap(session_cookie):
    size = 1024 * KB
    app = EchoApp()

    client = run(app, scope("/codebases/upload/", size, session_cookie), size)

    assert client.status == 200
    assert client.body == str(size).encode()


@pytest.mark.django_db(transaction=True)
def test_a_logged_in_user_gets_the_modest_cap_outside_the_upload_pages(session_cookie):
    client = run(EchoApp(), scope("/sessions/new/", 512 * KB, session_cookie), 512 * KB)

    assert client.status == 413
    assert client.receive_calls == 0
    assert b"This page accepts at most 256.0" in client.body


@pytest.mark.django_db(transaction=True)
def test_an_upload_over_the_upload_cap_is_refused_unread(session_cookie):
    client = run(EchoApp(), scope("/codebases/3/version/", 4096 * KB, session_cookie), 4096 * KB)

    assert client.status == 413
    assert client.receive_calls == 0
    assert b"An upload may be at most 1.0" in client.body


@pytest.mark.django_db(transaction=True)
def test_a_forged_session_cookie_counts_as_anonymous(user):
    client = run(EchoApp(), scope("/codebases/upload/", 128 * KB, "sessionid=forged"), 128 * KB)

    assert client.status == 413
    assert b"Log in first" in client.body
