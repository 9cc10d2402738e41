"""Debate mode through the websocket: turns alternate, signals decide who has the floor."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from conversations.models import Message, PlanningSession
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS, kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

CONTINUE = {"signal": "CONTINUE", "reason": "The critic should answer."}
HANDOVER = {"signal": "HANDOVER", "reason": "The human must pick a storage backend."}
STOP = {"signal": "STOP", "reason": "Settled."}


def agent_messages(session):
    """The debate's turns (Agent A's evidence plan, before them, is a message of A's too)."""
    return list(session.messages.filter(role=Message.Role.AGENT, node="").order_by("seq"))


async def test_agents_alternate_until_the_exchange_limit_then_hand_over(start, user):
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # Agent A's evidence plan, before its first turn
        "A1: add a limiter.", CONTINUE,
        "B1: it forgets the reset path.", CONTINUE,
        kept(1),  # B1's objection checked against the evidence, before A answers it
        "A2: cover reset too.", CONTINUE,
        "B2: fine, but test it.", CONTINUE,
    )  # fmt: skip
    session = await start(mode="debate", max_exchanges=2)
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")
    assert state["options"] == ["continue", "stop"]

    turns = await database_sync_to_async(agent_messages)(session)
    assert [(m.agent, m.content, m.signal) for m in turns] == [
        ("A", "A1: add a limiter.", "CONTINUE"),
        ("B", "B1: it forgets the reset path.", "CONTINUE"),
        ("A", "A2: cover reset too.", "CONTINUE"),
        ("B", "B2: fine, but test it.", "CONTINUE"),
    ]
    await client.close()


async def test_a_handover_signal_gives_the_human_the_floor_and_their_reply_is_read(start, user):
    FakeProvider.script("fake", NO_LOOKUPS, "A1: which store, Redis or memory?", HANDOVER)
    session = await start(mode="debate", max_exchanges=3)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    FakeProvider.script("fake", "B1: Redis then.", HANDOVER)
    await client.send({"type": "user.message", "text": "Use Redis, we already run it."})
    await client.until_state("running")
    await client.until_state("awaiting_human")

    turns = await database_sync_to_async(agent_messages)(session)
    assert [(m.agent, m.content) for m in turns] == [
        ("A", "A1: which store, Redis or memory?"),
        ("B", "B1: Redis then."),
    ]
    # What Agent B was given: Agent A's reply and, after it, what the human said.
    first, second = FakeProvider.calls("fake", text=True)
    assert "Use Redis" not in first.prompt
    assert "<proposal>\nA1: which store, Redis or memory?\n</proposal>" in second.prompt
    assert "The human said:\n- Use Redis, we already run it." in second.prompt
    await client.close()


async def test_a_critique_that_echoes_the_proposal_is_redone_once_with_a_correction(start, user):
    proposal = (
        "A1: add a limiter to the login view: count failed attempts per user in the cache and "
        "refuse the sixth within a minute with HTTP 429."
    )
    critique = "B1: a per-process cache halves the limit behind two workers; use the database."
    FakeProvider.script(
        "fake", NO_LOOKUPS, proposal, CONTINUE, "B1: " + proposal, critique, HANDOVER
    )
    session = await start(mode="debate", max_exchanges=1)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    turns = await database_sync_to_async(agent_messages)(session)
    assert [(m.agent, m.content) for m in turns] == [("A", proposal), ("B", critique)]
    _a, echo, redo = FakeProvider.calls("fake", text=True)
    # The first prompt unchanged, the echoed reply as the model's own turn, the correction.
    assert redo.messages[:-2] == echo.messages
    assert (redo.messages[-2].role, redo.messages[-2].content) == ("assistant", "B1: " + proposal)
    assert "copied Agent A's proposal" in redo.messages[-1].content
    # The browser was shown the redo in place of the echo, in the same message.
    assert client.texts[turns[1].seq] == critique
    await client.close()


async def test_an_agent_stop_ends_the_debate_with_a_summary_of_the_whole_discussion(start, user):
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,
        "A1: add a limiter.", CONTINUE,
        "B1: agreed, nothing left.", STOP,
        "Summary: A proposed a limiter and B agreed.",
    )  # fmt: skip
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("completed")
    summary = await database_sync_to_async(lambda: session.messages.get(node="summary"))()
    # The model's summary, labelled as such and checked against the discussion it summarises.
    assert "Summary: A proposed a limiter and B agreed." in summary.content
    assert summary.content.startswith("_The model's summary of")
    await client.close()


async def test_stop_while_an_agent_is_writing_keeps_the_partial_text(start, user):
    # Agent A writes three words, then waits until the Stop lands: no timing involved.
    held = Hold(" ".join(f"word{i}" for i in range(500)), pieces=3)
    FakeProvider.script("fake", NO_LOOKUPS, held)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")

    first = await database_sync_to_async(lambda: agent_messages(session)[0])()
    assert first.state == Message.State.INTERRUPTED
    assert first.content.startswith("word0 word1 word2")
    assert "word3" not in first.content
    status = await database_sync_to_async(
        lambda: PlanningSession.objects.get(pk=session.pk).status
    )()
    assert status == "stopped"
    await client.close()


async def test_a_provider_failure_pauses_the_session_and_continue_retries_it(start, user):
    from agents.providers.base import ProviderError

    # Agent A's first turn fails (its evidence plan was written).
    FakeProvider.script("fake", NO_LOOKUPS, ProviderError("the model server is down"))
    session = await start(mode="debate", max_exchanges=1)
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")
    assert "the model server is down" in state["error"]

    FakeProvider.script("fake", "A1: retry worked.", CONTINUE, "B1: ok.", CONTINUE)
    await client.send({"type": "control", "action": "continue"})
    # State events also go out as calls are charged and on replay, so an earlier
    # "awaiting_human" may still be queued: wait for B's reply to end, then for the floor.
    await client.until(lambda e: e["type"] == "message.end" and e["message"]["agent"] == "B")
    await client.until_state("awaiting_human")
    turns = await database_sync_to_async(agent_messages)(session)
    assert [m.content for m in turns if m.state == "complete"] == ["A1: retry worked.", "B1: ok."]
    await client.close()
