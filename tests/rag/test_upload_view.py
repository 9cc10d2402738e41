import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.models import Codebase

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_jobs(monkeypatch):
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: None)


def test_it_shows_the_form(alice_client):
    response = alice_client.get("/codebases/upload/")
    assert response.status_code == 200
    assert b'type="file"' in response.content and b"multiple" in response.content


def test_it_redirects_to_the_new_codebase(alice_client, alice, pack_bytes):
    pack = SimpleUploadedFile("sample.xml", pack_bytes())
    response = alice_client.post("/codebases/upload/", {"name": "Todo", "pack": pack})
    codebase = Codebase.objects.get(owner=alice)
    assert response.status_code == 302
    assert response["Location"] == f"/codebases/{codebase.pk}/"


def test_it_accepts_several_files_at_once(alice_client, alice, pack_bytes):
    packs = [
        SimpleUploadedFile("a.xml", pack_bytes()),
        SimpleUploadedFile("b.json", pack_bytes("sample.json")),
    ]
    response = alice_client.post("/codebases/upload/", {"name": "", "pack": packs})
    assert response.status_code == 302
    assert Codebase.objects.get(owner=alice).name == "a"


def test_it_rerenders_the_form_with_the_error(alice_client):
    png = SimpleUploadedFile("logo.png", b"\x89PNG\r\n\x1a\n...")
    response = alice_client.post("/codebases/upload/", {"name": "x", "pack": png})
    assert response.status_code == 400
    assert b"found a PNG image" in response.content
    assert not Codebase.objects.exists()


def test_it_asks_for_a_file_when_none_was_sent(alice_client):
    response = alice_client.post("/codebases/upload/", {"name": "x"})
    assert response.status_code == 400
    assert b"This field is required" in response.content


@pytest.mark.django_db(transaction=True)
async def test_the_upload_is_checked_and_parsed_off_the_event_loop(
    async_client, alice, pack_bytes, monkeypatch
):
    """The upload view is sync (Django runs it on a worker thread) and parsing is the job's,
    on a thread of its own: a big upload never stalls the loop other users' pages run on."""
    from planagents import jobs
    from rag import forms, indexing

    monkeypatch.setattr("rag.services.dispatch", jobs.dispatch)  # the real seam, not no_jobs
    threads: dict[str, int] = {}

    def on_thread(name, real):
        def call(*args):
            threads[name] = threading.get_ident()
            return real(*args)

        return call

    monkeypatch.setattr(forms, "check_uploads", on_thread("check", forms.check_uploads))
    monkeypatch.setattr(indexing, "parse_upload", on_thread("parse", indexing.parse_upload))
    loop_thread = threading.get_ident()
    await async_client.aforce_login(alice)
    pack = SimpleUploadedFile("sample.xml", pack_bytes())
    response = await async_client.post("/codebases/upload/", {"pack": pack})
    assert response.status_code == 302
    await jobs.wait_for_jobs(timeout=120)
    codebase = await Codebase.objects.aget(owner=alice)
    assert codebase.status == "ready", codebase.error
    assert loop_thread not in (threads["check"], threads["parse"])
    assert threads["check"] != threads["parse"]  # nor on the thread sync views share
