"""The websocket refuses strangers and answers bad frames with an error, never a crash."""

import json

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from conversations.models import PlanningSession
from tests.conversations.wsclient import Client, login_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_it_refuses_an_anonymous_connection(start):
    session = await start()
    client = Client(AnonymousUser(), session.pk)
    connected, code = await client.comm.connect()
    assert not connected and code == 4401


async def test_it_refuses_another_users_session(start, other_user):
    session = await start()
    client = Client(other_user, session.pk)
    client.comm.scope["session"] = await database_sync_to_async(login_session)(other_user)
    connected, code = await client.comm.connect()
    assert not connected and code == 4404


async def test_it_refuses_a_session_id_no_database_can_hold(user):
    client = Client(user, 10**30)
    client.comm.scope["session"] = await database_sync_to_async(login_session)(user)
    connected, code = await client.comm.connect()
    assert not connected and code == 4404


DEEP = "[" * 30_000 + "]" * 30_000  # 60 KB: under the size cap


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("not json", "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2]", 'with a "type"'),
        ("null", 'with a "type"'),
        ('"resume"', 'with a "type"'),
        ('{"type": ["resume"]}', 'with a "type"'),
        ('{"action": []}', 'with a "type"'),
        ('{"type": "teleport"}', "Unknown frame type"),
        ('{"type": "' + "t" * 5000 + '"}', "Unknown frame type 'tttttttttt"),
        ('{"type": "control", "action": "explode"}', "Unknown control action"),
        ('{"type": "control", "action": []}', "Unknown control action []"),
        ('{"type": "control", "action": {}}', "Unknown control action {}"),
        ('{"type": "control", "action": ["stop"]}', "Unknown control action"),
        ('{"type": "control", "action": null}', "Unknown control action None"),
        ('{"type": "control"}', "Unknown control action"),
        ('{"type": "resume", "after_seq": -3}', "after_seq"),
        ('{"type": "resume", "after_seq": true}', "after_seq"),
        ('{"type": "resume", "after_seq": 1.5}', "after_seq"),
        ('{"type": "resume", "after_seq": "3"}', "after_seq"),
        ('{"type": "resume", "after_seq": NaN}', "after_seq"),
        ('{"type": "resume", "after_seq": 1e999}', "after_seq"),
        ('{"type": "resume", "after_seq": ' + "9" * 4000 + "}", "after_seq"),
        ('{"type": "resume", "after_seq": ' + "9" * 5000 + "}", "not valid JSON"),
        ('{"type": "history", "after_seq": 0}', "before_seq"),
        ('{"type": "user.message", "text": "   "}', "Type a message first"),
        ('{"type": "user.message", "text": 42}', "Type a message first"),
        ('{"type": "user.message", "text": ["hi"]}', "Type a message first"),
        ('{"type": "user.message", "text": {"a": 1}}', "Type a message first"),
        ('{"type": "user.message", "text": "a\\u0000b"}', "NUL"),
        ('{"type": "user.message", "text": "\\ud800"}', "not valid Unicode"),
        ('{"type": "control", "action": "modify", "text": "\\udc00x"}', "not valid Unicode"),
        (DEEP, "nested too deeply"),
        ('{"type": "resume", "after_seq": ' + "[" * 3000 + "]" * 3000 + "}", "nested too deeply"),
        ('{"type": "control", "action": ' * 1500 + '"stop"' + "}" * 1500, "nested too deeply"),
    ],
)
async def test_it_answers_a_bad_frame_with_an_error_and_keeps_going(start, user, raw, expected):
    session = await start()
    client = Client(user, session.pk)
    await client.connect(after_seq=None)
    await client.comm.send_input({"type": "websocket.receive", "text": raw})
    error = await client.until(lambda e: e["type"] == "error")
    assert expected in error["message"]
    assert len(error["message"]) < 200  # a value sent is quoted back cut short
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
    await client.comm.send_to(bytes_data=json.dumps({"type": "resume"}).encode())
    assert "JSON text" in (await client.until(lambda e: e["type"] == "error"))["message"]
    await client.comm.send_to(text_data='{"type": "user.message", "text": "' + "x" * 70_000 + '"}')
    assert "too large" in (await client.until(lambda e: e["type"] == "error"))["message"]
    await client.comm.send_to(text_data='{"type": "user.message", "text": "' + "x" * 2**20 + '"}')
    assert "too large" in (await client.until(lambda e: e["type"] == "error"))["message"]
    # Under the cap in characters, over it in bytes (an emoji is 4 bytes of UTF-8).
    emoji = '{"type": "user.message", "text": "' + "\U0001f600" * 17_000 + '"}'
    await client.comm.send_to(text_data=emoji)
    assert "too large" in (await client.until(lambda e: e["type"] == "error"))["message"]
    await client.send({"type": "resume", "after_seq": 0})
    await client.until(lambda e: e["type"] == "session.state")
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
