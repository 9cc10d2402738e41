"""The figures beside a message (tokens read → written, time) are those of the trace of its
calls: a reply stopped mid-way shows what its call used, and a message written after its call
(Agent A's evidence plan) shows that call's time, not the instant it took to save it."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.models import LLMCall
from agents.providers.fake import FakeProvider, Hold, Reading
from conversations.models import Message
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

HANDOVER = {"signal": "HANDOVER", "reason": "Over to you."}
LONG = " ".join(f"word{i}" for i in range(200))


def calls_of(message):
    return list(LLMCall.objects.filter(message=message))


async def test_an_interrupted_reply_shows_the_tokens_and_time_its_call_used(start, user):
    held = Hold(LONG, pieces=3)
    FakeProvider.script("fake", NO_LOOKUPS, held)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "cancel"})
    await client.until_state("awaiting_human")

    cut = await database_sync_to_async(
        lambda: session.messages.get(role="agent", node="", state=Message.State.INTERRUPTED)
    )()
    (call,) = await database_sync_to_async(calls_of)(cut)
    assert call.outcome == "stopped" and call.completion_tokens == 3 and call.prompt_tokens > 0
    assert (cut.prompt_tokens, cut.completion_tokens, cut.latency_ms) == (
        call.prompt_tokens, call.completion_tokens, call.duration_ms,
    )  # fmt: skip
    assert cut.latency_ms > 0
    end = [e for e in client.of_type("message.end") if e["message"]["seq"] == cut.seq][-1]
    assert (end["message"]["prompt_tokens"], end["message"]["completion_tokens"]) == (
        call.prompt_tokens, 3,
    )  # fmt: skip
    await client.close()


async def test_the_evidence_plan_shows_the_time_and_tokens_of_the_call_that_wrote_it(start, user):
    # Read slowly (three batches of 0.15 s), as a busy local model reads a long prompt.
    reading = Reading('{"steps": [], "next_action": "synthesize"}', batches=3, seconds=0.15)
    FakeProvider.script("fake", reading, "A1: count the failures.", HANDOVER)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    plan = await database_sync_to_async(
        lambda: session.messages.get(turn_key__startswith="investigate:plan")
    )()
    (call,) = await database_sync_to_async(calls_of)(plan)
    assert call.schema.startswith("EvidencePlan") and call.duration_ms >= 450
    # The reading came before the first piece: the trace keeps it apart (agents.trace.speed).
    assert 450 <= call.first_piece_ms <= call.duration_ms
    assert plan.latency_ms == call.duration_ms
    assert (plan.prompt_tokens, plan.completion_tokens) == (
        call.prompt_tokens, call.completion_tokens,
    )  # fmt: skip
    assert plan.prompt_tokens == 3 * 256
    await client.close()


async def test_a_debate_turns_figures_include_the_call_that_decided_its_signal(start, user):
    FakeProvider.script("fake", NO_LOOKUPS, "A1: count the failures per user.", HANDOVER)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    turn = await database_sync_to_async(lambda: session.messages.get(role="agent", node=""))()
    calls = await database_sync_to_async(calls_of)(turn)
    assert sorted(c.schema for c in calls) == ["", "TurnSignal"]  # the reply, its signal
    assert (turn.prompt_tokens, turn.completion_tokens, turn.latency_ms) == (
        sum(c.prompt_tokens for c in calls),
        sum(c.completion_tokens for c in calls),
        sum(c.duration_ms for c in calls),
    )
    await client.close()
