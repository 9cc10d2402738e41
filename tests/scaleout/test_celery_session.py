"""A planning session whose turns run on a real Celery worker process, streamed through Redis
to a websocket client connected to a different server process (daphne)."""

import pytest
from channels.db import database_sync_to_async

from conversations import services
from conversations.models import Message
from tests.scaleout.wsremote import RemoteClient, session_cookie

pytestmark = [pytest.mark.scaleout, pytest.mark.django_db(transaction=True)]

NODES = [
    "analyze_codebase",
    "propose_changes",
    "review_and_refine",  # the app's checks of the proposal, for Agent B
    "review_and_refine",  # Agent B's review
    "validate_proposal",
]


def start_session(user, codebase):
    return services.start_session(
        user,
        codebase=codebase,
        task="Add rate limiting to login",
        mode="planning",
        agent_a_profile="fake",
        agent_b_profile="fake",
    )


def saved(session):
    return list(Message.objects.filter(session=session).order_by("seq"))


async def assert_client_shows_the_database(client, session):
    messages = await database_sync_to_async(saved)(session)
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1)), "a seq is missing"
    assert {s: t for s, t in client.texts.items()} == {m.seq: m.content for m in messages}
    return messages


async def test_a_worker_streams_a_session_to_a_client_on_another_server(
    topology, on_celery, user, codebase
):
    web = topology.server("web1")
    topology.worker("worker1")
    cookie = await database_sync_to_async(session_cookie)(user)
    session = await database_sync_to_async(start_session)(user, codebase)

    client = RemoteClient(web.port, cookie, session.pk)
    await client.connect(after_seq=0)
    await client.until_state("awaiting_human", node="checkpoint", timeout=120)
    live = [e for e in client.events if e["type"] == "message.delta"]
    assert live, "no token reached the client live through Redis"

    messages = await assert_client_shows_the_database(client, session)
    assert [m.node for m in messages if m.node] == NODES
    assert all(m.state == Message.State.COMPLETE for m in messages)
    await client.close()
