"""Read-only share links: the token opens one session's plan to anyone (what of it: see
test_share_link_pins.py), and nothing else; revoked, expired or made-up tokens open nothing; only
the owner creates and revokes links, and only the token's hash is stored."""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from conversations import sharing
from conversations.models import Message, Plan, PlanningSession, ShareLink
from rag.models import Codebase

pytestmark = pytest.mark.django_db

PLAN_V1 = "# Plan one\n\n1. Change `src/app.py:3`.\n"
PLAN_V2 = "# Plan two\n\n[home](/sessions/) <script>alert('x')</script>\n"
EVIDENCE = "**E1** search → `src/app.py:1-4`\n\n<img src=x onerror=alert(1)>"


def _session(owner, title: str, *plans: str) -> PlanningSession:
    codebase = Codebase.objects.create(owner=owner, name=f"{title} code")
    session = PlanningSession.objects.create(
        owner=owner, codebase=codebase, title=title, task=title,
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    for number, markdown in enumerate(plans, start=1):
        Plan.objects.create(session=session, version=number, markdown=markdown)
    return session


@pytest.fixture
def session(user):
    session = _session(user, "Rate limiting", PLAN_V1, PLAN_V2)
    Message.objects.create(
        session=session, seq=1, role=Message.Role.SYSTEM, node="investigate",
        turn_key="investigate:E1", content=EVIDENCE,
    )  # fmt: skip
    Message.objects.create(
        session=session, seq=2, role=Message.Role.AGENT, agent="A", node="propose_changes",
        content="Agent chatter that is not evidence",
    )  # fmt: skip
    return session


@pytest.fixture
def owner_client(client, user):
    client.force_login(user)
    return client


def _create(client: Client, session: PlanningSession, expiry: str = "never", **choices: str):
    url = reverse("conversations:plan_share", args=[session.pk])
    return client.post(url, {"expiry": expiry, **choices})


# What links made before pins showed, and still show (migration 0008).
EVERYTHING = {"pin": "latest", "shows_rules": "1", "shows_evidence": "1"}


def _shared(token: str) -> str:
    return reverse("conversations:plan_shared", kwargs={"token": token})


def _token(response) -> str:
    match = re.search(r"/sessions/s/([A-Za-z0-9_-]+)/", response.content.decode())
    assert match, "the new link is shown to the owner"
    return match.group(1)


class _Hrefs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[str] = []
        self.forms = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.forms += tag == "form"
        self.tags.append(tag)
        self.attributes += [k for k, _ in attrs]
        self.urls += [v or "" for k, v in attrs if k in ("href", "src", "action")]


def test_the_owner_creates_a_link_and_sees_it_once(owner_client, session):
    response = _create(owner_client, session, "7d")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    token = _token(response)
    link = ShareLink.objects.get(session=session)
    assert link.created_by == session.owner
    assert link.expires_at is not None
    assert timedelta(days=7) - (link.expires_at - timezone.now()) < timedelta(minutes=1)
    page = owner_client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert token not in page and token[-4:] not in page
    assert "Revoke" in page


def test_every_expiry_the_form_offers_is_accepted(owner_client, session):
    page = owner_client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    offered = re.findall(r'<option value="([^"]+)"', page.split("plan-share")[1])
    assert sorted(offered) == sorted(sharing.EXPIRY_CHOICES)
    for value in offered:
        assert _create(owner_client, session, value).status_code == 200
    assert ShareLink.objects.filter(session=session, expires_at__isnull=True).count() == 1
    assert _create(owner_client, session, "forever").status_code == 302
    assert ShareLink.objects.filter(session=session).count() == len(offered)


def test_the_token_is_not_stored_raw(owner_client, session):
    token = _token(_create(owner_client, session))
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM conversations_sharelink")
        rows = cursor.fetchall()
    assert len(rows) == 1
    dump = repr(rows)
    assert token not in dump
    assert sharing.hash_token(token) in dump


def test_an_always_latest_link_shows_the_plan_versions_and_evidence_to_anyone(
    owner_client, session
):
    token = _token(_create(owner_client, session, **EVERYTHING))
    anonymous = Client()
    response = anonymous.get(_shared(token))
    assert response.status_code == 200
    assert response["X-Robots-Tag"].startswith("noindex")
    assert response["Referrer-Policy"] == "no-referrer"
    page = response.content.decode()
    assert "Plan two" in page and "Plan one" not in page  # the latest version
    assert "v1" in page and "v2" in page
    assert "E1" in page and "Agent chatter" not in page
    older = anonymous.get(_shared(token), {"version": "1"}).content.decode()
    assert "Plan one" in older and "Plan two" not in older


def test_the_shared_page_sanitizes_the_plan_and_the_evidence(owner_client, session):
    token = _token(_create(owner_client, session, **EVERYTHING))
    assert "E1" in Client().get(_shared(token)).content.decode()
    page = Client().get(_shared(token)).content.decode()
    parser = _Hrefs()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert not [name for name in parser.attributes if name.startswith("on")]
    assert "&lt;script&gt;alert" in page  # shown as text, not run


@pytest.mark.parametrize("choices", [{}, EVERYTHING], ids=["pinned", "always-latest"])
def test_the_shared_page_holds_no_way_into_the_app(owner_client, session, other_user, choices):
    token = _token(_create(owner_client, session, **choices))
    other = Client()
    other.force_login(other_user)
    for client in (Client(), other, owner_client):
        response = client.get(_shared(token))
        page = response.content.decode()
        parser = _Hrefs()
        parser.feed(page)
        assert parser.forms == 0  # no actions, not even for the owner
        for url in parser.urls:
            allowed = url.startswith(("/static/", "?version=")) or url == _shared(token)
            # Links written in the plan itself are the author's content, not the app's.
            assert allowed or url == "/sessions/", url
        assert "alice" not in page and "mallory" not in page
        assert "Log out" not in page and "Revoke" not in page


@pytest.mark.parametrize("change", ["revoked", "expired"])
def test_a_revoked_or_expired_link_is_not_found(owner_client, session, change):
    token = _token(_create(owner_client, session))
    link = ShareLink.objects.get()
    if change == "revoked":
        link.revoked_at = timezone.now()
    else:
        link.expires_at = timezone.now() - timedelta(seconds=1)
    link.save()
    assert Client().get(_shared(token)).status_code == 404


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: t[:-1],
        lambda t: t + "A",
        lambda t: sharing.hash_token(t),  # the stored hash is not a key
        lambda t: "x",
    ],
)
def test_a_tampered_token_is_not_found(owner_client, session, tamper):
    token = _token(_create(owner_client, session))
    assert Client().get(_shared(tamper(token))).status_code == 404


def test_a_token_shows_its_own_session_and_none_other(owner_client, session, other_user):
    theirs = _session(other_user, "Someone else's", "# Their secret plan\n", "# v2\n", "# v3\n")
    always_latest = sharing.ShareChoices(pin="latest")
    their_token = sharing.create_link(other_user, theirs.pk, "never", always_latest).token
    token = _token(_create(owner_client, session, pin="latest"))
    page = Client().get(_shared(token)).content.decode()
    assert "Their secret plan" not in page
    # Version 3 exists, but only in the other session.
    assert Client().get(_shared(token), {"version": "3"}).status_code == 404
    theirs_page = Client().get(_shared(their_token), {"version": "1"}).content.decode()
    assert "Their secret plan" in theirs_page


def test_the_shared_page_only_answers_reads(owner_client, session):
    token = _token(_create(owner_client, session))
    assert Client().post(_shared(token)).status_code == 405


def test_only_the_owner_creates_links(client, session, other_user):
    client.force_login(other_user)
    assert _create(client, session).status_code == 404
    assert not ShareLink.objects.exists()
    anonymous = _create(Client(), session)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert not ShareLink.objects.exists()


def test_creating_needs_a_post(owner_client, session):
    url = reverse("conversations:plan_share", args=[session.pk])
    assert owner_client.get(url).status_code == 405
    assert not ShareLink.objects.exists()


def test_the_owner_revokes_a_link(owner_client, session):
    token = _token(_create(owner_client, session))
    link = ShareLink.objects.get()
    url = reverse("conversations:plan_share_revoke", args=[session.pk, link.pk])
    response = owner_client.post(url)
    assert response.status_code == 302
    link.refresh_from_db()
    assert link.revoked_at is not None
    assert Client().get(_shared(token)).status_code == 404
    page = owner_client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert "No active links" in page


def test_only_the_owner_revokes_and_nothing_changes_otherwise(
    owner_client, session, client, other_user
):
    token = _token(_create(owner_client, session))
    link = ShareLink.objects.get()
    mine = reverse("conversations:plan_share_revoke", args=[session.pk, link.pk])
    theirs = _session(other_user, "Mallory's", "# Plan\n")
    # The other user's own session id with the owner's link id: still not theirs.
    crossed = reverse("conversations:plan_share_revoke", args=[theirs.pk, link.pk])
    client.force_login(other_user)
    assert client.post(mine).status_code == 404
    assert client.post(crossed).status_code == 404
    assert Client().post(mine).status_code == 302  # to the login page
    assert owner_client.get(mine).status_code == 405
    link.refresh_from_db()
    assert link.revoked_at is None
    assert Client().get(_shared(token)).status_code == 200


def test_staff_revoke_links_from_the_admin(owner_client, session, admin_user):
    token = _token(_create(owner_client, session))
    staff = Client()
    staff.force_login(admin_user)
    assert staff.get(reverse("admin:conversations_sharelink_add")).status_code == 403
    listing = staff.get(reverse("admin:conversations_sharelink_changelist"))
    assert listing.status_code == 200
    assert "Rate limiting" in listing.content.decode() and token not in listing.content.decode()
    staff.post(
        reverse("admin:conversations_sharelink_changelist"),
        {"action": "revoke_links", "_selected_action": [ShareLink.objects.get().pk]},
    )
    assert ShareLink.objects.get().revoked_at is not None
    assert Client().get(_shared(token)).status_code == 404
