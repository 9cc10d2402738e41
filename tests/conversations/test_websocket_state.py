"""The page follows the workflow as it moves: a session.state event for every node the
workflow enters and every LLM call it makes, not only when a socket connects."""

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from agents.budget import charge_call
from agents.providers.fake import FakeProvider, Hold
from agents.workflow import CHECKPOINT, FIRST, NODES
from conversations.models import PlanningSession, PlanningState
from rag.models import Codebase
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


def workflow_path() -> list[str]:
    """The nodes from the start to the checkpoint, when validation passes first time."""
    path, node = [], FIRST
    while node != CHECKPOINT:
        path.append(node)
        node = NODES[node].next
    return [*path, CHECKPOINT]


async def test_a_state_event_names_each_node_as_the_workflow_enters_it(start, user):
    # The investigation's evidence plan, the first node's reply, caught mid-stream; the rest
    # by default.
    held = Hold(json.dumps(NO_LOOKUPS), pieces=2)
    FakeProvider.script("fake", held)
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    connected = await client.until(lambda e: e["type"] == "session.state")
    assert connected["node"] == FIRST == "investigate"
    held.release.set()
    await client.until_state("awaiting_human", node="checkpoint")

    live = [e for e in client.events if not e.get("replay")]
    # The job may enter investigate (and charge its call) before the socket joins the
    # session's group: the state the socket connected with stands for that first node.
    states = [connected, *(e for e in live if e["type"] == "session.state")]
    running = [e["node"] for e in states if e["status"] == "running"]
    entered = [node for n, node in enumerate(running) if n == 0 or running[n - 1] != node]
    assert entered == workflow_path()
    # Each agent's reply starts under a state naming its node, never the one before.
    last_state = connected
    for event in live:
        if event["type"] == "session.state":
            last_state = event
        elif event["type"] == "message.start" and event["message"]["node"] in NODES:
            assert last_state["node"] == event["message"]["node"], event["message"]["seq"]
            assert last_state["status"] == "running"
    await client.close()


async def test_a_state_event_with_the_new_count_arrives_as_each_llm_call_is_made(user):
    """The page's "N of M LLM calls" moves with each call, as the turns charge it."""

    def waiting_session() -> int:
        codebase = Codebase.objects.create(owner=user, name="c", status=Codebase.Status.READY)
        session = PlanningSession.objects.create(
            owner=user,
            codebase=codebase,
            title="t",
            task="t",
            agent_a_profile="fake",
            agent_b_profile="fake",
            status=PlanningSession.Status.AWAITING_HUMAN,
            call_budget=200,
        )
        PlanningState.objects.create(session=session, current_node="checkpoint")
        return session.pk

    session_id = await database_sync_to_async(waiting_session)()
    client = Client(user, session_id)
    await client.connect()
    connected = await client.until(lambda e: e["type"] == "session.state")
    assert connected["usage"]["calls"] == 0

    for calls in (1, 2):
        await database_sync_to_async(charge_call)(session_id)
        state = await client.until(lambda e: e["type"] == "session.state")
        assert not state.get("replay")
        assert state["usage"] == {**connected["usage"], "calls": calls}
    await client.close()
