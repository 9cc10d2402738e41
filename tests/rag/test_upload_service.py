import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404

from rag.models import Codebase
from rag.services import (
    UploadError,
    codebases_for,
    create_codebase_from_upload,
    get_codebase_for,
)

pytestmark = pytest.mark.django_db


def upload(name, data):
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


@pytest.fixture
def dispatched(monkeypatch):
    calls = []
    monkeypatch.setattr(
        "rag.services.dispatch", lambda job, *ids: calls.append((job.__name__, ids))
    )
    return calls


def test_it_saves_the_upload_and_queues_indexing(alice, pack_bytes, dispatched, settings):
    codebase = create_codebase_from_upload(alice, "Todo", [upload("sample.xml", pack_bytes())])
    assert codebase.owner == alice and codebase.name == "Todo"
    assert codebase.status == "pending"
    assert codebase.source_format == "repomix-xml"
    assert codebase.upload_path == f"uploads/{codebase.pk}"
    saved = list((settings.DATA_DIR / codebase.upload_path).iterdir())
    assert [p.read_bytes() for p in saved] == [pack_bytes()]
    assert dispatched == [("index_codebase", (codebase.pk,))]


def test_it_names_the_codebase_after_the_file_when_no_name_is_given(alice, pack_bytes, dispatched):
    codebase = create_codebase_from_upload(
        alice, " ", [upload("repomix-output.json", pack_bytes("sample.json"))]
    )
    assert codebase.name == "repomix-output"


def test_it_rejects_an_empty_file(alice, dispatched, settings):
    with pytest.raises(UploadError, match="empty.xml is empty"):
        create_codebase_from_upload(alice, "x", [upload("empty.xml", b"")])
    assert not Codebase.objects.exists()
    assert dispatched == []


def test_it_rejects_an_oversized_upload(alice, pack_bytes, dispatched, settings):
    settings.PLANAGENTS_MAX_UPLOAD_BYTES = 1024
    with pytest.raises(UploadError, match=r"The upload is 10\.\d KB; the limit is 1\.0 KB"):
        create_codebase_from_upload(alice, "x", [upload("sample.xml", pack_bytes())])
    assert not Codebase.objects.exists()


def test_it_names_what_it_found_instead_of_a_pack(alice, dispatched, settings):
    with pytest.raises(UploadError, match="logo.png: Expected a Repomix pack .* found a PNG image"):
        create_codebase_from_upload(alice, "x", [upload("logo.png", b"\x89PNG\r\n\x1a\nrest")])
    assert not Codebase.objects.exists()
    assert not (settings.DATA_DIR / "uploads").exists()


def test_it_rejects_a_request_without_files(alice, dispatched):
    with pytest.raises(UploadError, match="Choose a Repomix pack"):
        create_codebase_from_upload(alice, "x", [])


def test_it_keeps_every_part_of_a_split_pack(alice, pack_bytes, dispatched, settings):
    parts = [upload("out.1.xml", pack_bytes()), upload("out.2.json", pack_bytes("sample.json"))]
    codebase = create_codebase_from_upload(alice, "split", parts)
    names = sorted(p.name for p in (settings.DATA_DIR / codebase.upload_path).iterdir())
    assert names == ["001-out.1.xml", "002-out.2.json"]


@pytest.mark.django_db(transaction=True)
def test_it_indexes_the_upload_after_the_commit(alice, pack_bytes, monkeypatch):
    ran = []
    monkeypatch.setattr("planagents.jobs._start", lambda job, args: ran.append(job(*args)))
    codebase = create_codebase_from_upload(alice, "Todo", [upload("sample.xml", pack_bytes())])
    assert ran == [None]
    codebase.refresh_from_db()
    assert codebase.status == "ready"
    assert codebase.file_count == 10


def test_it_scopes_codebases_to_their_owner(alice, bob):
    mine = Codebase.objects.create(owner=alice, name="mine")
    Codebase.objects.create(owner=bob, name="theirs")
    assert list(codebases_for(alice)) == [mine]
    assert get_codebase_for(alice, mine.pk) == mine
    with pytest.raises(Http404):
        get_codebase_for(bob, mine.pk)


def child(monkeypatch, script):
    """The upload's checks run `script` in their child process instead."""
    monkeypatch.setattr("rag.completeness.COMMAND", [sys.executable, "-c", script])


def test_a_parser_bug_reaches_the_uploader_as_words_and_the_log_as_a_traceback(
    alice, pack_bytes, dispatched, monkeypatch, caplog
):
    child(
        monkeypatch,
        "import rag.completeness as c\n"
        "def broken(parts):\n"
        "    raise TypeError(\"'NoneType' object is not subscriptable\")\n"
        "c.check_upload = broken\n"
        "c._main()\n",
    )
    with pytest.raises(UploadError) as caught:
        create_codebase_from_upload(alice, "x", [upload("sample.xml", pack_bytes())])
    assert caught.value.message.startswith("The upload could not be read")
    assert "NoneType" not in caught.value.message and "TypeError" not in caught.value.message
    assert "checking an upload (sample.xml) failed" in caplog.text and "NoneType" in caplog.text
    assert not Codebase.objects.exists()


@pytest.mark.parametrize(
    "script",
    [
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
        "print('half a verdict')",
        "import time; time.sleep(30)",
    ],
    ids=["killed", "garbled", "stuck"],
)
def test_an_upload_whose_check_gives_no_verdict_is_refused_not_let_through(
    alice, pack_bytes, dispatched, monkeypatch, caplog, script
):
    child(monkeypatch, script)
    monkeypatch.setattr("rag.completeness.TIMEOUT_SECONDS", 1)
    with pytest.raises(UploadError) as caught:
        create_codebase_from_upload(alice, "x", [upload("sample.xml", pack_bytes())])
    assert caught.value.message.startswith("The upload could not be checked")
    assert "Try again" in caught.value.message
    assert "checking an upload (sample.xml) failed" in caplog.text
    assert not Codebase.objects.exists() and dispatched == []
