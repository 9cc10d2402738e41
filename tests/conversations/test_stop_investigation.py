"""Stop pressed while Agent A writes its evidence plan, the first call of every session."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_stop_while_agent_a_writes_its_evidence_plan_looks_nothing_up(start, user):
    # Held after its first piece until released or stopped; `timeout` bounds the bug's wait.
    held = Hold('{"steps": [], "next_action": "synthesize"}', pieces=1, timeout=10)
    FakeProvider.script("fake", held)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped", timeout=90)
    looked_up = await database_sync_to_async(
        lambda: list(session.messages.filter(turn_key__startswith="investigate:E"))
    )()
    assert looked_up == []
    await client.close()
