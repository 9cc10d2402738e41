"""A debate ends in a plan, as planning mode does: when an agent says STOP and when the human
presses Stop, Agent A writes a versioned plan from the discussion."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from conversations.models import Message, Plan
from rag.models import CodeFile
from tests.conversations import conftest as shared
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

# The session fixtures of tests/conversations, shared here.
start = shared.start
watched = shared.watched
jobs_drained = shared.jobs_drained

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

CONTINUE = {"signal": "CONTINUE", "reason": "The critic should answer."}
STOP = {"signal": "STOP", "reason": "Settled."}


def source_path(codebase):
    return CodeFile.objects.filter(codebase=codebase, role="source").values_list("path", flat=True)[0]  # fmt: skip


def draft(path):
    return {
        "summary": "Count failed logins per user and refuse the sixth.",
        "decisions": ["Keep counters in memory: one process serves the app."],
        "steps": [{"title": "Add the counter", "detail": f"In `{path}:1`.", "files": [path]}],
        "files": [
            {"path": path, "action": "modify", "reason": "the handler"},
            {"path": "nope/imaginary.py", "action": "modify", "reason": "invented"},
        ],
        "testing": ["A sixth failed login gets 429."],
        "risks": ["Counters reset on restart."],
        "effort": {"size": "S", "estimate": "1 day"},
    }


async def test_a_debate_that_ends_writes_a_versioned_plan_from_the_discussion(watched, codebase):
    path = await database_sync_to_async(source_path)(codebase)
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # Agent A's evidence plan, before its first turn
        f"A1: add a limiter around `{path}:1`.", CONTINUE,
        "B1: it forgets to reset the count after a good login.", STOP,
        "**Summary.** A limiter; reset on success.",
        draft(path),
    )  # fmt: skip
    session, client = await watched(mode="debate", max_exchanges=3)
    await client.until_state("completed")  # the plan is written before the session ends
    assert [e["version"] for e in client.of_type("plan.updated")] == [1]
    await client.close()

    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    assert (plan.version, plan.author_kind, plan.note) == (1, "agent", "Written from the debate")
    statuses = {f["path"]: f["status"] for f in plan.structured["files"]}
    assert statuses == {path: "exists", "nope/imaginary.py": "missing"}
    assert "| `nope/imaginary.py` | modify | **NOT IN THE CODEBASE** |" in plan.markdown
    assert "| Keep counters in memory: one process serves the app. |" in plan.markdown
    assert (path, True) in {(c["path"], c["exists"]) for c in plan.structured["citations"]}
    written = await database_sync_to_async(lambda: session.messages.get(node="debate_plan"))()
    assert (written.agent, written.state) == ("A", Message.State.COMPLETE)
    # Agent A wrote it from what was said, not from nothing.
    prompt = FakeProvider.prompt(schema="PlanDraft")
    assert "A1: add a limiter" in prompt and "B1: it forgets to reset the count" in prompt


async def test_stop_during_a_debate_ends_in_a_plan(start, user, codebase):
    path = await database_sync_to_async(source_path)(codebase)
    held = Hold(" ".join(f"word{i}" for i in range(500)), pieces=3)  # B, until the Stop
    FakeProvider.script(
        "fake", NO_LOOKUPS, f"A1: add a limiter around `{path}:1`.", CONTINUE, held,
        "**Summary.** A limiter.", draft(path),
    )  # fmt: skip
    session = await start(mode="debate", max_exchanges=3)
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")
    await client.close()

    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    assert plan.note == "Written from the debate" and plan.version == 1
    assert "A1: add a limiter" in FakeProvider.prompt(schema="PlanDraft")


async def test_a_debate_stopped_before_anything_was_said_writes_no_plan(start, user):
    held = Hold(" ".join(f"word{i}" for i in range(500)), pieces=3)  # Agent A's first turn
    FakeProvider.script("fake", NO_LOOKUPS, held)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")
    await client.close()
    assert not await database_sync_to_async(Plan.objects.filter(session=session).exists)()
    nodes = await database_sync_to_async(lambda: list(session.messages.values_list("node", flat=True)))()  # fmt: skip
    assert "debate_plan" not in nodes


async def test_write_the_plan_at_a_handover_ends_the_debate_in_a_plan(start, user, codebase):
    from django.test import Client as HttpClient
    from django.urls import reverse

    path = await database_sync_to_async(source_path)(codebase)
    handover = {"signal": "HANDOVER", "reason": "The human must pick a store."}
    FakeProvider.script(
        "fake", NO_LOOKUPS, f"A1: which store for `{path}:1`?", handover, "**Summary.** A store.",
        draft(path),
    )  # fmt: skip
    session = await start(mode="debate", max_exchanges=3)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    def write_the_plan(as_user):
        browser = HttpClient()
        browser.force_login(as_user)
        return browser.post(reverse("conversations:plan_write", args=[session.pk]))

    intruder = await database_sync_to_async(type(user).objects.create_user)("eve", password="x")
    assert (await database_sync_to_async(write_the_plan)(intruder)).status_code == 404
    assert (await database_sync_to_async(write_the_plan)(user)).status_code == 302
    await client.until_state("stopped")
    await client.close()
    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    assert plan.note == "Written from the debate"
