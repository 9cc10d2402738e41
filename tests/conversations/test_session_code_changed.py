"""A new version of the codebase under a session (issue 19, item 11): the index keeps only the
latest code, so the session page names the version the session started on and, for each
version indexed since, which files it changed, which of them the session had cited, and from
which message on the agents wrote on the new code."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from conversations import stale
from conversations.models import Message, Plan, PlanningSession, PlanningState
from rag import services as rag_services
from rag.indexing import index_codebase
from tests.conftest import make_codebase
from tests.rag.test_versions import V1, V2, pack

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(user):
    return make_codebase(user, "shop.json", name="shop", data=pack(V1))


def start(user, codebase, status=PlanningSession.Status.RUNNING):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Tax", task="Add tax to invoices",
        agent_a_profile="fake", agent_b_profile="fake", status=status,
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    return session


def say(session, seq, text, cites=()):
    citations = [{"path": p, "start": 1, "end": 2, "exists": True} for p in cites]
    PlanningSession.objects.filter(pk=session.pk).update(last_seq=seq)
    return Message.objects.create(
        session=session, seq=seq, role="agent", agent="A", content=text, citations=citations
    )


def new_version(codebase, files, monkeypatch, data=None):
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: None)
    upload = SimpleUploadedFile("v2.json", data or pack(files))
    rag_services.upload_new_version(codebase, [upload])
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error


def page(client, user, session):
    client.force_login(user)
    response = client.get(reverse("conversations:detail", args=[session.pk]))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def test_a_running_session_says_the_code_changed_under_it_and_which_cited_files(
    client, user, shop, monkeypatch
):
    session = start(user, shop)
    say(session, 1, "Add tax.")
    say(session, 2, "`invoice` builds it.", cites=["app/billing.py", "app/users.py"])
    Plan.objects.create(
        session=session, version=1, markdown="# Plan\n\nChange `app/billing.py:1-2`.\n",
        structured={"summary": "Tax.", "files": [{"path": "app/billing.py", "action": "modify"}]},
    )  # fmt: skip
    new_version(shop, V2, monkeypatch)
    say(session, 3, "Written on the new code.", cites=["app/tax.py"])  # after: not counted
    version = shop.versions.first()
    html = page(client, user, session)
    assert 'title="the version indexed when this session started">v1</a>' in html
    uploaded = timezone.localtime(version.uploaded_at).strftime("%Y-%m-%d %H:%M")
    indexed = timezone.localtime(version.indexed_at).strftime("%Y-%m-%d %H:%M")
    assert (
        "<b>The code changed under this session:</b> "
        f'<a href="/codebases/{shop.pk}/#version-2">version 2</a> '
        f"(uploaded {uploaded}, indexed {indexed}) changed 3 files (1 added, 1 removed, "
        "1 modified), 1 of which this session cites: <code>app/billing.py</code>."
    ) in html
    assert 'Messages from <a href="#m3">#3</a> on were written after it was indexed.' in html
    assert "links to cited lines open the code as it is now" in html
    assert "The plan rests on 1 file that changed" in html


def test_a_finished_session_says_the_change_came_after_it_and_that_it_cites_none(
    client, user, shop, monkeypatch
):
    session = start(user, shop, status=PlanningSession.Status.COMPLETED)
    say(session, 1, "Users are made here.", cites=["app/users.py"])
    new_version(shop, V2, monkeypatch)
    html = page(client, user, session)
    assert "<b>The code changed after this session's last message:</b>" in html
    assert "none of which this session cites." in html
    assert "Every message so far was written before it was indexed." in html
    assert "The plan rests on" not in html  # it has no plan


def test_a_session_started_on_the_latest_version_has_no_banner(client, user, shop, monkeypatch):
    new_version(shop, V2, monkeypatch)
    session = start(user, shop)
    say(session, 1, "Add tax.", cites=["app/billing.py"])
    html = page(client, user, session)
    assert 'title="the version indexed when this session started">v2</a>' in html
    assert "The code changed" not in html


def test_a_version_that_changed_no_file_is_not_announced(client, user, shop, monkeypatch):
    session = start(user, shop)
    # The same files in other bytes (Repomix writes the time into its header).
    with_header = json.dumps({"fileSummary": {"generated": "now"}, "files": V1}).encode()
    new_version(shop, V1, monkeypatch, data=with_header)
    report = stale.session_code(session)
    assert [v.version.number for v in report.later] == [2]
    assert report.changed == []
    assert "The code changed" not in page(client, user, session)


def test_an_open_session_is_told_in_the_conversation_when_a_new_version_is_indexed(
    client, user, shop, monkeypatch, django_capture_on_commit_callbacks
):
    going = start(user, shop, status=PlanningSession.Status.AWAITING_HUMAN)
    ended = start(user, shop, status=PlanningSession.Status.COMPLETED)
    say(going, 1, "Add tax.")
    with django_capture_on_commit_callbacks(execute=True):
        new_version(shop, V2, monkeypatch)
    (notice,) = going.messages.filter(node=stale.NOTICE_NODE)
    assert notice.role == "system" and notice.seq == 2
    assert notice.content.startswith(
        "**The code changed under this session:** version 2 of the codebase (uploaded "
    )
    assert (
        "changed 3 files (1 added, 1 removed, 1 modified): `app/billing.py`, `app/tax.py`, "
        "`app/orders.py`. The index holds only the latest version, so from here on the agents "
        "read the new code; earlier messages cite the code as it was."
    ) in notice.content
    assert not ended.messages.filter(node=stale.NOTICE_NODE).exists()
    # Told once: the notice is no message of the agents' (the banner does not count it).
    assert stale.tell_open_sessions(shop.versions.first().pk) == []
    assert stale.session_code(going).later[0].first_seq is None
