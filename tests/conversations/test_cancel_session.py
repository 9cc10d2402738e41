"""Stop reply: cancels the reply being written, keeps its text, gives the human the floor and
leaves the session going (unlike Stop, which ends it with a summary)."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from conversations.models import Message, PlanningSession
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

HANDOVER = {"signal": "HANDOVER", "reason": "Over to you."}
LONG = " ".join(f"word{i}" for i in range(500))


def agent_messages(session):
    return list(session.messages.filter(role=Message.Role.AGENT).order_by("seq"))


async def test_cancel_keeps_the_partial_reply_and_hands_the_floor_to_the_human(
    start, user, monkeypatch
):
    monkeypatch.setenv("PLANAGENTS_FAKE_LLM_DELAY", "0.02")
    FakeProvider.script("fake", LONG)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    running = await client.until_state("running")
    assert running["options"] == ["cancel", "stop"]
    await client.until(lambda e: e["type"] == "message.delta")
    await client.send({"type": "control", "action": "cancel"})
    state = await client.until_state("awaiting_human")

    assert state["options"] == ["continue", "stop"]  # the session goes on
    assert "stopped Agent A's reply" in state["error"]
    (cut,) = await database_sync_to_async(agent_messages)(session)
    assert cut.state == Message.State.INTERRUPTED
    assert cut.content.startswith("word0 word1")
    assert "word499" not in cut.content
    assert "Reply stopped by you." in cut.content
    fresh = await database_sync_to_async(PlanningSession.objects.get)(pk=session.pk)
    assert fresh.status == "awaiting_human"
    assert not fresh.stop_requested and not fresh.cancel_requested
    assert not await database_sync_to_async(session.messages.filter(node="summary").exists)()

    # The human answers; Agent A writes a new reply and the cut one stays as it was.
    monkeypatch.setenv("PLANAGENTS_FAKE_LLM_DELAY", "0")
    FakeProvider.script("fake", "A1: shorter this time.", HANDOVER)
    await client.send({"type": "user.message", "text": "Keep it short."})
    await client.until_state("running")
    await client.until_state("awaiting_human")
    turns = await database_sync_to_async(agent_messages)(session)
    assert [(m.state, m.content[:6]) for m in turns] == [
        ("interrupted", "word0 "),
        ("complete", "A1: sh"),
    ]
    await client.close()


async def test_cancel_when_no_agent_is_writing_is_refused_with_a_message(start, user):
    FakeProvider.script("fake", "A1: which store?", HANDOVER)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")
    await client.send({"type": "control", "action": "cancel"})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["message"] == "No agent is writing right now."
    await client.close()


async def test_cancel_in_someone_elses_session_is_refused(start, user, other_user):
    FakeProvider.script("fake", "A1: which store?", HANDOVER)
    session = await start(mode="debate")
    client = Client(other_user, session.pk)
    with pytest.raises(AssertionError, match="refused"):
        await client.connect()
