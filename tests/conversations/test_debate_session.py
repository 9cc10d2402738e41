"""Debate mode through the websocket: turns alternate, signals decide who has the floor."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from conversations.models import Message, PlanningSession
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

CONTINUE = {"signal": "CONTINUE", "reason": "The critic should answer."}
HANDOVER = {"signal": "HANDOVER", "reason": "The human must pick a storage backend."}
STOP = {"signal": "STOP", "reason": "Settled."}


def agent_messages(session):
    return list(session.messages.filter(role=Message.Role.AGENT).order_by("seq"))


async def test_agents_alternate_until_the_exchange_limit_then_hand_over(start, user):
    FakeProvider.script(
        "fake",
        "A1: add a limiter.", CONTINUE,
        "B1: it forgets the reset path.", CONTINUE,
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
    FakeProvider.script("fake", "A1: which store, Redis or memory?", HANDOVER)
    session = await start(mode="debate", max_exchanges=3)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    FakeProvider.script("fake", "B1: Redis then.", HANDOVER)
    await client.send({"type": "user.message", "text": "Use Redis, we already run it."})
    await client.until_state("running")
    await client.until_state("awaiting_human")

    turns = await database_sync_to_async(agent_messages)(session)
    assert [m.agent for m in turns] == ["A", "B"]
    human = await database_sync_to_async(
        lambda: list(session.messages.filter(role="user").values_list("content", flat=True))
    )()
    assert human[-1] == "Use Redis, we already run it."
    await client.close()


async def test_an_agent_stop_ends_the_debate_with_a_summary_of_the_whole_discussion(start, user):
    FakeProvider.script(
        "fake",
        "A1: add a limiter.", CONTINUE,
        "B1: agreed, nothing left.", STOP,
        "Summary: A proposed a limiter and B agreed.",
    )  # fmt: skip
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("completed")
    summary = await database_sync_to_async(lambda: session.messages.get(node="summary"))()
    assert summary.content == "Summary: A proposed a limiter and B agreed."
    await client.close()


async def test_stop_while_an_agent_is_writing_keeps_the_partial_text(start, user, monkeypatch):
    monkeypatch.setenv("PLANAGENTS_FAKE_LLM_DELAY", "0.02")
    FakeProvider.script("fake", " ".join(f"word{i}" for i in range(500)))
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until(lambda e: e["type"] == "message.delta")
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")

    first = await database_sync_to_async(lambda: agent_messages(session)[0])()
    assert first.state == Message.State.INTERRUPTED
    assert first.content.startswith("word0 word1")
    assert "word499" not in first.content
    status = await database_sync_to_async(
        lambda: PlanningSession.objects.get(pk=session.pk).status
    )()
    assert status == "stopped"
    await client.close()


async def test_a_provider_failure_pauses_the_session_and_continue_retries_it(start, user):
    from agents.providers.base import ProviderError

    FakeProvider.script("fake", ProviderError("the model server is down"))
    session = await start(mode="debate", max_exchanges=1)
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")
    assert "the model server is down" in state["error"]

    FakeProvider.script("fake", "A1: retry worked.", CONTINUE, "B1: ok.", CONTINUE)
    await client.send({"type": "control", "action": "continue"})
    await client.until_state("running")
    await client.until_state("awaiting_human")
    turns = await database_sync_to_async(agent_messages)(session)
    assert [m.content for m in turns if m.state == "complete"] == ["A1: retry worked.", "B1: ok."]
    await client.close()
