"""Comments through a "may comment" share link: a reader without an account comments on a step,
a section or a cited line of the version the link shows, under a name they give; the comment is
stored as coming through the link (no user), shown everywhere marked "via share link", placed
in later versions and prompted like any other. A read-only, revoked, expired or made-up link
takes nothing, a pinned link no other version; names and texts are bounded and escaped, posts
are rate-limited and need the CSRF token, and such a reader resolves and answers nothing."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.plan_writer import regenerate_section
from agents.providers.fake import FakeProvider
from conversations import link_comments, plan_sections, sharing
from conversations.models import Plan, PlanComment, PlanningSession, PlanningState, Reviewer
from rag.models import Codebase
from tests.conversations.spec_plan import STRUCTURED

pytestmark = pytest.mark.django_db

CITED = {"path": "todo/api.py", "start": 27, "end": 32, "exists": True}


@pytest.fixture(autouse=True)
def _fresh_rates(monkeypatch):
    """The rates are counted in the process's cache, which outlives a test, in windows of the
    clock, held here in the middle of one so a test never straddles two."""
    monkeypatch.setattr(link_comments, "clock", lambda: 1_800_000_030.0)
    cache.clear()
    yield
    cache.clear()


def next_version(session, steps=None) -> Plan:
    """The session's next version, the latest's data with `steps` if given."""
    latest = session.plans.order_by("-version").first()
    data = copy.deepcopy(latest.structured)
    if steps is not None:
        data["steps"] = steps
    return Plan.objects.create(
        session=session, version=latest.version + 1, markdown="# Plan\n", structured=data
    )


@pytest.fixture
def session(user):
    return make_session(user, Codebase.objects.create(owner=user, name="todo"))


def make_session(user, codebase) -> PlanningSession:
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    data = {**copy.deepcopy(STRUCTURED), "citations": [dict(CITED)]}
    Plan.objects.create(session=session, version=1, markdown="# Plan\n\nv1\n", structured=data)
    return session


def make_link(user, session, **choices) -> str:
    """A new link's token, as the owner's form makes it (may comment unless told otherwise)."""
    made = sharing.create_link(
        user, session.pk, "never", sharing.ShareChoices(**{"may_comment": True, **choices})
    )
    return made.token


def post(client, token, where="step-1", text="Count per IP too.", name="Ann", version=1, **extra):
    url = reverse("conversations:plan_shared_comment", kwargs={"token": token})
    return client.post(
        url, {"version": version, "where": where, "name": name, "text": text}, **extra
    )


def shared_page(client, token, version=None) -> str:
    url = reverse("conversations:plan_shared", kwargs={"token": token})
    response = client.get(url + (f"?version={version}" if version else ""))
    assert response.status_code == 200
    return response.content.decode()


def test_a_reader_comments_on_a_step_a_section_and_a_cited_line_under_a_name(user, session):
    token = make_link(user, session)
    reader = Client()
    html = shared_page(reader, token)
    assert 'name="name"' in html and '<option value="line:todo/api.py:27">' in html
    response = post(reader, token, "step-1", "Count per IP too.", name="  Ann \n Lee ")
    step = PlanComment.objects.get()
    assert response.status_code == 302
    assert response["Location"].endswith(f"?version=1#comment-{step.pk}")
    post(reader, token, "testing", "Test the reset.", name="Bo")
    post(reader, token, "line:todo/api.py:27", "Reads the body twice.", name="Cy")
    step, testing, line = PlanComment.objects.order_by("pk")
    link = session.share_links.get()
    assert [(c.author, c.share_link, c.guest_name, c.plan.version) for c in (step, testing, line)] == [
        (None, link, "Ann Lee", 1), (None, link, "Bo", 1), (None, link, "Cy", 1)
    ]  # fmt: skip
    assert step.anchor["target"]["name"] == "login" and testing.anchor["key"] == "testing"
    assert line.anchor == {"path": "todo/api.py", "line": 27}
    html = shared_page(reader, token)
    assert html.count(">via share link<") == 3
    assert "Ann Lee" in html and "Count per IP too." in html and "3 threads" in html


def test_the_owner_and_a_reviewer_see_a_link_comment_marked_via_share_link(
    client, user, other_user, session
):
    token = make_link(user, session)
    post(Client(), token, "step-1", "Count per IP too.", name="Ann")
    Reviewer.objects.create(user=other_user, role="viewer", session=session)
    url = reverse("conversations:plan", args=[session.pk])
    for reader in (user, other_user):
        client.force_login(reader)
        html = client.get(url).content.decode()
        assert "Count per IP too." in html
        assert 'Ann <span class="badge via-link"' in html and ">via share link</span>" in html


def test_a_links_page_shows_the_threads_started_through_it_and_not_the_teams(client, user, session):
    token, other = make_link(user, session), make_link(user, session)
    post(Client(), token, "summary", "Through this link.", name="Ann")
    post(Client(), other, "summary", "Through another link.", name="Bo")
    client.force_login(user)
    add = reverse("conversations:plan_comment_add", args=[session.pk])
    client.post(add, {"version": 1, "where": "summary", "text": "The team thread."})
    thread = PlanComment.objects.get(text="Through this link.")
    reply = reverse("conversations:plan_comment_reply", args=[session.pk, thread.pk])
    client.post(reply, {"version": 1, "text": "The owner answers."})
    html = shared_page(Client(), token)
    assert "Through this link." in html and "The owner answers." in html
    assert "Through another link." not in html and "The team thread." not in html


def test_a_logged_in_reader_comments_through_a_link_as_a_guest_not_as_their_account(
    client, user, other_user, session
):
    token = make_link(user, session)
    client.force_login(other_user)
    assert post(client, token, name="Mal").status_code == 302
    comment = PlanComment.objects.get()
    assert (comment.author, comment.guest_name) == (None, "Mal")


def test_a_read_only_link_takes_no_comment(user, session):
    token = make_link(user, session, may_comment=False)
    reader = Client()
    assert 'name="name"' not in shared_page(reader, token)
    assert post(reader, token).status_code == 403
    assert not PlanComment.objects.exists()


def test_a_revoked_an_expired_or_a_made_up_link_takes_nothing(user, session):
    revoked, expired = make_link(user, session), make_link(user, session)
    first, second = session.share_links.order_by("pk")
    sharing.revoke_link(user, session.pk, first.pk)
    second.expires_at = timezone.now() - timedelta(seconds=1)
    second.save()
    reader = Client()
    for token in (revoked, expired, "A" * 43, "not a token"):
        assert post(reader, token).status_code == 404, token
    assert not PlanComment.objects.exists()


def test_a_pinned_link_takes_comments_on_its_version_and_no_other(user, session):
    token = make_link(user, session)  # pins v1
    next_version(session)
    reader = Client()
    assert post(reader, token, version=2).status_code == 404
    assert post(reader, token, version=1).status_code == 302  # its own, though v2 is newer
    assert list(PlanComment.objects.values_list("plan__version", flat=True)) == [1]


def test_an_always_latest_link_takes_comments_on_the_latest_version_only(user, session):
    token = make_link(user, session, pin="latest")
    next_version(session)
    reader = Client()
    assert 'name="name"' not in shared_page(reader, token, version=1)
    assert post(reader, token, version=1).status_code == 403
    assert post(reader, token, version=2).status_code == 302
    assert list(PlanComment.objects.values_list("plan__version", flat=True)) == [2]


def test_a_name_is_required_on_one_line_and_bounded(user, session):
    token = make_link(user, session)
    reader = Client()
    limit = link_comments.MAX_NAME_CHARS
    for name, said in (
        ("", "Give a name"),
        (" \n\t", "Give a name"),
        ("x" * (limit + 1), f"Keep your name under {limit} characters."),
        ("Ann\x00", "A name is letters"),
        ("A" * 100_000, "Keep your name under"),
    ):
        response = post(reader, token, name=name, text="Kept when refused.")
        assert response.status_code == 400, name[:20]
        html = response.content.decode()
        assert said in html and "Kept when refused." in html  # the form keeps what was typed
    assert post(reader, token, name="x" * limit).status_code == 302
    assert PlanComment.objects.get().guest_name == "x" * limit


def test_a_comment_is_required_bounded_and_on_a_section_or_line_the_version_has(user, session):
    token = make_link(user, session)
    reader = Client()
    assert post(reader, token, text="").status_code == 400
    assert post(reader, token, text="y" * 4001).status_code == 400
    assert post(reader, token, where="step-9").status_code == 400
    assert post(reader, token, where="line:todo/api.py:99").status_code == 400
    assert post(reader, token, where="line:/etc/passwd:1").status_code == 400
    assert not PlanComment.objects.exists()


def test_script_in_a_name_or_a_comment_is_shown_escaped_everywhere(client, user, session):
    token = make_link(user, session)
    reader = Client()
    post(reader, token, "summary", "<script>alert(1)</script>", name="<img src=x onerror=alert(2)>")
    client.force_login(user)
    pages = [
        shared_page(reader, token),
        client.get(reverse("conversations:plan", args=[session.pk])).content.decode(),
    ]
    for html in pages:
        assert "<script>alert(1)</script>" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_past_the_rate_per_address_a_reader_gets_a_429_that_says_when_to_try_again(user, session):
    token = make_link(user, session)
    reader = Client()
    limit = link_comments.PER_CLIENT.limit
    for n in range(limit):
        assert post(reader, token, text=f"Comment {n}").status_code == 302
    response = post(reader, token, text="One too many.")
    assert response.status_code == 429
    html = response.content.decode()
    assert f"{limit} comments were written from your address in the last minute" in html
    assert "try again in" in html and "One too many." in html
    assert PlanComment.objects.count() == limit
    # Another address is counted apart, and another link is no way around one's own count.
    assert post(reader, token, text="From elsewhere.", REMOTE_ADDR="10.0.0.9").status_code == 302
    other_link = make_link(user, session)
    assert post(reader, other_link, text="Same address.").status_code == 429


def test_past_the_rate_per_link_every_address_gets_a_429(user, session, monkeypatch):
    monkeypatch.setattr(link_comments, "PER_LINK", link_comments.Rate(3, 3600, "through it"))
    token = make_link(user, session)
    reader = Client()
    for n in range(3):
        assert post(reader, token, REMOTE_ADDR=f"10.0.1.{n}").status_code == 302
    assert post(reader, token, REMOTE_ADDR="10.0.1.200").status_code == 429
    assert post(reader, make_link(user, session), REMOTE_ADDR="10.0.1.201").status_code == 302
    assert PlanComment.objects.count() == 4


def test_a_link_that_takes_comments_keeps_its_referrer_on_this_site_and_a_read_only_one_nowhere(
    user, session
):
    # A form posted under "no-referrer" carries "Origin: null", which fails the CSRF check
    # (the browser test found it); "same-origin" still gives no other site the token.
    for may_comment, policy in ((True, "same-origin"), (False, "no-referrer")):
        token = make_link(user, session, may_comment=may_comment)
        response = Client().get(reverse("conversations:plan_shared", kwargs={"token": token}))
        assert response["Referrer-Policy"] == policy
        assert f'<meta name="referrer" content="{policy}">' in response.content.decode()


def test_a_link_comment_needs_the_csrf_token(user, session):
    token = make_link(user, session)
    reader = Client(enforce_csrf_checks=True)
    assert post(reader, token).status_code == 403
    html = shared_page(reader, token)
    csrf = html.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    url = reverse("conversations:plan_shared_comment", kwargs={"token": token})
    body = {
        "version": 1,
        "where": "summary",
        "name": "Ann",
        "text": "Hi",
        "csrfmiddlewaretoken": csrf,
    }
    assert reader.post(url, body, HTTP_ORIGIN="null").status_code == 403  # as under no-referrer
    assert reader.post(url, body, HTTP_ORIGIN="http://testserver").status_code == 302
    assert PlanComment.objects.count() == 1


def test_a_link_reader_cannot_answer_resolve_or_edit_and_no_reviewer_resolves_their_thread(
    client, user, other_user, session
):
    token = make_link(user, session)
    reader = Client()
    post(reader, token, "summary", "Mine.")
    thread = PlanComment.objects.get()
    for name, kwargs, body in (
        ("plan_comment_reply", {"comment_id": thread.pk}, {"version": 1, "text": "x"}),
        ("plan_comment_status", {"comment_id": thread.pk}, {"version": 1, "status": "resolved"}),
        ("plan_section_edit", {"key": "summary"}, {"version": 1, "text": "pwned"}),
        ("plan_comment_add", {}, {"version": 1, "where": "summary", "text": "x"}),
    ):
        url = reverse(f"conversations:{name}", kwargs={"session_id": session.pk, **kwargs})
        response = reader.post(url, body)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    # A commenter may resolve their own threads; a link's thread is nobody's but the owner's.
    Reviewer.objects.create(user=other_user, role="commenter", session=session)
    client.force_login(other_user)
    status = reverse("conversations:plan_comment_status", args=[session.pk, thread.pk])
    assert client.post(status, {"version": 1, "status": "resolved"}).status_code == 404
    assert list(PlanComment.objects.values_list("text", "status")) == [("Mine.", "open")]
    client.force_login(user)
    client.post(status, {"version": 1, "status": "resolved"})
    assert PlanComment.objects.get().status == "resolved"


def test_a_link_comment_is_carried_to_a_later_version_or_marked_outdated(client, user, session):
    token = make_link(user, session, pin="latest")
    reader = Client()
    post(reader, token, "step-1", "Count per IP too.")
    post(reader, token, "step-3", "Use the audit log.")
    steps = copy.deepcopy(STRUCTURED["steps"])
    new_first = {"title": "Read LOGIN_LIMIT", "detail": "From settings.", "files": []}
    next_version(session, [new_first, steps[0], steps[1]])  # "Log refusals" is gone
    client.force_login(user)
    html = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    carried, outdated = html.split('class="comment-group outdated"')
    assert "Count per IP too." in carried and "here by same definition" in carried
    assert "Use the audit log." in outdated
    shared = shared_page(reader, token)  # the link's own readers see the same placing
    assert "Use the audit log." in shared and ">outdated<" in shared


def test_regenerating_with_the_open_comments_prompts_a_link_comment_marked_as_one(
    user, codebase, monkeypatch
):
    session = make_session(user, codebase)
    token = make_link(user, session)
    post(Client(), token, "step-1", "Count per IP address as well.", name="Ann")
    jobs = []
    monkeypatch.setattr(plan_sections, "dispatch", lambda job, *args: jobs.append(args))
    plan_sections.request_regeneration(user, session.pk, 1, "step-1", "", with_comments=True)
    FakeProvider.script("fake", json.dumps({"steps": [STRUCTURED["steps"][0]]}))
    (args,) = jobs
    regenerate_section(*args)
    prompt = FakeProvider.calls("fake")[-1].prompt
    comment = PlanComment.objects.get()
    assert (
        f"- Comment #{comment.pk} on Step 1, the step “Count failed logins” (login in "
        "todo/api.py) (from “Ann”, a reader without an account, via a share link): "
        "Count per IP address as well." in prompt
    )


def test_the_owner_makes_a_link_that_may_comment_only_when_ticked(client, user, session):
    client.force_login(user)
    url = reverse("conversations:plan_share", args=[session.pk])
    client.post(url, {"expiry": "never"})
    response = client.post(url, {"expiry": "never", "may_comment": "1"})
    assert "and comment on it under a name they give" in response.content.decode()
    assert [link.may_comment for link in session.share_links.order_by("pk")] == [False, True]
    html = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert "<td>open</td>" in html and "<td>read-only</td>" in html


def test_staff_see_link_comments_in_the_admin_marked_as_such(client, user, session, admin_user):
    token = make_link(user, session)
    post(Client(), token, "summary", "Hello.", name="Ann")
    client.force_login(admin_user)
    html = client.get(reverse("admin:conversations_plancomment_changelist")).content.decode()
    assert "Ann (via share link)" in html
