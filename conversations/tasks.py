"""Jobs that run planning sessions. Dispatched through planagents.jobs; safe to run twice.

A run first takes the session's lease in the database (planagents.leases) and renews it,
beating the session's heartbeat, while it works: on Celery workers the runs may be in
different processes or machines, and two embedded servers may share one database. In one
process a lock also keeps two runs apart (the second waits). A second run finds the lease live
and leaves; a worker that dies stops renewing, and the sweep on any worker
(services.recover_stalled_sessions) dispatches the session again once the lease has run out.
The new run resumes at the last committed node or turn: the cut-off message is reopened under
its turn_key and its text replaced, never duplicated.

A server that is stopping (planagents.shutdown) parks its runs: the turn is left as it was,
the lease released and the session marked stalled (`park_session`), so the sweep at the next
start resumes it at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.utils import timezone

from agents.answers import answer_directly
from agents.budget import session_clock
from agents.debate import FINISHED, run_debate, write_debate_plan
from agents.investigation.clarify import QuestionAsked
from agents.planning.workflow import run_planning
from agents.runtime import SessionStopped, beat, stop_requested
from agents.summary import write_summary
from agents.turns import TurnFailed, kept_by
from agents.workflow import COMPLETED, STOPPED
from conversations.models import Message, PlanningSession, PlanningState
from conversations.store import add_message, publish_state
from planagents import leases, shutdown
from planagents.jobs import distributed

log = logging.getLogger(__name__)

# One runner per session per process; a second dispatch waits for the first to finish. A
# session's lock is kept only while a run holds it or waits for it (`users`), so the dict
# holds the sessions running now, not every session this process ever ran.
_session_locks: dict[int, tuple[threading.Lock, int]] = {}  # id → (lock, users)
_locks_guard = threading.Lock()


@contextmanager
def _one_runner(session_id: int) -> Iterator[None]:
    with _locks_guard:
        lock, users = _session_locks.get(session_id) or (threading.Lock(), 0)
        _session_locks[session_id] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _locks_guard:
            users = _session_locks[session_id][1] - 1
            if users:
                _session_locks[session_id] = (lock, users)
            else:
                del _session_locks[session_id]


def run_session(session_id: int) -> None:
    try:
        if distributed():
            _leased_runs(session_id)
        else:
            with _one_runner(session_id):
                _leased_runs(session_id)
    except shutdown.ShuttingDown:
        park_session(session_id)  # its lease was released on the way out


def _leased_runs(session_id: int) -> None:
    # Released before looking at the status again: a run dispatched while this one was
    # finishing either saw the lease free, or is this loop's next round.
    for _ in range(3):
        shutdown.check()
        try:
            with leases.held(lease_name(session_id), on_renew=lambda: beat(session_id)):
                _timed_run(session_id)
        except leases.LeaseHeld:
            log.info("session %s is already being run by another job", session_id)
            return
        if not PlanningSession.objects.filter(
            pk=session_id, status=PlanningSession.Status.RUNNING
        ).exists():
            return


def park_session(session_id: int) -> None:
    """Leave a running session for the next start: its heartbeat is set back past a lease
    period, so the sweep (services.recover_stalled_sessions) finds it stalled at once and
    runs it again from its last committed node; a turn cut off mid-stream is re-streamed in
    its own message."""
    long_ago = timezone.now() - timedelta(seconds=settings.PLANAGENTS_JOB_LEASE_SECONDS + 1)
    if PlanningSession.objects.filter(pk=session_id, status=PlanningSession.Status.RUNNING).update(
        heartbeat_at=long_ago
    ):
        cut = (
            Message.objects.filter(session_id=session_id, state=Message.State.STREAMING)
            .values_list("turn_key", flat=True)
            .first()
        )
        log.warning(
            "session %s parked%s: it resumes at the next start",
            session_id,
            f" mid-turn ({cut})" if cut else "",
        )


def _timed_run(session_id: int) -> None:
    # One run of the agents has PLANAGENTS_SESSION_TIME_LIMIT; Continue starts another.
    with session_clock(session_id):
        _run(session_id)


def lease_name(session_id: int) -> str:
    return f"session:{session_id}"


def _run(session_id: int) -> None:
    session = PlanningSession.objects.filter(pk=session_id).first()
    if session is None or session.status != PlanningSession.Status.RUNNING:
        return
    beat(session_id)
    publish_state(session_id)
    try:
        if answer_directly(session_id):  # a greeting or a code question: no plan
            _finish(session_id, PlanningSession.Status.COMPLETED, summary=False)
        elif session.mode == PlanningSession.Mode.DEBATE:
            outcome = run_debate(session_id)
            if outcome == FINISHED:
                _finish(session_id, PlanningSession.Status.COMPLETED, summary=True)
            else:
                _hand_over(session_id)
        else:
            outcome = run_planning(session_id)
            if outcome == COMPLETED:
                _finish(session_id, PlanningSession.Status.COMPLETED, summary=False)
            else:
                _hand_over(session_id)
    except SessionStopped:
        _finish(session_id, PlanningSession.Status.STOPPED, summary=True)
    except QuestionAsked:  # Agent A asked the human something: theirs is the floor, not a failure
        _hand_over(session_id)
    except TurnFailed as exc:
        if stop_requested(session_id):  # a Stop came as the turn failed: it is honoured
            _finish(session_id, PlanningSession.Status.STOPPED, summary=True)
        else:
            _fail_turn(session_id, str(exc), kept_by(exc))
    except SoftTimeLimitExceeded:
        _fail_turn(session_id, "the agents ran past the time limit of one job")
    except Exception as exc:
        log.exception("session %s crashed", session_id)
        _fail_turn(session_id, f"an unexpected error ({type(exc).__name__})")


def _hand_over(session_id: int) -> None:
    PlanningSession.objects.filter(pk=session_id, status=PlanningSession.Status.RUNNING).update(
        status=PlanningSession.Status.AWAITING_HUMAN
    )
    publish_state(session_id)


def _finish(session_id: int, status: str, *, summary: bool) -> None:
    session = PlanningSession.objects.select_related("codebase").get(pk=session_id)
    if summary:
        write_summary(session)
        if session.mode == PlanningSession.Mode.DEBATE:
            write_debate_plan(session)  # a debate ends in a plan, as planning mode does
    if status == PlanningSession.Status.STOPPED:
        PlanningState.objects.filter(session_id=session_id).exclude(current_node=COMPLETED).update(
            current_node=STOPPED
        )
    PlanningSession.objects.filter(pk=session_id).exclude(status=status).update(
        status=status, heartbeat_at=timezone.now()
    )
    publish_state(session_id)


UNFINISHED_STEP = "Finished messages are kept; Continue runs the unfinished step again."
"""What a pause keeps when no turn said more (a call outside any message, a crash, a job's
time limit): finished turns are never re-run (agents.turns, by turn_key)."""


def _fail_turn(session_id: int, reason: str, kept: str = "") -> None:
    """A model failed mid-turn: say what is kept for Continue, let the human go on or stop."""
    add_message(
        session_id,
        role=Message.Role.SYSTEM,
        content=f"**The agents paused:** {reason}. {kept or UNFINISHED_STEP} "
        "Press Continue, or Stop.",
    )
    PlanningSession.objects.filter(pk=session_id, status=PlanningSession.Status.RUNNING).update(
        status=PlanningSession.Status.AWAITING_HUMAN, error=reason
    )
    publish_state(session_id)


def regenerate_plan_section(message_id: int) -> None:
    """Agent A rewrites one plan section as the human asked in message `message_id`."""
    from agents.plan_writer import regenerate_section

    regenerate_section(message_id)
