"""The model queue (agents.model_queue): one line for the local model on this machine. Calls
wait while the line is full, go by priority then arrival, a dead process's ticket never holds
the line, a stop while waiting leaves it, and the page hears where a call stands, with a wait
estimated from the calls ahead. A call is charged to its session's budget when it is let in,
not while it waits (and one whose budget is spent does not wait). Through a real session: the
turn's line says "queued", the call's trace and time limit start when it is let in, and the
wait does not count against the session's run time. Threads stand for other processes: the
tickets live in the database, as they do between processes."""

import threading
import time
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.db import connections
from django.utils import timezone

from agents import call_policy, model_queue
from agents.budget import charge_call
from agents.errors import BudgetSpent
from agents.model_queue import BACKGROUND, LIVE, Place
from agents.models import LLMCall, ModelTicket
from agents.providers.base import CallOptions, ChatMessage, GenerationCancelled
from agents.providers.fake import FakeProvider
from conversations import services
from conversations.models import PlanningSession
from planagents.jobs import wait_for_jobs
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = pytest.mark.django_db(transaction=True)

HANDOVER = {"signal": "HANDOVER", "reason": "Over to you."}


def never() -> bool:
    return False


class Caller:
    """One call in line on its own thread, holding its place until `done` is set."""

    def __init__(self, purpose: str, priority: int = LIVE, estimate_s: float | None = None):
        self.purpose = purpose
        self.priority = priority
        self.estimate_s = estimate_s
        self.told: list[Place] = []
        self.admitted = threading.Event()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with model_queue.priority(self.priority), model_queue.in_line(
                session_id=None, profile="local", purpose=self.purpose,
                estimate_s=self.estimate_s, should_stop=lambda: self.stop, tell=self.told.append,
            ):  # fmt: skip
                self.admitted.set()
                self.done.wait(20)
        except BaseException as exc:  # noqa: BLE001 (read by the test)
            self.error = exc
        finally:
            connections.close_all()

    def start(self) -> "Caller":
        self.thread.start()
        return self

    def finish(self) -> None:
        self.done.set()
        self.thread.join(20)


def waiting(purpose: str) -> None:
    """Until `purpose`'s ticket is in line (so arrival order is what the test says)."""
    deadline = time.monotonic() + 10
    while not ModelTicket.objects.filter(purpose=purpose).exists():
        assert time.monotonic() < deadline, f"{purpose} never queued"
        time.sleep(0.02)


def _ticket(purpose, *, estimate_s=None, ran_s=None, seen_s=0, priority=LIVE):
    """A ticket of another process: generating for `ran_s` seconds (else waiting), last
    checked in `seen_s` seconds ago."""
    now = timezone.now()
    admitted = None if ran_s is None else now - timedelta(seconds=ran_s)
    return ModelTicket.objects.create(purpose=purpose, priority=priority, estimate_s=estimate_s,
                                      admitted_at=admitted,
                                      seen_at=now - timedelta(seconds=seen_s))  # fmt: skip


def test_a_call_waits_while_the_line_is_full_and_starts_when_a_place_frees(settings):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    first = Caller("first").start()
    assert first.admitted.wait(10)
    second = Caller("second").start()
    waiting("second")
    time.sleep(3 * model_queue.POLL_SECONDS)
    assert not second.admitted.is_set()
    assert second.told and second.told[0].ahead == 1 and second.told[0].generating == 1

    first.finish()
    assert second.admitted.wait(10)
    second.finish()
    assert first.error is None and second.error is None
    assert not ModelTicket.objects.exists()  # every ticket leaves with its call


def test_as_many_calls_generate_at_once_as_the_line_is_wide(settings):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 2
    callers = [Caller(f"c{i}").start() for i in range(3)]
    for caller in callers[:2]:
        waiting(caller.purpose)
    deadline = time.monotonic() + 10
    while sum(c.admitted.is_set() for c in callers) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3 * model_queue.POLL_SECONDS)
    assert sum(c.admitted.is_set() for c in callers) == 2
    for caller in callers:
        caller.finish()
    assert all(c.admitted.is_set() for c in callers)


def test_a_live_turn_goes_before_background_work_that_came_first(settings):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    running = Caller("running").start()
    assert running.admitted.wait(10)
    background = Caller("background", priority=BACKGROUND).start()
    waiting("background")
    live = Caller("live", priority=LIVE).start()
    waiting("live")
    assert background.told[-1].ahead == 1  # only the running call is ahead of it yet

    running.finish()
    assert live.admitted.wait(10)
    assert not background.admitted.is_set()
    live.finish()
    assert background.admitted.wait(10)
    background.finish()


def test_a_dead_process_ticket_does_not_hold_the_line(settings):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    settings.PLANAGENTS_LLM_QUEUE_STALE = 5
    _ticket("killed worker", ran_s=60, seen_s=60)
    caller = Caller("mine").start()
    assert caller.admitted.wait(5)
    caller.finish()
    assert not ModelTicket.objects.filter(purpose="killed worker").exists()  # cleared away


def test_a_live_process_keeps_its_tickets_alive(settings):
    """A call that runs longer than the stale age stays in line: its process checks it in."""
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    settings.PLANAGENTS_LLM_QUEUE_STALE = 5  # checked in every ~1.7 s
    first = Caller("long call").start()
    assert first.admitted.wait(10)
    time.sleep(6)
    second = Caller("behind it").start()
    waiting("behind it")
    time.sleep(1)
    assert not second.admitted.is_set()
    first.finish()
    assert second.admitted.wait(10)
    second.finish()


def test_a_stop_while_waiting_leaves_the_line(settings):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    first = Caller("first").start()
    assert first.admitted.wait(10)
    second = Caller("second").start()
    waiting("second")
    second.stop = True
    second.thread.join(10)
    assert isinstance(second.error, GenerationCancelled)
    assert not ModelTicket.objects.filter(purpose="second").exists()
    first.finish()


def test_the_wait_is_estimated_from_the_calls_ahead(settings):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    _ticket("generating", estimate_s=100, ran_s=40)
    _ticket("waiting before", estimate_s=30)
    mine = _ticket("mine", estimate_s=50)
    _ticket("waiting after", estimate_s=500)
    where = model_queue.place(mine)
    assert (where.ahead, where.generating) == (2, 1)
    assert where.wait_s == pytest.approx(60 + 30, abs=1)

    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 2  # the call before it takes the free place
    assert model_queue.place(mine).wait_s == pytest.approx(30, abs=1)


def test_an_unmeasured_call_ahead_gives_a_count_but_no_time(settings):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    _ticket("generating", estimate_s=None, ran_s=5)
    mine = _ticket("mine", estimate_s=50)
    where = model_queue.place(mine)
    assert where.ahead == 1 and where.wait_s is None


# ------------------------------------------------------------------ through a session


@pytest.fixture
def queued_fake(monkeypatch):
    monkeypatch.setattr(FakeProvider, "queued", True)


@pytest.fixture
def session(user, codebase):
    return PlanningSession.objects.create(
        owner=user, codebase=codebase, task="Add rate limiting to login", status="running",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip


class PolicyCall:
    """One call through the call policy (agents.call_policy.call) on its own thread: `out`
    holds its reply, or what it raised."""

    def __init__(self, session_id: int, purpose: str = "behind") -> None:
        self.session_id, self.purpose = session_id, purpose
        self.out: list[object] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        prompt = [ChatMessage("user", "Add rate limiting to login.")]
        try:
            pieces = call_policy.call(self.session_id, FakeProvider("fake"), prompt,
                                      CallOptions(), never, purpose=self.purpose)  # fmt: skip
            self.out.append("".join(pieces))
        except BaseException as exc:  # noqa: BLE001 (read by the test)
            self.out.append(exc)
        finally:
            connections.close_all()


def calls_used(session: PlanningSession) -> int:
    return PlanningSession.objects.values_list("calls_used", flat=True).get(pk=session.pk)


def test_a_call_is_charged_when_it_is_let_in_not_while_it_waits(session, settings, queued_fake):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    other = Caller("another session's call").start()
    assert other.admitted.wait(10)
    FakeProvider.script("fake", "A1: count the failures per user.")
    mine = PolicyCall(session.pk)
    waiting("behind")
    time.sleep(3 * model_queue.POLL_SECONDS)
    assert calls_used(session) == 0  # the page's "LLM calls" counts none while it waits

    other.finish()
    mine.thread.join(10)
    assert mine.out == ["A1: count the failures per user."]
    assert calls_used(session) == 1


def test_a_call_whose_budget_ran_out_while_it_waited_is_refused_before_it_generates(
    session, settings, queued_fake
):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    PlanningSession.objects.filter(pk=session.pk).update(call_budget=1)
    other = Caller("another session's call").start()
    assert other.admitted.wait(10)
    FakeProvider.script("fake", "never written")
    mine = PolicyCall(session.pk)
    waiting("behind")
    charge_call(session.pk)  # the session's other call (a parallel lookup) took the last one

    other.finish()
    mine.thread.join(10)
    assert len(mine.out) == 1 and isinstance(mine.out[0], BudgetSpent)
    assert FakeProvider.pending("fake") == 1 and not FakeProvider.calls("fake")
    assert not LLMCall.objects.filter(session=session).exists()
    assert not ModelTicket.objects.exists()  # its place is given back
    assert calls_used(session) == 1


def test_a_call_whose_budget_is_spent_does_not_wait_in_line(session, settings, queued_fake):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    PlanningSession.objects.filter(pk=session.pk).update(call_budget=1, calls_used=1)
    other = Caller("another session's call").start()
    assert other.admitted.wait(10)
    mine = PolicyCall(session.pk)
    mine.thread.join(5)  # refused at once, not when the line frees
    assert len(mine.out) == 1 and isinstance(mine.out[0], BudgetSpent)
    assert not ModelTicket.objects.filter(purpose="behind").exists()
    other.finish()


async def test_a_turn_in_line_says_so_and_its_clocks_start_when_it_is_let_in(
    user, codebase, settings, queued_fake
):
    settings.PLANAGENTS_LLM_QUEUE_WIDTH = 1
    # The run may take 2 s; it waits longer than that behind another session's call, and
    # must not be stopped for it: the wait was not its own.
    settings.PLANAGENTS_SESSION_TIME_LIMIT = 2
    other = await database_sync_to_async(_ticket)("another session's turn", estimate_s=30,
                                                  ran_s=1)  # fmt: skip
    FakeProvider.script("fake", NO_LOOKUPS, "A1: count the failures per user.", HANDOVER)
    session = await database_sync_to_async(services.start_session)(
        user, codebase=codebase, task="Add rate limiting to login", mode="debate",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    client = Client(user, session.pk)
    await client.connect()
    queued = await client.until(lambda e: e["type"] == "progress" and e["phase"] == "queued")
    assert queued["queue"]["ahead"] == 1 and queued["queue"]["generating"] == 1
    assert queued["queue"]["wait_s"] == pytest.approx(29, abs=2)  # its 30 s, 1 s of it run

    await database_sync_to_async(_keep_then_free)(other, seconds=2.5)
    state = await client.until_state("awaiting_human")
    assert not state["error"]
    calls = await database_sync_to_async(list)(LLMCall.objects.filter(session=session))
    assert calls and all(c.outcome == "ok" for c in calls)
    # The trace timed the calls from when they were let in: the 2.5 s in line is in none.
    assert max(c.duration_ms for c in calls) < 2000
    await client.close()
    await wait_for_jobs(timeout=30)


def _keep_then_free(ticket, *, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ModelTicket.objects.filter(pk=ticket.pk).update(seen_at=timezone.now())
        time.sleep(0.2)
    ticket.delete()


def test_a_section_regeneration_waits_behind_live_turns():
    """plan_writer's calls queue at REGENERATION (checked here at the seam it sets)."""
    from agents import plan_writer

    seen = []

    def fake_regenerate(message_id):
        seen.append(model_queue._priority.get())

    original = plan_writer._regenerate_section
    plan_writer._regenerate_section = fake_regenerate
    try:
        plan_writer.regenerate_section(1)
    finally:
        plan_writer._regenerate_section = original
    assert seen == [model_queue.REGENERATION]
    assert model_queue._priority.get() == LIVE  # and only inside it
