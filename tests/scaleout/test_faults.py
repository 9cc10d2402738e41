"""Faults on the scaled topology: a worker killed mid-turn, and Redis restarted mid-session.
Either way the session completes, the database has each message once, and a client that
reconnects (to any server) shows the whole conversation."""

import asyncio
import subprocess

import pytest
from channels.db import database_sync_to_async
from websockets.exceptions import ConnectionClosed, WebSocketException

from conversations.models import Message
from planagents.models import JobLease
from tests.scaleout.test_celery_session import (
    NODES,
    assert_client_shows_the_database,
    start_session,
)
from tests.scaleout.wsremote import RemoteClient, session_cookie

pytestmark = [pytest.mark.scaleout, pytest.mark.django_db(transaction=True)]

SLOW = "0.03"  # seconds per fake token: a turn of a few hundred tokens streams for seconds


def mid_stream(client, *, chars: int = 80):
    """True at a live delta of an agent message that has streamed `chars` characters."""
    return lambda e: e["type"] == "message.delta" and len(client.texts.get(e["seq"], "")) > chars


async def test_a_worker_killed_mid_turn_is_replaced_and_nothing_is_lost_or_doubled(
    topology, on_celery, user, codebase
):
    topology.env["PLANAGENTS_FAKE_LLM_DELAY"] = SLOW
    web1, web2 = topology.server("web1"), topology.server("web2")
    doomed = topology.worker("worker1")
    cookie = await database_sync_to_async(session_cookie)(user)
    session = await database_sync_to_async(start_session)(user, codebase)

    watcher = RemoteClient(web1.port, cookie, session.pk)
    await watcher.connect(after_seq=0)
    cut = await watcher.until(mid_stream(watcher), timeout=120)
    doomed.kill()  # SIGKILL to the worker and its pool: no goodbye, no ack
    partial = await database_sync_to_async(Message.objects.get)(session=session, seq=cut["seq"])
    assert partial.state == Message.State.STREAMING

    topology.worker("worker2")
    # The watcher on web1 stays connected: the re-run reopens the cut-off message (same seq)
    # and streams it again from the start.
    await watcher.until_state("awaiting_human", node="checkpoint", timeout=180)
    await assert_client_shows_the_database(watcher, session)
    await watcher.close()

    # A client that comes back later, to the other server, sees the whole conversation.
    late = RemoteClient(web2.port, cookie, session.pk)
    await late.connect(after_seq=0)
    await late.until(lambda e: e["type"] == "session.state")
    messages = await assert_client_shows_the_database(late, session)
    assert [m.node for m in messages if m.node] == NODES
    assert all(m.state == Message.State.COMPLETE for m in messages)
    # The re-run reopened the very row it was cut off in (same id, key and seq), not a
    # replacement written in its place.
    (rerun,) = [m for m in messages if m.seq == cut["seq"]]
    assert (rerun.pk, rerun.turn_key) == (partial.pk, partial.turn_key)
    lease = await database_sync_to_async(JobLease.objects.get)(name=f"session:{session.pk}")
    assert lease.takeovers == 1  # the second worker took the work over from the dead one
    await late.close()


async def test_a_session_survives_a_redis_restart(topology, on_celery, user, codebase):
    topology.env["PLANAGENTS_FAKE_LLM_DELAY"] = SLOW
    web = topology.server("web1")
    topology.worker("worker1")
    cookie = await database_sync_to_async(session_cookie)(user)
    session = await database_sync_to_async(start_session)(user, codebase)

    client = RemoteClient(web.port, cookie, session.pk)
    await client.connect(after_seq=0)
    await client.until(mid_stream(client), timeout=120)
    restart_redis()

    # The server drops the websocket when its Redis connection breaks (its group membership
    # went with Redis); the page reconnects and resumes from the database, as session.js does.
    reconnects = 0
    while True:
        try:
            await client.until_state("awaiting_human", node="checkpoint", timeout=180)
            break
        except ConnectionClosed:
            reconnects += 1
            assert reconnects < 20
            await asyncio.sleep(0.5)
            fresh = RemoteClient(web.port, cookie, session.pk)
            try:
                await fresh.connect(after_seq=0)
            except (OSError, WebSocketException):  # refused while Redis comes back
                continue
            client = fresh
    assert reconnects >= 1  # the resync came from the database, not from the layer
    messages = await assert_client_shows_the_database(client, session)
    assert [m.node for m in messages if m.node] == NODES
    assert all(m.state == Message.State.COMPLETE for m in messages)
    await client.close()


def restart_redis() -> None:
    """Redis here keeps nothing on disk: a restart loses every queue, group and message."""
    subprocess.run(["redis-cli", "-p", "6379", "shutdown", "nosave"], check=False)
    subprocess.run(["scripts/services.sh", "planagents"], check=True)
