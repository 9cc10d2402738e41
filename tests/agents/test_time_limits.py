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
from agents.providers.base import ChatMessage
from agents.providers.fake import FakeProvider, Hold
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
    assert "took longer than one call may take" in content
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
