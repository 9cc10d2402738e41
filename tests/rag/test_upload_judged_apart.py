"""The upload form parses the whole pack to refuse an incomplete one (about 1.5 s at the 50 MB
cap). The parse runs in a child process, not in the server's: its regular expressions hold the
interpreter lock for hundreds of milliseconds at a time, which stalls every request the server
is handling, whichever thread it runs on. These tests go through Django's real ASGI handler."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from dataclasses import dataclass, field

import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.core.asgi import get_asgi_application
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

import rag.views  # noqa: F401  # imported before any test patches what it imports
from rag.models import Codebase
from rag.parsers import repomix

pytestmark = pytest.mark.django_db(transaction=True)  # the handler's threads see the users

CSRF = "k" * 32  # a CSRF secret, sent as the cookie and as the form's token
HOG_SECONDS = 2.0


def session_for(name: str) -> str:
    client = Client()
    client.force_login(get_user_model().objects.create_user(name, password="pw-123456789"))
    return client.cookies["sessionid"].value


async def asgi(method: str, path: str, session: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request through Django's ASGI handler, as daphne hands it over."""
    headers = [
        (b"host", b"testserver"),
        (b"cookie", f"sessionid={session}; csrftoken={CSRF}".encode()),
    ]
    if body:
        headers += [
            (b"content-type", MULTIPART_CONTENT.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 1), "server": ("t", 80),
    }  # fmt: skip
    app = ApplicationCommunicator(get_asgi_application(), scope)
    await app.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await app.receive_output(timeout=60)
    content = b""
    while True:
        message = await app.receive_output(timeout=60)
        content += message.get("body", b"")
        if not message.get("more_body"):
            break
    await app.wait(timeout=5)
    return start["status"], content


def upload_body(data: bytes) -> bytes:
    return encode_multipart(
        BOUNDARY,
        {"csrfmiddlewaretoken": CSRF, "name": "", "pack": SimpleUploadedFile("cut.xml", data)},
    )


@pytest.fixture
def cut_pack(pack_bytes):
    """sample.xml cut in the middle of todo/export.py: its listing still names every file."""
    data = pack_bytes("sample.xml")
    return data[: data.index(b'<file path="todo/export.py">') + 60]


@pytest.fixture
def sessions(transactional_db):
    return session_for("uploader"), session_for("reader")


@pytest.fixture
def parses_here(monkeypatch):
    """Every pack parsed in this process (the server's), wherever the code imported it from."""
    calls: list[int] = []
    real = repomix.parse_pack

    def recorded(data):  # type: ignore[no-untyped-def]
        calls.append(len(data))
        return real(data)

    for module in [m for m in list(sys.modules.values()) if getattr(m, "parse_pack", None) is real]:
        monkeypatch.setattr(module, "parse_pack", recorded)
    return calls


async def test_an_incomplete_pack_is_refused_without_being_parsed_in_the_server(
    sessions, cut_pack, parses_here
):
    uploader, _ = sessions

    status, page = await asgi("POST", "/codebases/upload/", uploader, upload_body(cut_pack))

    assert status == 400
    assert "names 3 file(s) that are not in it: todo/storage.py" in page.decode()
    assert "last file (todo/export.py) is cut off" in page.decode()
    assert parses_here == []  # judged in a child process
    assert not await Codebase.objects.aexists()


@dataclass
class Hog:
    started: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def hogging_parse(monkeypatch):
    """Parsing that holds the interpreter lock, as the real parser's regexes do over a big
    pack (for about 0.3 s at a time at 50 MB): here for HOG_SECONDS in one go, from when the
    test says `go`."""
    hog = Hog()
    real = repomix.parse_pack

    def hogging(data):  # type: ignore[no-untyped-def]
        hog.started.set()
        hog.go.wait(10)
        interval = sys.getswitchinterval()
        sys.setswitchinterval(60)  # no other thread runs until this one blocks
        try:
            deadline = time.monotonic() + HOG_SECONDS
            while time.monotonic() < deadline:
                pass
        finally:
            sys.setswitchinterval(interval)
        return real(data)

    for module in [m for m in list(sys.modules.values()) if getattr(m, "parse_pack", None) is real]:
        monkeypatch.setattr(module, "parse_pack", hogging)
    yield hog
    hog.go.set()


async def test_another_users_page_loads_while_an_upload_is_judged(
    sessions, cut_pack, hogging_parse
):
    uploader, reader = sessions
    assert (await asgi("GET", "/codebases/", reader))[0] == 200  # warm: imports, templates

    upload = asyncio.ensure_future(
        asgi("POST", "/codebases/upload/", uploader, upload_body(cut_pack))
    )
    # Wait until the upload is being judged: in this process, or (the hog never runs) until
    # it is answered.
    judged_here = asyncio.ensure_future(asyncio.to_thread(hogging_parse.started.wait, 30))
    await asyncio.wait([upload, judged_here], return_when=asyncio.FIRST_COMPLETED)
    started = time.monotonic()
    page = asyncio.ensure_future(asgi("GET", "/codebases/", reader))
    hogging_parse.go.set()
    status, _ = await page
    waited = time.monotonic() - started
    upload_status, _ = await upload
    hogging_parse.started.set()  # let the waiting thread go
    await judged_here

    assert status == 200 and upload_status == 400
    assert waited < HOG_SECONDS / 2, f"the page waited {waited:.2f} s for the upload's parse"
