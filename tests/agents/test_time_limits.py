"""Time limits: a call past PLANAGENTS_LLM_CALL_TIME_LIMIT, or a run of the agents past
PLANAGENTS_SESSION_TIME_LIMIT, stops cleanly, keeps what was written and gives the human the
floor. The held call is the scripted provider's Hold, never released: no timing is asserted,
the limit only has to pass at some point while the call waits."""

import asyncio
import time

import pytest
from channels.db import database_sync_to_async

from agents import budget, turns
from agents.models import LLMCall
from agents.providers.base import ChatMessage, ProviderError
from agents.providers.fake import FakeProvider, Hold, Reading
from conversations import services
from conversations.models import Message, PlanningSession
from planagents.jobs import wait_for_jobs
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


@pytest.fixture
async def jobs_drained():
    yield
    await wait_for_jobs(timeout=60)


@pytest.fixture
def start(user, codebase):
    async def _start(mode="debate", task="Add rate limiting to login"):
        return await database_sync_to_async(services.start_session)(
            user, codebase=codebase, task=task, mode=mode,
            agent_a_profile="fake", agent_b_profile="fake",
        )  # fmt: skip

    return _start


def held(text="A1: count the failures per user and", pieces=3):
    # Never released: only a limit (or this test's end) ends it; `timeout` bounds a broken test.
    return Hold(text, pieces, timeout=20)


def agent_messages(session):
    """The debate's turns (Agent A's evidence plan, before them, is a message of A's too)."""
    return list(session.messages.filter(role="agent", node="").values_list("content", "state"))


async def test_a_call_past_its_time_limit_stops_keeps_its_text_and_hands_over(
    start, user, settings
):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0.2
    hold = held()
    FakeProvider.script("fake", NO_LOOKUPS, hold)  # Agent A's evidence plan, then its turn
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")

    assert hold.reached.is_set() and not hold.release.is_set()
    assert "PLANAGENTS_LLM_CALL_TIME_LIMIT" in state["error"]
    assert state["options"] == ["continue", "stop"]
    # What the model wrote before the limit is kept, marked interrupted, with the reason.
    ((content, status),) = await database_sync_to_async(agent_messages)(session)
    assert content.startswith("A1: count the") and status == "interrupted"
    assert "was past its time limit" in content and "had read nothing" in content
    note = await database_sync_to_async(
        lambda: session.messages.filter(role=Message.Role.SYSTEM).last()
    )()
    assert "PLANAGENTS_LLM_CALL_TIME_LIMIT" in note.content
    call = await database_sync_to_async(LLMCall.objects.get)(session=session, purpose="debate:0")
    assert (call.outcome, call.output) == ("timed_out", "A1: count the")
    await client.close()


async def test_a_run_past_the_session_time_limit_hands_over_with_its_own_message(
    start, user, settings
):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0  # no per-call limit: the run's clock ends it
    hold = held()
    FakeProvider.script("fake", NO_LOOKUPS, hold)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    # The run's time runs out while the call is held (the job is a thread of this process).
    await asyncio.to_thread(hold.reached.wait, 20)
    budget._run_deadlines[session.pk] = time.monotonic()
    state = await client.until_state("awaiting_human")

    assert "PLANAGENTS_SESSION_TIME_LIMIT" in state["error"]
    assert "Continue gives them another run" in state["error"]
    ((content, status),) = await database_sync_to_async(agent_messages)(session)
    assert content.startswith("A1: count the") and status == "interrupted"
    await client.close()


def test_no_call_starts_once_the_runs_time_is_up(user, codebase, settings):
    settings.PLANAGENTS_SESSION_TIME_LIMIT = 0.01
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="t", mode="debate",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    with budget.session_clock(session.pk):
        time.sleep(0.05)
        with pytest.raises(budget.TimeLimitReached, match="PLANAGENTS_SESSION_TIME_LIMIT"):
            turns.text_turn(
                session,
                turns.Agent("A", "fake"),
                turn_key="debate:0",
                node="",
                messages=[ChatMessage("user", "Add rate limiting.")],
            )
    assert FakeProvider.calls() == []
    session.refresh_from_db()
    assert session.calls_used == 0  # refused before it was charged


def test_the_runs_clock_ends_with_the_run(user, codebase, settings):
    settings.PLANAGENTS_SESSION_TIME_LIMIT = 0.01
    with budget.session_clock(1):
        time.sleep(0.05)
        with pytest.raises(budget.TimeLimitReached):
            budget.check_session_time(1)
    budget.check_session_time(1)  # a call outside any run (a later job) is not held to it


HANDOVER = {"signal": "HANDOVER", "reason": "Over to you."}


async def test_a_call_past_its_limit_still_reading_its_prompt_is_slow_not_stalled(
    start, user, settings
):
    """The limit passes while the model is still reading the prompt, a batch at a time: it is
    progressing, so it goes on and its reply is written whole."""
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0.3
    reading = Reading("A1: count the failures per user.", batches=8, seconds=0.12)
    FakeProvider.script("fake", NO_LOOKUPS, reading, HANDOVER)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")

    assert not state["error"]
    ((content, status),) = await database_sync_to_async(agent_messages)(session)
    assert (content, status) == ("A1: count the failures per user.", "complete")
    call = await database_sync_to_async(LLMCall.objects.get)(session=session, purpose="debate:0")
    assert call.outcome == "ok" and call.duration_ms >= 8 * 120  # well past its 0.3 s limit
    await client.close()


def _history(session, profile, *, read_per_s, write_per_s, calls=3):
    """Calls of `profile` as the trace records them: 2,000 new prompt tokens and 400 written."""
    for _ in range(calls):
        first = int(2000 / read_per_s * 1000)
        LLMCall.objects.create(
            session=session, profile=profile, prompt_tokens=2500, cached_tokens=500,
            completion_tokens=401, first_piece_ms=first,
            duration_ms=first + int(400 / write_per_s * 1000),
        )  # fmt: skip


def test_the_limit_follows_the_machines_measured_speed_and_the_prompt_size(
    user, codebase, settings
):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 600
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="t", mode="debate"
    )
    # Nothing measured yet: the setting is the limit.
    assert budget.CallClock(session.pk, "local-1.5b", None, prompt_tokens=2000).limit == 600
    # Quiet (the 1.5B model on 2 cores reads ~68 and writes ~27 tokens/s): 600 s is plenty.
    _history(session, "local-1.5b", read_per_s=68, write_per_s=27)
    quiet = budget.CallClock(session.pk, "local-1.5b", None, prompt_tokens=2000, reply_tokens=400)
    assert quiet.estimate == pytest.approx(2000 / 68 + 400 / 27, rel=0.01)
    assert quiet.limit == 600
    # Under load, ten times slower: the limit grows with the measured speed...
    _history(session, "local-1.5b", read_per_s=6.8, write_per_s=2.7, calls=12)
    loaded = budget.CallClock(session.pk, "local-1.5b", None, prompt_tokens=2000, reply_tokens=400)
    assert loaded.estimate == pytest.approx(2000 / 6.8 + 400 / 2.7, rel=0.01)
    assert loaded.limit == pytest.approx(3 * loaded.estimate)
    # ...and with the prompt's size.
    longer = budget.CallClock(session.pk, "local-1.5b", None, prompt_tokens=6000, reply_tokens=400)
    assert longer.limit > loaded.limit
    message = budget.call_time_message("local-1.5b", loaded.limit, loaded.estimate, 120)
    assert "3 times its estimate" in message and "measured speed" in message


async def test_stop_reply_as_a_call_reaches_its_limit_is_a_stop_by_you(
    start, user, settings, monkeypatch
):
    """The human's Stop reply came before the limit passed, but the call's own check of it had
    not run yet: the call is stopped by them, and says so, not by the time limit."""
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 2
    monkeypatch.setattr(turns, "STOP_CHECK_SECONDS", 3600)  # the check reads the flags once
    hold = held()
    FakeProvider.script("fake", NO_LOOKUPS, hold)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(hold.reached.wait, 20)
    await database_sync_to_async(PlanningSession.objects.filter(pk=session.pk).update)(
        cancel_requested=True
    )
    state = await client.until_state("awaiting_human")

    assert "you stopped Agent A's reply" in state["error"]
    assert "PLANAGENTS_LLM_CALL_TIME_LIMIT" not in state["error"]
    ((content, status),) = await database_sync_to_async(agent_messages)(session)
    assert status == "interrupted" and "Reply stopped by you." in content
    assert "time limit" not in content
    fresh = await database_sync_to_async(PlanningSession.objects.get)(pk=session.pk)
    assert not fresh.cancel_requested
    await client.close()


async def test_stop_as_a_call_reaches_its_limit_ends_the_session_with_its_summary(
    start, user, settings, monkeypatch
):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 2
    monkeypatch.setattr(turns, "STOP_CHECK_SECONDS", 3600)
    hold = held()
    FakeProvider.script("fake", NO_LOOKUPS, hold)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(hold.reached.wait, 20)
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")

    fresh = await database_sync_to_async(PlanningSession.objects.get)(pk=session.pk)
    assert fresh.status == "stopped" and "PLANAGENTS_LLM_CALL_TIME_LIMIT" not in fresh.error
    summary = await database_sync_to_async(session.messages.filter(node="summary").count)()
    assert summary == 1
    await client.close()


async def test_a_stop_pending_when_the_reply_fails_ends_the_session_with_its_summary(
    start, user, settings, monkeypatch
):
    """Stop was pressed, and the model failed before the call's check read it: the human's
    Stop is honoured (stopped, with the summary), not left pending behind an "awaiting you"
    that names the failure."""
    settings.PLANAGENTS_FALLBACK_PROFILE = "fake"  # no other profile to finish the turn on
    monkeypatch.setattr(turns, "STOP_CHECK_SECONDS", 3600)  # the check reads the flags once
    dying = Hold("A1: count the failures per user", pieces=2, fail=ProviderError("it died"))
    FakeProvider.script("fake", NO_LOOKUPS, dying)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(dying.reached.wait, 20)
    await client.send({"type": "control", "action": "stop"})
    await client.until(lambda e: e["type"] == "stopping")
    dying.release.set()
    state = await client.until(
        lambda e: e["type"] == "session.state" and e["status"] in ("stopped", "awaiting_human")
    )

    assert state["status"] == "stopped"
    summary = await database_sync_to_async(session.messages.filter(node="summary").count)()
    assert summary == 1
    await client.close()
