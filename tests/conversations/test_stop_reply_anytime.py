"""Stop reply lands at any moment of a call: while the model still reads its prompt (no token
yet), and during a call outside any message (Agent A's evidence plan); the page hears it at
once and the reply says it was stopped by you."""

import asyncio
import time

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from conversations.models import Message, PlanningSession
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_stop_reply_while_the_prompt_is_read_stops_the_reply_and_says_you_did(start, user):
    reading = Hold("A1: count the failures per user", pieces=0, timeout=30)  # no token yet
    FakeProvider.script("fake", NO_LOOKUPS, reading)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(reading.reached.wait, 60)
    pressed = time.monotonic()
    await client.send({"type": "control", "action": "cancel"})
    ack = await client.until(lambda e: e["type"] == "stopping", timeout=5)
    assert ack["what"] == "reply" and time.monotonic() - pressed < 1.0
    state = await client.until_state("awaiting_human", timeout=20)
    assert time.monotonic() - pressed < 3.0  # the job's check runs every half second
    assert "you stopped Agent A's reply" in state["error"]
    reply = await database_sync_to_async(
        lambda: session.messages.filter(role="agent", node="").get()
    )()
    assert reply.state == Message.State.INTERRUPTED
    assert "stopped by you" in reply.content and "time limit" not in reply.content
    await client.close()


async def test_stop_reply_during_the_evidence_plan_hands_over_without_looking_up(start, user):
    held = Hold('{"steps": [], "next_action": "synthesize"}', pieces=0, timeout=30)
    FakeProvider.script("fake", held)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "cancel"})
    state = await client.until_state("awaiting_human", timeout=20)
    assert "(EvidencePlan) was stopped by you" in state["error"]
    looked_up = await database_sync_to_async(
        lambda: list(session.messages.filter(turn_key__startswith="investigate:E"))
    )()
    assert looked_up == []
    fresh = await database_sync_to_async(PlanningSession.objects.get)(pk=session.pk)
    assert not fresh.cancel_requested
    await client.close()


async def test_a_call_outside_any_message_tells_the_page_what_it_reads(watched):
    """Agent A's evidence plan is written before its message exists: the page still hears
    that the model reads a prompt, and how big, and when the call ended."""
    FakeProvider.script("fake", NO_LOOKUPS)
    session, client = await watched(mode="debate")
    await client.until_state("awaiting_human")
    outside = [e for e in client.of_type("progress") if e["seq"] is None]
    plan = [e for e in outside if e["purpose"].startswith("EvidencePlan")]
    assert [e["phase"] for e in plan] == ["reading", "writing", "done"]
    assert plan[0]["prompt_tokens"] > 0 and plan[0]["profile"] == "fake"
    assert plan[0]["estimate"] is None  # no speed measured for the scripted model
    await client.close()
