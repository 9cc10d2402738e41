"""Jobs that run planning sessions. Dispatched through planagents.jobs; safe to run twice.

In one process (the embedded default) a lock keeps two runs of a session apart. On Celery
workers the runs may be in different processes or machines, so a run first takes the
session's lease in the database (planagents.leases) and renews it, beating the session's
heartbeat, while it works. A second run finds the lease live and leaves; a worker that dies
stops renewing, and the sweep on any worker (recover_stalled_sessions) dispatches the session
again once the lease has run out. The new run resumes at the last committed node or turn: the
cut-off message is reopened under its turn_key and its text replaced, never duplicated.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.utils import timezone

from agents.debate import FINISHED, run_debate
from agents.planning.workflow import COMPLETED, run_planning
from agents.runtime import SessionStopped, beat
from agents.summary import write_summary
from agents.turns import TurnFailed
from conversations.models import Message, PlanningSession, PlanningState
from conversations.services import add_message, publish_state, resume_if_stalled
from planagents import leases
from planagents.jobs import distributed

log = logging.getLogger(__name__)

# One runner per session per process; a second dispatch waits for the first to finish.
_session_locks: defaultdict[int, threading.Lock] = defaultdict(threading.Lock)


def run_session(session_id: int) -> None:
    if not distributed():
        with _session_locks[session_id]:
            _run(session_id)
        return
    # Released before looking at the status again: a run dispatched while this one was
    # finishing either saw the lease free, or is this loop's next round.
    for _ in range(3):
        try:
            with leases.held(lease_name(session_id), on_renew=lambda: beat(session_id)):
                _run(session_id)
        except leases.LeaseHeld:
            log.info("session %s is already being run by another job", session_id)
            return
        if not PlanningSession.objects.filter(
            pk=session_id, status=PlanningSession.Status.RUNNING
        ).exists():
            return


def lease_name(session_id: int) -> str:
    return f"session:{session_id}"


def recover_stalled_sessions() -> list[int]:
    """Dispatch again every running session whose job died: no live lease, and no heartbeat
    for a whole lease period. Returns the ids it dispatched (several workers may sweep at once;
    the compare-and-swap in resume_if_stalled lets only one of them dispatch)."""
    seconds = settings.PLANAGENTS_JOB_LEASE_SECONDS
    cutoff = timezone.now() - timedelta(seconds=seconds)
    candidates = PlanningSession.objects.filter(
        status=PlanningSession.Status.RUNNING, heartbeat_at__lt=cutoff
    ).values_list("pk", flat=True)
    recovered = []
    for session_id in candidates:
        if leases.is_live(lease_name(session_id)):
            continue
        if resume_if_stalled(session_id, stale_after_seconds=seconds):
            log.warning("session %s: its job died; dispatched it again", session_id)
            recovered.append(session_id)
    return recovered


def _run(session_id: int) -> None:
    session = PlanningSession.objects.filter(pk=session_id).first()
    if session is None or session.status != PlanningSession.Status.RUNNING:
        return
    beat(session_id)
    publish_state(session_id)
    try:
        if session.mode == PlanningSession.Mode.DEBATE:
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
    except TurnFailed as exc:
        _fail_turn(session_id, str(exc))
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
    if status == PlanningSession.Status.STOPPED:
        PlanningState.objects.filter(session_id=session_id).exclude(current_node=COMPLETED).update(
            current_node="stopped"
        )
    PlanningSession.objects.filter(pk=session_id).exclude(status=status).update(
        status=status, heartbeat_at=timezone.now()
    )
    publish_state(session_id)


def _fail_turn(session_id: int, reason: str) -> None:
    """A model failed mid-turn: keep everything, tell the human, let them retry or stop."""
    add_message(
        session_id,
        role=Message.Role.SYSTEM,
        content=f"**The agents paused:** {reason}. Nothing was lost. Press Continue to retry, or Stop.",
    )
    PlanningSession.objects.filter(pk=session_id, status=PlanningSession.Status.RUNNING).update(
        status=PlanningSession.Status.AWAITING_HUMAN, error=reason
    )
    publish_state(session_id)
