"""Stop reply: cancels the reply being written, keeps its text, gives the human the floor and
leaves the session going (unlike Stop, which ends it with a summary). And Stop itself, pressed
twice."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from conversations import services
from conversations.models import Message, PlanningSession
from rag.models import Codebase
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

HANDOVER = {"signal": "HANDOVER", "reason": "Over to you."}
LONG = " ".join(f"word{i}" for i in range(500))


def agent_messages(session):
    """The debate's turns (Agent A's evidence plan, before them, is a message of A's too)."""
    return list(session.messages.filter(role=Message.Role.AGENT, node="").order_by("seq"))


async def test_cancel_keeps_the_partial_reply_and_hands_the_floor_to_the_human(
    start, user, settings
):
    held = Hold(LONG, pieces=2)  # Agent A writes two words, then waits for the cancel
    FakeProvider.script("fake", NO_LOOKUPS, held)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    running = await client.until_state("running")
    assert running["options"] == ["cancel", "stop"]
    assert await asyncio.to_thread(held.reached.wait, 60)
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
    settings.PLANAGENTS_FAKE_LLM_DELAY = 0
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
    FakeProvider.script("fake", NO_LOOKUPS, "A1: which store?", HANDOVER)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")
    await client.send({"type": "control", "action": "cancel"})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["message"] == "No agent is writing right now."
    await client.close()


def own_finished_session(owner) -> PlanningSession:
    codebase = Codebase.objects.create(owner=owner, name="theirs", status=Codebase.Status.READY)
    return PlanningSession.objects.create(
        owner=owner, codebase=codebase, title="t", task="t", agent_a_profile="fake",
        agent_b_profile="fake", status=PlanningSession.Status.COMPLETED,
    )  # fmt: skip


async def test_another_users_socket_cannot_cancel_the_owners_reply(start, user, other_user):
    held = Hold(LONG, pieces=2)  # Agent A writes two words, then waits
    FakeProvider.script("fake", NO_LOOKUPS, held, HANDOVER)
    session = await start(mode="debate")
    owner = Client(user, session.pk)
    await owner.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)

    # A socket on the owner's session is refused at the door...
    with pytest.raises(AssertionError, match="refused with 4404"):
        await Client(other_user, session.pk).connect()
    # ...and one on their own session sends the cancel naming the owner's: it acts on the
    # session in its URL, where no agent is writing.
    theirs = await database_sync_to_async(own_finished_session)(other_user)
    intruder = Client(other_user, theirs.pk)
    await intruder.connect(after_seq=None)
    await intruder.send(
        {"type": "control", "action": "cancel", "session": session.pk, "session_id": session.pk}
    )
    error = await intruder.until(lambda e: e["type"] == "error")
    assert error["message"] == "No agent is writing right now."
    await intruder.close()

    fresh = await database_sync_to_async(PlanningSession.objects.get)(pk=session.pk)
    assert not fresh.cancel_requested and fresh.status == "running"
    # Released, the owner's reply streams on to its last word, complete.
    held.release.set()
    await owner.until_state("awaiting_human")
    (reply,) = await database_sync_to_async(agent_messages)(session)
    assert (reply.state, reply.content) == (Message.State.COMPLETE, LONG)
    await owner.close()


async def test_pressing_stop_twice_stops_once(start, user, monkeypatch):
    FakeProvider.script("fake", NO_LOOKUPS, "A1: which store?", HANDOVER)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")
    # Hold the summary job back, so the second Stop lands while the first is still pending.
    held = []
    monkeypatch.setattr(services, "_dispatch_run", held.append)

    await client.send({"type": "control", "action": "stop"})
    await client.send({"type": "control", "action": "stop"})
    # Frames are handled in order: once this one is answered, both Stops are done.
    await client.send({"type": "control", "action": "explode"})
    await client.until(lambda e: e["type"] == "error")

    assert held == [session.pk]  # one summary job
    said = await database_sync_to_async(
        lambda: list(session.messages.filter(role="user").values_list("content", flat=True))
    )()
    assert said.count("Stopped the session.") == 1
    # The page is told the agents have the floor again, to write the summary.
    running = await client.until_state("running")
    assert running["options"] == ["cancel", "stop"]

    monkeypatch.undo()
    await database_sync_to_async(services._dispatch_run)(session.pk)
    await client.until_state("stopped")
    summaries = await database_sync_to_async(session.messages.filter(node="summary").count)()
    assert summaries == 1
    await client.send({"type": "control", "action": "stop"})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["message"] == "This session has already ended."
    await client.close()


async def test_stop_after_a_stop_the_agents_never_read_hands_them_the_floor(start, user):
    """A Stop pressed as the agents handed over: the job left without reading the flag. The
    next Stop must not be a no-op, or the session would wait for a summary forever."""
    FakeProvider.script("fake", NO_LOOKUPS, "A1: which store?", HANDOVER)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")
    await database_sync_to_async(PlanningSession.objects.filter(pk=session.pk).update)(
        stop_requested=True
    )
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")
    said = await database_sync_to_async(
        lambda: session.messages.filter(content="Stopped the session.").count()
    )()
    assert said == 0  # the first Stop's, had it been written, would be the one
    await client.close()
