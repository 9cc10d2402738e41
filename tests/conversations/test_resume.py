"""A client that drops mid-stream and resumes by seq ends up with exactly the saved conversation."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_reconnecting_mid_stream_resumes_without_gap_or_duplicate(start, user, monkeypatch):
    monkeypatch.setenv("PLANAGENTS_FAKE_LLM_DELAY", "0.005")
    long_reply = " ".join(f"w{i}" for i in range(300))
    FakeProvider.script("fake", long_reply, long_reply)
    session = await start()

    first = Client(user, session.pk)
    await first.connect()
    await first.until(lambda e: e["type"] == "message.delta" and len(first.texts[e["seq"]]) > 200)
    # What the first page showed completely: everything before the message still streaming.
    streaming_seq = first.events[-1]["seq"]
    await first.close()

    second = Client(user, session.pk)
    await second.connect(after_seq=streaming_seq - 1)
    await second.until_state("awaiting_human", node="checkpoint", timeout=90)

    messages = await database_sync_to_async(lambda: list(session.messages.order_by("seq")))()
    seen = {**{s: t for s, t in first.texts.items() if s < streaming_seq}, **second.texts}
    assert sorted(seen) == [m.seq for m in messages]
    for m in messages:
        assert seen[m.seq] == m.content, f"message {m.seq} differs"
    starts = [e["message"]["seq"] for e in second.events if e["type"] == "message.start"]
    assert streaming_seq in starts  # the partial message was replayed from the database
    await second.close()


async def test_a_late_joiner_gets_the_whole_conversation_from_the_database(start, user):
    session = await start()
    watcher = Client(user, session.pk)
    await watcher.connect()
    await watcher.until_state("awaiting_human", node="checkpoint")
    await watcher.close()

    late = Client(user, session.pk)
    await late.connect(after_seq=0)
    await late.until(lambda e: e["type"] == "session.state")
    messages = await database_sync_to_async(lambda: list(session.messages.order_by("seq")))()
    assert {s: t for s, t in late.texts.items()} == {m.seq: m.content for m in messages}
    assert all(e.get("replay") for e in late.events if e["type"].startswith("message."))
    await late.close()
