"""The websocket refuses strangers and answers bad frames with an error, never a crash."""

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from conversations.models import PlanningSession
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_it_refuses_an_anonymous_connection(start):
    session = await start()
    client = Client(AnonymousUser(), session.pk)
    connected, code = await client.comm.connect()
    assert not connected and code == 4401


async def test_it_refuses_another_users_session(start, other_user):
    session = await start()
    client = Client(other_user, session.pk)
    connected, code = await client.comm.connect()
    assert not connected and code == 4404


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", 'with a "type"'),
        ('{"type": "teleport"}', "Unknown frame type"),
        ('{"type": "control", "action": "explode"}', "Unknown control action"),
        ('{"type": "resume", "after_seq": -3}', "after_seq"),
        ('{"type": "user.message", "text": "   "}', "Type a message first"),
        ('{"type": "user.message", "text": 42}', "Type a message first"),
    ],
)
async def test_it_answers_a_bad_frame_with_an_error_and_keeps_going(start, user, raw, expected):
    session = await start()
    client = Client(user, session.pk)
    await client.connect(after_seq=None)
    await client.comm.send_to(text_data=raw)
    error = await client.until(lambda e: e["type"] == "error")
    assert expected in error["message"]
    # The connection is still usable.
    await client.send({"type": "resume", "after_seq": 0})
    await client.until(lambda e: e["type"] == "session.state")
    await client.close()


async def test_binary_and_oversized_frames_get_an_error(start, user):
    session = await start()
    client = Client(user, session.pk)
    await client.connect(after_seq=None)
    await client.comm.send_to(bytes_data=b"\x00\x01")
    assert "JSON text" in (await client.until(lambda e: e["type"] == "error"))["message"]
    await client.comm.send_to(text_data='{"type": "user.message", "text": "' + "x" * 70_000 + '"}')
    assert "too large" in (await client.until(lambda e: e["type"] == "error"))["message"]
    await client.close()


async def test_ownership_is_checked_again_on_every_action(start, user, other_user):
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until(lambda e: e["type"] == "session.state")
    await database_sync_to_async(PlanningSession.objects.filter(pk=session.pk).update)(
        owner=other_user
    )
    await client.send({"type": "user.message", "text": "still mine?"})
    error = await client.until(lambda e: e["type"] == "error")
    assert "does not exist" in error["message"]
    count = await database_sync_to_async(
        lambda: session.messages.filter(content="still mine?").count()
    )()
    assert count == 0
