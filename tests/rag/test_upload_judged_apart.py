"""Every check of an upload that reads the whole pack (its style, what is wrong with it, whether
it is complete, a zip's directory) runs in one child process per upload, not in the server's:
the parser's regular expressions hold the interpreter lock for hundreds of milliseconds at a
time at the 50 MB cap, which stalls every request the server is handling, whichever thread it
runs on. These tests go through Django's real ASGI handler."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.core.asgi import get_asgi_application
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

import rag.views  # noqa: F401  # imported before any test patches what it imports
from rag import completeness
from rag.models import Codebase
from rag.parsers import archive, repomix

pytestmark = pytest.mark.django_db(transaction=True)  # the handler's threads see the users

CSRF = "k" * 32  # a CSRF secret, sent as the cookie and as the form's token
HOG_SECONDS = 2.0
ZIP = Path(__file__).resolve().parent.parent / "fixtures" / "zips" / "sample_project.zip"


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


def upload_body(data: bytes, name: str = "cut.xml", **fields: str) -> bytes:
    return encode_multipart(
        BOUNDARY,
        {"csrfmiddlewaretoken": CSRF, "name": "", "pack": SimpleUploadedFile(name, data)} | fields,
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
    """Every pass over an upload's bytes made in this process (the server's), wherever the code
    imported the function from: decoding, sniffing the style, parsing, a zip's directory. Each
    as (function, process id, thread id); a child process imports its own, unpatched, copies."""
    calls: list[tuple[str, int, int]] = []
    for real in (
        repomix.decode,
        repomix.detect_style,
        repomix.sniff,
        repomix.parse_pack,
        archive.inspect_zip,
    ):

        def recorded(*args, real=real):  # type: ignore[no-untyped-def]
            calls.append((real.__name__, os.getpid(), threading.get_ident()))
            return real(*args)

        for module in [
            m for m in list(sys.modules.values()) if getattr(m, real.__name__, None) is real
        ]:
            monkeypatch.setattr(module, real.__name__, recorded)
    return calls


@pytest.fixture
def queued(monkeypatch):
    """Jobs dispatched, not run: the indexing job parses in this process, and may."""
    calls: list[tuple[int, ...]] = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: calls.append(ids))
    return calls


@pytest.fixture
def children(monkeypatch):
    """The checks run in a child process, one entry per child started."""
    calls: list[int] = []
    real = completeness.judge_apart

    def counted(parts):  # type: ignore[no-untyped-def]
        calls.append(len(parts))
        return real(parts)

    monkeypatch.setattr(completeness, "judge_apart", counted)
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


async def test_an_accepted_upload_is_checked_in_one_child_with_no_pass_in_the_server(
    sessions, pack_bytes, parses_here, queued, children
):
    uploader, _ = sessions

    status, _ = await asgi(
        "POST", "/codebases/upload/", uploader, upload_body(pack_bytes(), "whole.xml")
    )

    assert status == 302
    codebase = await Codebase.objects.aget()
    assert codebase.source_format == "repomix-xml" and queued == [(codebase.pk,)]
    assert parses_here == []  # style and completeness both judged in the child
    assert children == [1]  # one child for the form and the service together


async def test_an_upload_indexed_with_a_warning_is_checked_in_one_child_too(
    sessions, cut_pack, parses_here, queued, children
):
    uploader, _ = sessions
    body = upload_body(cut_pack, if_incomplete="warn")

    status, _ = await asgi("POST", "/codebases/upload/", uploader, body)

    assert status == 302 and len(queued) == 1
    assert parses_here == [] and children == [1]


async def test_a_zip_is_inspected_in_the_child(sessions, parses_here, queued, children):
    uploader, _ = sessions
    data = ZIP.read_bytes()

    status, _ = await asgi("POST", "/codebases/upload/", uploader, upload_body(data, "repo.zip"))

    assert status == 302
    assert (await Codebase.objects.aget()).source_format == "zip"
    assert parses_here == [] and children == [1]


async def test_a_new_version_is_checked_in_one_child_with_no_pass_in_the_server(
    sessions, pack_bytes, parses_here, queued, children
):
    uploader, _ = sessions
    codebase = await Codebase.objects.acreate(
        owner=await get_user_model().objects.aget(username="uploader"),
        name="sample",
        status=Codebase.Status.READY,
    )
    body = upload_body(pack_bytes("sample.json"), "v2.json")

    status, _ = await asgi("POST", f"/codebases/{codebase.pk}/version/", uploader, body)

    assert status == 302
    await codebase.arefresh_from_db()
    assert codebase.status == Codebase.Status.PENDING and queued == [(codebase.pk,)]
    assert parses_here == [] and children == [1]


async def test_a_pack_the_parser_cannot_read_is_named_from_the_child(
    sessions, parses_here, queued, children
):
    uploader, _ = sessions
    body = upload_body(b"\x89PNG\r\n\x1a\n...", "logo.png")

    status, page = await asgi("POST", "/codebases/upload/", uploader, body)

    assert status == 400
    assert "logo.png: Expected a Repomix pack (a text file) but found a PNG image." in page.decode()
    assert parses_here == [] and children == [1] and queued == []


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
