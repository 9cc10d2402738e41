"""Regenerating one plan section: an agent turn that streams over the session's websocket like
any other and ends in a new version where only that section changed."""

import pytest
from channels.db import database_sync_to_async
from django.test import Client as HttpClient
from django.urls import reverse

from agents.plan import build_version
from agents.providers.fake import FakeProvider, Hold
from conversations.models import Message, Plan, PlanningSession, PlanningState
from rag.models import CodeFile
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


def make_session(user, codebase, status):
    path = CodeFile.objects.filter(codebase=codebase, role="source").values_list("path", flat=True)[0]  # fmt: skip
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status=status,
        stop_requested=status == "stopped",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    data = {
        "summary": "Count failed logins per user.",
        "decisions": ["Keep counters in memory."],
        "steps": [
            {
                "title": "Add the counter and the check",
                "detail": "In the handler.",
                "files": [path],
            },
            {"title": "Test it", "detail": "A sixth attempt fails.", "files": []},
        ],
        "files": [{"path": path, "action": "modify", "reason": "the handler"}],
        "testing": ["A sixth failed login gets 429."],
        "risks": ["Counters reset on restart."],
        "effort": {"size": "S", "estimate": "1 day"},
    }
    markdown, structured = build_version(data, codebase, title=session.title)
    Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)
    return session, path


def post_regenerate(user, session, key, instruction):
    browser = HttpClient()
    browser.force_login(user)
    url = reverse("conversations:plan_section_regenerate", args=[session.pk, key])
    return browser.post(url, {"version": 1, "instruction": instruction})


# Stopped: the turn runs though Stop ended the discussion (a debate's plan is written on Stop).
@pytest.mark.parametrize("status", ["completed", "stopped"])
async def test_regenerating_a_step_streams_a_turn_and_changes_only_that_step(
    user, codebase, status
):
    session, path = await database_sync_to_async(make_session)(user, codebase, status)
    split = {
        "steps": [
            {"title": "Add the counter", "detail": f"Count in `{path}:1`.", "files": [path]},
            {"title": "Refuse the sixth attempt", "detail": "Return 429.", "files": [path]},
        ]
    }
    hold = Hold(__import__("json").dumps(split), pieces=6)
    FakeProvider.script("fake", hold)
    client = Client(user, session.pk)
    await client.connect()

    response = await database_sync_to_async(post_regenerate)(user, session, "step-1", "split it")
    assert response.status_code == 302
    assert response.url == reverse("conversations:detail", args=[session.pk])
    # Caught mid-reply: the turn is streaming over the socket before any version exists.
    await database_sync_to_async(hold.reached.wait)(30)
    start = await client.until(
        lambda e: e["type"] == "message.start" and e["message"]["node"] == "regenerate_section"
    )
    assert start["message"]["agent"] == "A"
    assert await database_sync_to_async(Plan.objects.filter(session=session).count)() == 1
    hold.release.set()
    updated = await client.until(lambda e: e["type"] == "plan.updated")
    assert updated["version"] == 2
    await client.close()

    v1, v2 = await database_sync_to_async(
        lambda: list(Plan.objects.filter(session=session).order_by("version"))
    )()
    assert (v2.author_kind, v2.author_id, v2.note) == (
        "regenerate",
        user.pk,
        "Regenerated Step 1: split it",
    )
    titles = [s["title"] for s in v2.structured["steps"]]
    assert titles == ["Add the counter", "Refuse the sixth attempt", "Test it"]
    for key in ("summary", "decisions", "files", "testing", "risks", "effort"):
        assert v2.structured[key] == v1.structured[key], key
    assert {(c["path"], c["exists"]) for c in v2.structured["citations"]} == {(path, True)}
    # The request and the streamed turn are in the transcript; the model was given both.
    reply = await database_sync_to_async(lambda: session.messages.get(node="regenerate_section"))()
    assert reply.state == Message.State.COMPLETE
    assert client.texts[reply.seq].startswith("**Rewriting Step 1 of plan v1:** split it")
    (call,) = FakeProvider.calls("fake")
    assert "The human's instruction for it: split it" in call.prompt
    assert "Add the counter and the check" in call.prompt


async def test_a_regeneration_on_a_version_that_is_no_longer_the_latest_changes_nothing(
    user, codebase
):
    session, _ = await database_sync_to_async(make_session)(user, codebase, "completed")
    hold = Hold('{"summary": "Throttle per IP and per user."}', pieces=3)
    FakeProvider.script("fake", hold)
    client = Client(user, session.pk)
    await client.connect()
    await database_sync_to_async(post_regenerate)(user, session, "summary", "mention IPs")
    await database_sync_to_async(hold.reached.wait)(30)
    # A human edit lands while Agent A is still writing: it becomes v2 first.
    browser = HttpClient()
    await database_sync_to_async(browser.force_login)(user)
    url = reverse("conversations:plan_section_edit", args=[session.pk, "risks"])
    await database_sync_to_async(browser.post)(url, {"version": 1, "text": "- Shared IPs."})
    hold.release.set()
    await client.until(
        lambda e: e["type"] == "message.end" and "was not regenerated" in e["message"]["content"]
    )
    await client.close()
    plans = await database_sync_to_async(
        lambda: list(Plan.objects.filter(session=session).values_list("version", "author_kind"))
    )()
    assert sorted(plans) == [(1, "agent"), (2, "human")]


async def test_an_empty_instruction_is_refused(user, codebase):
    session, _ = await database_sync_to_async(make_session)(user, codebase, "completed")
    response = await database_sync_to_async(post_regenerate)(user, session, "summary", "  ")
    assert response.status_code == 302
    count = await database_sync_to_async(session.messages.count)()
    assert count == 0 and FakeProvider.calls("fake") == []


async def test_a_revision_after_a_human_edit_is_the_next_version_not_written_over_it(start, user):
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")

    def human_edit():
        browser = HttpClient()
        browser.force_login(user)
        url = reverse("conversations:plan_section_edit", args=[session.pk, "summary"])
        return browser.post(url, {"version": 1, "text": "Edited by hand."})

    assert (await database_sync_to_async(human_edit)()).status_code == 302
    await client.send({"type": "control", "action": "revise"})
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "modify", "text": "Cover the reset path."})
    await client.until_state("running")
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    await client.close()

    plans = await database_sync_to_async(
        lambda: list(
            Plan.objects.filter(session=session)
            .order_by("version")
            .values_list("version", "author_kind", "structured__summary")
        )
    )()
    assert [(v, kind) for v, kind, _ in plans] == [(1, "agent"), (2, "human"), (3, "agent")]
    assert plans[1][2] == "Edited by hand."
    assert client.of_type("plan.updated")[-1]["version"] == 3
