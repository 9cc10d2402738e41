"""Comments reach the model: "regenerate with the open comments", of one section or of the
whole plan (through Revise), puts each open comment with its anchor into the prompt and no
resolved or outdated one; the request records which comments it held, and the page shows the
version that was asked to address them next to each one."""

import copy
import json

import pytest
from channels.db import database_sync_to_async
from django.test import Client as HttpClient
from django.urls import reverse

from agents.plan import build_version
from agents.plan_writer import regenerate_section
from agents.providers.fake import FakeProvider
from conversations import plan_sections
from conversations.models import CommentRequest, Plan, PlanComment, PlanningSession, PlanningState
from tests.conversations.spec_plan import STRUCTURED
from tests.conversations.wsclient import Client


def add(user, plan, kind, anchor, text, status="open"):
    return PlanComment.objects.create(
        session=plan.session, plan=plan, author=user, anchor_kind=kind, anchor=anchor,
        text=text, status=status,
    )  # fmt: skip


@pytest.mark.django_db
def test_regenerating_a_step_with_its_comments_prompts_each_open_one_and_no_resolved_one(
    user, codebase, monkeypatch
):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    data = {k: v for k, v in copy.deepcopy(STRUCTURED).items() if k != "quality"}
    markdown, structured = build_version(data, codebase, title=session.title)
    # The fixture codebase has no todo/api.py: cite the line the step's detail names as the
    # finished plan would.
    structured["citations"] = [{"path": "todo/api.py", "start": 27, "end": 27, "exists": True}]
    v1 = Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)
    step = {
        "target": {"kind": "definition", "name": "login", "path": "todo/api.py"},
        "title": "Count failed logins",
        "detail": structured["steps"][0]["detail"],
    }
    per_ip = add(user, v1, "step", step, "Count per IP address as well as per user name.")
    reply = PlanComment.objects.create(
        session=session, plan=v1, parent=per_ip, author=user, anchor_kind="step", anchor=step,
        text="And say what happens behind a shared proxy.",
    )  # fmt: skip
    line = add(user, v1, "line", {"path": "todo/api.py", "line": 27}, "Read the body once.")
    resolved = add(user, v1, "step", step, "Use Redis for the counter.", status="resolved")
    elsewhere = add(user, v1, "section", {"key": "testing", "text": ""}, "Test the reset.")
    gone = add(
        user, v1, "step", {"target": None, "title": "Email the admin", "detail": "On lockout."},
        "Which address?",
    )  # fmt: skip

    jobs = []
    monkeypatch.setattr(plan_sections, "dispatch", lambda job, *args: jobs.append(args))
    browser = HttpClient()
    browser.force_login(user)
    url = reverse("conversations:plan_section_regenerate", args=[session.pk, "step-1"])
    # Asked twice: the first job never ran (its model was unavailable, as on a live server);
    # the second writes v2, and only it is credited with v2.
    for _ in range(2):
        response = browser.post(url, {"version": 1, "instruction": "", "with_comments": "1"})
        assert response.status_code == 302
    failed, request = CommentRequest.objects.order_by("pk")
    assert (request.base, request.section) == (v1, "step-1")
    assert set(request.comments.values_list("pk", flat=True)) == {per_ip.pk, line.pk}

    reply_steps = {"steps": [{**STRUCTURED["steps"][0], "title": "Count failed logins per IP",
                              "detail": "Per IP address and per user name; a shared proxy "
                                        "shares one count."}]}  # fmt: skip
    FakeProvider.script("fake", json.dumps(reply_steps))
    _never_ran, args = jobs
    v2 = regenerate_section(*args)
    assert v2 is not None and v2.version == 2

    prompt = FakeProvider.calls("fake")[-1].prompt
    for open_one in (per_ip, reply, line):
        assert open_one.text in prompt, open_one.text
    assert (
        f"- Comment #{per_ip.pk} on Step 1, the step “Count failed logins” (login in "
        f"todo/api.py): {per_ip.text}" in prompt
    )
    assert f"- Comment #{line.pk} on the cited line todo/api.py:27: {line.text}" in prompt
    for left_out in (resolved, elsewhere, gone):
        assert left_out.text not in prompt, left_out.text

    html = browser.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    addressed = f'<a href="#comment-{per_ip.pk}">#{per_ip.pk}</a>, <a href="#comment-{line.pk}">'
    assert f"v2 was asked to address {addressed}" in html
    assert html.count("</a> was asked to address it (regenerating Step 1 of v1).") == 2
    assert html.count("A regeneration of Step 1 of v1 was asked to address it; no version") == 2


@pytest.mark.django_db
def test_regenerating_with_comments_when_the_section_has_none_is_refused(
    user, codebase, monkeypatch
):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    v1 = Plan.objects.create(
        session=session, version=1, markdown="# Plan\n", structured=copy.deepcopy(STRUCTURED)
    )
    add(user, v1, "section", {"key": "testing", "text": ""}, "Closed.", status="resolved")
    monkeypatch.setattr(plan_sections, "dispatch", lambda job, *args: pytest.fail("dispatched"))
    with pytest.raises(plan_sections.SectionError, match="Testing has no open comments"):
        plan_sections.request_regeneration(user, session.pk, 1, "testing", "", with_comments=True)
    assert not CommentRequest.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_revising_the_whole_plan_with_its_comments_puts_them_in_the_proposal_prompt(
    start, user
):
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")

    def comment_on_v1():
        v1 = Plan.objects.get(session=session, version=1)
        made = [
            add(user, v1, "section", {"key": key, "text": ""}, text)
            for key, text in (("summary", "Say who is locked out."), ("risks", "Shared NAT."))
        ]
        add(user, v1, "section", {"key": "effort", "text": ""}, "Too small.", status="resolved")
        gone = {"target": None, "title": "Email the admin", "detail": "On every lockout."}
        add(user, v1, "step", gone, "Which address?")  # outdated: no such step in v1
        return made

    made = await database_sync_to_async(comment_on_v1)()
    proposals_before = len(FakeProvider.prompts(schema="Proposal"))
    browser = HttpClient()
    await database_sync_to_async(browser.force_login)(user)
    url = reverse("conversations:plan_comments_revise", args=[session.pk])
    response = await database_sync_to_async(browser.post)(url)
    assert response.status_code == 302
    await client.until_state("awaiting_human", node="checkpoint")
    prompt = FakeProvider.prompts(schema="Proposal")[proposals_before]
    assert "The human asked for these changes:\nOpen review comments to address" in prompt
    for comment in made:
        assert (
            f"Comment #{comment.pk} on the {comment.anchor['key'].capitalize()} section: " in prompt
        )
        assert comment.text in prompt
    assert "Too small." not in prompt and "Which address?" not in prompt
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")

    def recorded():
        (request,) = CommentRequest.objects.all()
        from conversations.plan_comments import written_by

        plans = {p.version: p for p in session.plans.all()}
        return (
            request.section,
            sorted(c.text for c in request.comments.all()),
            written_by(request, plans).version,
        )

    assert await database_sync_to_async(recorded)() == (
        "",
        ["Say who is locked out.", "Shared NAT."],
        2,
    )
    await client.close()
