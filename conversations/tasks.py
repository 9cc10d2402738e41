"""Jobs that run planning sessions. Dispatched through planagents.jobs; safe to run twice."""

from __future__ import annotations

import logging
import threading
from collections import defaultdict

from django.utils import timezone

from agents.debate import FINISHED, run_debate
from agents.planning.workflow import COMPLETED, run_planning
from agents.runtime import SessionStopped, beat
from agents.summary import write_summary
from agents.turns import TurnFailed
from conversations.models import Message, PlanningSession, PlanningState
from conversations.services import add_message, publish_state

log = logging.getLogger(__name__)

# One runner per session per process; a second dispatch waits for the first to finish.
_session_locks: defaultdict[int, threading.Lock] = defaultdict(threading.Lock)


def run_session(session_id: int) -> None:
    with _session_locks[session_id]:
        _run(session_id)


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
