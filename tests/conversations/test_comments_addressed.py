"""Where a reader sees what comments did: the compare page lists the comments each version was
asked to address, with their state in the newer version (open, resolved or outdated), and each
section of the latest version has its own Comment form, anchored to it."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse

from conversations.models import (
    CommentRequest,
    Message,
    Plan,
    PlanComment,
    PlanningSession,
    Reviewer,
)
from rag.models import Codebase
from tests.conversations.spec_plan import STRUCTURED

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user):
    codebase = Codebase.objects.create(owner=user, name="todo")
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    Plan.objects.create(
        session=session, version=1, markdown="# Plan\n", structured=copy.deepcopy(STRUCTURED)
    )
    return session


def version(session, number, steps, kind=Plan.Author.AGENT) -> Plan:
    data = {**copy.deepcopy(STRUCTURED), "steps": steps}
    return Plan.objects.create(
        session=session, version=number, markdown=f"# Plan v{number}\n", structured=data,
        author_kind=kind,
    )  # fmt: skip


def on_step(user, plan, n, text, **extra) -> PlanComment:
    step = plan.structured["steps"][n - 1]
    anchor = {"target": step.get("target") and {k: step["target"][k] for k in ("kind", "name",
              "path") if k in step["target"]}, "title": step["title"], "detail": step["detail"]}  # fmt: skip
    return PlanComment.objects.create(
        session=plan.session, plan=plan, author=user, anchor_kind="step", anchor=anchor,
        text=text, **extra,
    )  # fmt: skip


def test_the_compare_page_lists_what_each_version_was_asked_to_address_and_its_state_now(
    client, user, session
):
    v1 = session.plans.get(version=1)
    count = on_step(user, v1, 1, "Count per IP too.")
    log = on_step(user, v1, 3, "Use the audit log.")
    guest = on_step(None, v1, 2, "Name it LoginLimiter.", guest_name="Ann")
    message = Message.objects.create(session=session, seq=1, role="user", content="Revise")
    request = CommentRequest.objects.create(session=session, base=v1, section="", message=message)
    request.comments.set([count, log, guest])
    steps = copy.deepcopy(STRUCTURED["steps"])
    version(session, 2, steps[:2])  # the agents' revision: "Log refusals" is gone
    PlanComment.objects.filter(pk=guest.pk).update(status="resolved")
    version(session, 3, steps[:2], kind=Plan.Author.HUMAN)  # asked nothing
    client.force_login(user)
    url = reverse("conversations:plan_compare", args=[session.pk])
    html = client.get(url + "?a=1&b=3").content.decode()
    listed = html.split('id="addressed"', 1)[1]
    assert "v2 was asked to address:" in listed and "v3 was asked" not in listed
    rows = listed.split('<li class="addressed-comment">')[1:]
    assert len(rows) == 3
    states = {c.text: row for c in (count, log, guest) for row in rows if c.text in row}
    assert "open in v3" in states[count.text]
    assert "outdated in v3" in states[log.text]
    assert "resolved in v3" in states[guest.text] and "via share link" in states[guest.text]
    assert f'href="/sessions/{session.pk}/plan/?version=3#comment-{count.pk}"' in listed
    # Versions before the request are out of the range compared: nothing addressed there.
    html = client.get(url + "?a=2&b=3").content.decode()
    assert 'id="addressed"' not in html


def test_each_section_of_the_latest_version_has_a_comment_form_anchored_to_it(
    client, user, other_user, session
):
    client.force_login(user)
    url = reverse("conversations:plan", args=[session.pk])
    html = client.get(url).content.decode()
    for key, label in (("summary", "Summary"), ("step-2", "Step 2"), ("testing", "Testing")):
        section = html.split(f'id="section-{key}"', 1)[1].split('class="section-controls', 1)[0]
        assert "<summary>Comment</summary>" in section
        assert f'<input type="hidden" name="where" value="{key}">' in section
        assert f"Comment on {label}</button>" in section
    add = reverse("conversations:plan_comment_add", args=[session.pk])
    client.post(add, {"version": 1, "where": "step-2", "text": "Name it LoginLimiter."})
    assert PlanComment.objects.get().anchor["title"] == "Add the limiter"
    # A commenter gets the forms, a viewer none; an old version has none.
    Reviewer.objects.create(user=other_user, role="viewer", session=session)
    client.force_login(other_user)
    assert "<summary>Comment</summary>" not in client.get(url).content.decode()
    Reviewer.objects.filter(user=other_user).update(role="commenter")
    assert "<summary>Comment</summary>" in client.get(url).content.decode()
    version(session, 2, copy.deepcopy(STRUCTURED["steps"]))
    client.force_login(user)
    assert "<summary>Comment</summary>" not in client.get(url + "?version=1").content.decode()
