"""A client that drops mid-stream and resumes by seq ends up with exactly the saved conversation."""

import asyncio
import threading

import pytest
from channels.db import database_sync_to_async

from agents import runtime
from agents.providers.fake import FakeProvider, Hold
from conversations import store
from conversations.consumers import REPLAY_LIMIT, REPLAY_MAX_CHARS
from conversations.models import Message, PlanningSession, PlanningState
from rag.models import Codebase
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_reconnecting_mid_stream_resumes_without_gap_or_duplicate(start, user, monkeypatch):
    # Every piece is flushed as its own delta, and the reply waits at its hold until the
    # test has reconnected: the drop is mid-stream by construction, not by timing.
    monkeypatch.setattr(runtime, "FLUSH_SECONDS", 0)
    long_reply = " ".join(f"w{i}" for i in range(300))
    held = Hold(long_reply, pieces=150)
    # The investigation's evidence plan, then the analysis (held), then the proposal's call
    # gets a reply that is not JSON; the rest by default.
    FakeProvider.script("fake", NO_LOOKUPS, held, long_reply)
    session = await start()

    first = Client(user, session.pk)
    await first.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    shown_at_hold = " ".join(f"w{i}" for i in range(150))
    delta = await first.until(
        lambda e: e["type"] == "message.delta" and first.texts.get(e["seq"]) == shown_at_hold
    )
    streaming_seq = delta["seq"]
    await first.close()

    second = Client(user, session.pk)
    await second.connect(after_seq=streaming_seq - 1)
    # The partial message comes back from the database before the rest of it streams.
    replayed = await second.until(
        lambda e: e["type"] == "message.start" and e["message"]["seq"] == streaming_seq
    )
    assert replayed["replay"] and replayed["message"]["content"] == shown_at_hold
    held.release.set()
    await second.until_state("awaiting_human", node="checkpoint", timeout=90)

    messages = await database_sync_to_async(lambda: list(session.messages.order_by("seq")))()
    seen = {**{s: t for s, t in first.texts.items() if s < streaming_seq}, **second.texts}
    assert sorted(seen) == [m.seq for m in messages]
    for m in messages:
        assert seen[m.seq] == m.content, f"message {m.seq} differs"
    assert seen[streaming_seq] == long_reply
    live = [e for e in second.events if e["type"] == "message.delta" and e["seq"] == streaming_seq]
    assert live and live[0]["offset"] == len(shown_at_hold)  # the rest, from where it stopped
    await second.close()


async def test_a_late_joiner_gets_the_whole_conversation_from_the_database(
    start, user, monkeypatch
):
    session = await start()
    watcher = Client(user, session.pk)
    await watcher.connect()
    await watcher.until_state("awaiting_human", node="checkpoint")
    await watcher.close()
    rendered = []
    monkeypatch.setattr(store, "render_markdown", lambda text, **kw: rendered.append(text))

    late = Client(user, session.pk)
    await late.connect(after_seq=0)
    await late.until(lambda e: e["type"] == "session.state")
    messages = await database_sync_to_async(lambda: list(session.messages.order_by("seq")))()
    assert {s: t for s, t in late.texts.items()} == {m.seq: m.content for m in messages}
    assert all(e.get("replay") for e in late.events if e["type"].startswith("message."))
    assert rendered == []  # each message's HTML was stored as it was finished
    await late.close()


# ---------------------------------------------------------------- bounded replays


def session_with_history(owner, count: int, *, content=lambda n: f"Reply **{n}**") -> int:
    """A finished session holding `count` messages never rendered yet (no agents run)."""
    codebase = Codebase.objects.create(owner=owner, name="c", status=Codebase.Status.READY)
    session = PlanningSession.objects.create(
        owner=owner,
        codebase=codebase,
        title="t",
        task="t",
        agent_a_profile="fake",
        agent_b_profile="fake",
        status=PlanningSession.Status.COMPLETED,
        last_seq=count,
    )
    PlanningState.objects.create(session=session, current_node="completed")
    Message.objects.bulk_create(
        Message(session=session, seq=n, role="agent", agent="A", content=content(n))
        for n in range(1, count + 1)
    )
    return session.pk


async def replayed(client: Client, frame: dict) -> list[dict]:
    """Send a resume or history frame; the events of its answer, up to its last one."""
    await client.send(frame)
    start = len(client.events)
    await client.until(lambda e: e["type"] in ("session.state", "history.end"))
    return client.events[start:]


async def test_a_resume_sends_the_latest_messages_and_pages_back_without_gap_or_duplicate(user):
    session_id = await database_sync_to_async(session_with_history)(user, 130)
    client = Client(user, session_id)
    await client.connect(after_seq=None)

    answers = [await replayed(client, {"type": "resume", "after_seq": 0})]
    # As session.js does: every history.gap is asked for with a history frame.
    while gaps := [e for e in answers[-1] if e["type"] == "history.gap"]:
        (gap,) = gaps
        answers.append(await replayed(client, {**gap, "type": "history"}))

    sent = [[e["message"]["seq"] for e in a if e["type"] == "message.end"] for a in answers]
    assert all(0 < len(seqs) <= REPLAY_LIMIT for seqs in sent)
    assert sent[0] == list(range(131 - len(sent[0]), 131))  # the latest first, in order
    assert sorted(seq for seqs in sent for seq in seqs) == list(range(1, 131))
    assert answers[0][-1]["type"] == "session.state"
    assert [a[-1]["more"] for a in answers[1:]] == [True] * (len(answers) - 2) + [False]
    assert all(e.get("replay") for a in answers for e in a if e["type"] == "message.end")
    assert client.texts == {n: f"Reply **{n}**" for n in range(1, 131)}

    # Resuming from near the end sends just what is missing, with no gap to fill.
    recent = await replayed(client, {"type": "resume", "after_seq": 120})
    assert [e["type"] for e in recent] == ["message.end"] * 10 + ["session.state"]
    await client.close()


async def test_a_replay_is_cut_by_size_as_well_as_count(user):
    big = "x" * (REPLAY_MAX_CHARS // 4)
    session_id = await database_sync_to_async(session_with_history)(user, 12, content=lambda n: big)
    client = Client(user, session_id)
    await client.connect(after_seq=None)
    answer = await replayed(client, {"type": "resume", "after_seq": 0})
    seqs = [e["message"]["seq"] for e in answer if e["type"] == "message.end"]
    assert seqs == [9, 10, 11, 12]
    assert answer[0] == {"type": "history.gap", "after_seq": 0, "before_seq": 9}
    await client.close()


async def test_a_finished_message_is_rendered_once_however_often_it_is_replayed(user, monkeypatch):
    rendered = []
    real = store.render_markdown

    def counting(text, **kwargs):
        rendered.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(store, "render_markdown", counting)
    session_id = await database_sync_to_async(session_with_history)(user, 30)
    for _ in range(3):
        client = Client(user, session_id)
        await client.connect(after_seq=0)
        await client.until(lambda e: e["type"] == "session.state")
        ends = client.of_type("message.end")
        assert len(ends) == 30
        assert ends[0]["message"]["html"] == "<p>Reply <strong>1</strong></p>\n"
        await client.close()
    assert len(rendered) == 30


async def test_a_changed_message_is_rendered_again(user):
    session_id = await database_sync_to_async(session_with_history)(user, 1)
    client = Client(user, session_id)
    await client.connect(after_seq=0)
    first = await client.until(lambda e: e["type"] == "message.end")
    assert first["message"]["html"] == "<p>Reply <strong>1</strong></p>\n"
    await database_sync_to_async(Message.objects.filter(session_id=session_id).update)(
        content="Edited *later*"
    )
    await client.send({"type": "resume", "after_seq": 0})
    again = await client.until(lambda e: e["type"] == "message.end")
    assert again["message"]["html"] == "<p>Edited <em>later</em></p>\n"
    await client.close()


async def test_a_long_replay_does_not_hold_up_other_sockets(user, other_user, monkeypatch):
    """The replay renders on a worker thread, not the one thread every socket's database
    calls share: while one is stuck rendering, another user's resume is answered."""
    rendering, release = threading.Event(), threading.Event()
    real = store.render_markdown

    def stuck(text, **kwargs):
        rendering.set()
        release.wait(timeout=60)
        return real(text, **kwargs)

    slow_id = await database_sync_to_async(session_with_history)(user, 3)
    quick_id = await database_sync_to_async(session_with_history)(other_user, 0)
    slow, quick = Client(user, slow_id), Client(other_user, quick_id)
    await slow.connect(after_seq=None)
    await quick.connect(after_seq=None)
    monkeypatch.setattr(store, "render_markdown", stuck)

    await slow.send({"type": "resume", "after_seq": 0})
    assert await asyncio.to_thread(rendering.wait, 30)
    try:
        await quick.send({"type": "resume", "after_seq": 0})
        state = await quick.until(lambda e: e["type"] == "session.state", timeout=20)
        assert state["status"] == "completed"  # answered while the replay is still stuck
    finally:
        release.set()
    await slow.until(lambda e: e["type"] == "session.state")
    assert len(slow.of_type("message.end")) == 3
    await slow.close()
    await quick.close()
