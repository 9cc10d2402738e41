"""Comments on the plan page: a thread on a step, a section or a cited line of the version on
screen, answered, resolved and reopened by the owner; carried to the step of a later version
that is the same step, shown as outdated where there is none; escaped; the owner's alone."""

import copy

import pytest
from django.urls import reverse

from agents.plan_sections import save_version
from conversations.models import Plan, PlanComment, PlanningSession, PlanningState
from tests.conversations.spec_plan import STRUCTURED

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    data = {**copy.deepcopy(STRUCTURED), "citations": [
        {"path": "todo/api.py", "start": 27, "end": 32, "exists": True}
    ]}  # fmt: skip
    Plan.objects.create(session=session, version=1, markdown="# Plan\n", structured=data)
    return session


def comment(client, session, where, text, version=1):
    url = reverse("conversations:plan_comment_add", args=[session.pk])
    return client.post(url, {"version": version, "where": where, "text": text})


def page(client, session, version=None):
    url = reverse("conversations:plan", args=[session.pk])
    return client.get(url + (f"?version={version}" if version else "")).content.decode()


def test_the_owner_comments_on_a_step_a_section_and_a_cited_line(client, user, session):
    client.force_login(user)
    assert comment(client, session, "step-1", "Count per IP too.").status_code == 302
    comment(client, session, "testing", "Test the reset.")
    comment(client, session, "line:todo/api.py:27", "This reads the whole body.")
    step, testing, line = PlanComment.objects.order_by("pk")
    assert (step.anchor_kind, step.anchor["target"]["name"], step.plan.version) == (
        "step",
        "login",
        1,
    )
    assert (testing.anchor_kind, testing.anchor["key"]) == ("section", "testing")
    assert (line.anchor_kind, line.anchor) == ("line", {"path": "todo/api.py", "line": 27})
    html = page(client, session)
    assert "Count per IP too." in html and "Test the reset." in html
    assert "Cited line <code>todo/api.py:27</code>" in html
    assert "3 open · 3 threads" in html


def test_a_line_the_version_does_not_cite_is_refused(client, user, session):
    client.force_login(user)
    comment(client, session, "line:todo/api.py:99", "Here?")
    comment(client, session, "step-9", "No such step.")
    assert PlanComment.objects.count() == 0


def test_a_thread_is_answered_resolved_and_reopened(client, user, session):
    client.force_login(user)
    comment(client, session, "step-2", "Name it LoginLimiter.")
    thread = PlanComment.objects.get()
    reply = reverse("conversations:plan_comment_reply", args=[session.pk, thread.pk])
    client.post(reply, {"version": 1, "text": "Done in v2."})
    assert thread.replies.get().text == "Done in v2."
    status = reverse("conversations:plan_comment_status", args=[session.pk, thread.pk])
    client.post(status, {"version": 1, "status": "resolved"})
    thread.refresh_from_db()
    assert (thread.status, thread.resolved_by) == ("resolved", user)
    assert "Reopen" in page(client, session)
    client.post(status, {"version": 1, "status": "open"})
    thread.refresh_from_db()
    assert (thread.status, thread.resolved_by) == ("open", None)


def test_a_new_version_carries_the_comment_to_the_same_step_or_marks_it_outdated(
    client, user, session
):
    client.force_login(user)
    comment(client, session, "step-1", "Count per IP too.")
    comment(client, session, "step-3", "Use the audit log.")
    v1 = Plan.objects.get(session=session, version=1)
    steps = copy.deepcopy(v1.structured["steps"])
    new_first = {"title": "Read LOGIN_LIMIT", "detail": "From settings.", "files": []}
    # Step 1 moves to step 2; "Log refusals" is gone.
    data = {**v1.structured, "steps": [new_first, steps[0], steps[1]]}
    save_version(v1, data, kind=Plan.Author.HUMAN, author=user, note="Edited Steps")
    html = page(client, session, 2)
    assert '<a href="#section-step-2">Step 2</a>' in html
    assert "1 open · 1 outdated · 2 threads" in html  # an outdated one is not counted open
    carried, outdated = html.split('class="comment-group outdated"')
    assert "Count per IP too." in carried and "here by same definition" in carried
    assert "Use the audit log." in outdated and ">outdated<" in outdated
    # Nothing was dropped: the old version still shows both where they were written.
    old = page(client, session, 1)
    assert "2 open · 2 threads" in old
    # The old version is read-only: its threads are shown, comments go on the latest.
    assert "<textarea" not in old and "comment, answer and resolve on" in old
    comment(client, session, "summary", "Too late.", version=1)
    assert PlanComment.objects.count() == 2


def test_comment_text_is_shown_escaped(client, user, session):
    client.force_login(user)
    comment(client, session, "summary", "<script>alert(1)</script> <b>x</b>")
    html = page(client, session)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;x&lt;/b&gt;" in html


def test_another_user_cannot_comment_answer_or_resolve(client, user, other_user, session):
    client.force_login(user)
    comment(client, session, "summary", "Mine.")
    thread = PlanComment.objects.get()
    client.force_login(other_user)
    assert comment(client, session, "summary", "Theirs.").status_code == 404
    reply = reverse("conversations:plan_comment_reply", args=[session.pk, thread.pk])
    assert client.post(reply, {"version": 1, "text": "x"}).status_code == 404
    status = reverse("conversations:plan_comment_status", args=[session.pk, thread.pk])
    assert client.post(status, {"version": 1, "status": "resolved"}).status_code == 404
    revise = reverse("conversations:plan_comments_revise", args=[session.pk])
    assert client.post(revise).status_code == 404
    assert list(PlanComment.objects.values_list("text", "status")) == [("Mine.", "open")]
