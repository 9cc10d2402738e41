"""Use cases for planning sessions: each checks permission, does one thing, raises a named
error the caller can show. Views and the websocket consumer are thin shells over these."""

from __future__ import annotations

import logging
import math
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from agents import rules_gate
from agents.analysis import first_look
from agents.budget import budget_defaults, budget_spent
from agents.language import detect_language
from agents.providers import list_profiles
from agents.workflow import APPROVE, CHECKPOINT, MODIFY, REVISE, human_move
from conversations.models import Message, PlanningSession, PlanningState
from conversations.permissions import can_act_in_session, can_view_session
from conversations.store import add_message, publish_state
from conversations.tasks import lease_name, run_session
from planagents import leases
from planagents.jobs import dispatch
from rag.models import Codebase

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 20_000
MESSAGE_RATE_WINDOW = timedelta(minutes=1)
"""The window PLANAGENTS_SESSION_MESSAGES_PER_MINUTE and ..._USER_... count messages in."""


ENDED = (PlanningSession.Status.COMPLETED, PlanningSession.Status.STOPPED)
"""Statuses after which nothing more happens in a session."""


class SessionError(Exception):
    """An action on a session was refused; the message says why."""


class SessionNotFound(SessionError):
    """No such session for this user (also said for other users' sessions)."""


class TooManyMessages(SessionError):
    """The human sent more messages in the last minute than the limits allow."""


# ---------------------------------------------------------------- lookups


def sessions_for(user: Any) -> QuerySet[PlanningSession]:
    return PlanningSession.objects.filter(owner=user).select_related("codebase")


def get_session_for(user: Any, session_id: int) -> PlanningSession:
    session = PlanningSession.objects.select_related("codebase").filter(pk=session_id).first()
    if session is None or not can_view_session(user, session):
        raise SessionNotFound("That session does not exist.")
    return session


# ---------------------------------------------------------------- creating


def start_session(
    user: Any,
    *,
    codebase: Codebase,
    task: str,
    mode: str,
    agent_a_profile: str,
    agent_b_profile: str,
    max_exchanges: int | None = None,
    fallback_profile: str = "",
) -> PlanningSession:
    if codebase.owner_id != user.pk:
        raise SessionError("You can only plan on your own codebases.")
    if not codebase.is_ready:
        raise SessionError(
            f"The codebase “{codebase.name}” is not ready yet ({codebase.get_status_display()})."
        )
    task = task.strip()
    if not task:
        raise SessionError("Describe the task for the agents.")
    if len(task) > MAX_MESSAGE_CHARS:
        raise SessionError(
            f"The task is too long ({len(task)} characters; at most {MAX_MESSAGE_CHARS})."
        )
    if mode not in PlanningSession.Mode.values:
        raise SessionError(f"Unknown mode {mode!r}.")
    profiles = {info.name: info for info in list_profiles()}
    for profile in (agent_a_profile, agent_b_profile, fallback_profile):
        if profile == fallback_profile == "":
            continue  # no fallback chosen: PLANAGENTS_FALLBACK_PROFILE decides
        info = profiles.get(profile)
        if info is None:
            raise SessionError(f"Unknown model profile {profile!r}.")
        if not info.available:
            raise SessionError(f"The profile “{info.label}” is not available: {info.reason}")

    call_budget, token_budget = budget_defaults()
    with transaction.atomic():
        session = PlanningSession.objects.create(
            owner=user,
            codebase=codebase,
            title=_title_from(task),
            task=task,
            mode=mode,
            agent_a_profile=agent_a_profile,
            agent_b_profile=agent_b_profile,
            language=detect_language(task),
            task_analysis=first_look(codebase, task),
            max_exchanges=max_exchanges or settings.PLANAGENTS_DEBATE_EXCHANGES,
            fallback_profile=fallback_profile,
            call_budget=call_budget,
            token_budget=token_budget,
            status=PlanningSession.Status.RUNNING,
            heartbeat_at=timezone.now(),
        )
        PlanningState.objects.create(session=session)
        add_message(session.pk, role=Message.Role.USER, content=task)
        _dispatch_run(session.pk)
    return session


def _title_from(task: str) -> str:
    first_line = task.strip().splitlines()[0]
    return first_line if len(first_line) <= 80 else first_line[:77].rstrip() + "…"


# ---------------------------------------------------------------- messages


# ---------------------------------------------------------------- human actions


def post_user_message(user: Any, session_id: int, text: str) -> Message:
    """The human says something. While agents run it is read at their next turn; when the
    floor is the human's, it hands it back to the agents (debate) or counts as a change
    request (planning checkpoint)."""
    session = _session_to_act_in(user, session_id)
    text = _clean_text(text)
    if session.status in (PlanningSession.Status.COMPLETED, PlanningSession.Status.STOPPED):
        raise SessionError("This session has ended; start a new one to keep planning.")
    if session.status == PlanningSession.Status.AWAITING_HUMAN and _at_checkpoint(session):
        return request_changes(user, session_id, text)
    _check_message_rate(user, session_id)
    with transaction.atomic():
        message = add_message(session_id, role=Message.Role.USER, content=text)
        if session.status == PlanningSession.Status.AWAITING_HUMAN:
            _hand_back_to_agents(session_id, from_status=PlanningSession.Status.AWAITING_HUMAN)
    return message


def continue_session(user: Any, session_id: int) -> None:
    """Give the floor back to the agents (after a handover, or to retry after a failure)."""
    session = _session_to_act_in(user, session_id)
    if session.status != PlanningSession.Status.AWAITING_HUMAN or _at_checkpoint(session):
        raise SessionError(
            "The agents can only be asked to continue when they have handed over to you."
        )
    with transaction.atomic():
        _hand_back_to_agents(session_id, from_status=PlanningSession.Status.AWAITING_HUMAN)


def cancel_reply(user: Any, session_id: int) -> None:
    """Stop the reply being written, keep its text (marked interrupted) and give the human the
    floor; unlike stop, the session goes on. The job sees the flag at its next check."""
    session = _session_to_act_in(user, session_id)
    if session.status != PlanningSession.Status.RUNNING:
        raise SessionError("No agent is writing right now.")
    moved = PlanningSession.objects.filter(
        pk=session_id, status=PlanningSession.Status.RUNNING
    ).update(cancel_requested=True)
    if not moved:
        raise SessionError("The agents already stopped; reload to see where the session is.")


def approve(user: Any, session_id: int, override: Any = "") -> None:
    """Approve the proposal. One breaking a critical codebase rule needs `override`: the
    human's reason, recorded as their message (and listed in the final plan)."""
    session = _session_to_act_in(user, session_id)
    _require_checkpoint(session)
    blocking = rules_gate.blocking(session_id)
    reason = override.strip() if isinstance(override, str) else ""
    if blocking and not reason:
        labels = ", ".join(v["label"] for v in blocking)
        raise SessionError(
            f"The proposal breaks critical rule(s) {labels}. Ask for changes, or override "
            "them with a reason to approve it anyway."
        )
    start, target = human_move(APPROVE)
    with transaction.atomic():
        moved = PlanningState.objects.filter(session_id=session_id, current_node=start).update(
            current_node=target
        )
        if not moved:
            raise SessionError("The plan is not waiting for approval any more.")
        if blocking:
            add_message(
                session_id,
                role=Message.Role.USER,
                content=rules_gate.override_text(blocking, reason[:MAX_MESSAGE_CHARS]),
                data=rules_gate.override_record(session_id, blocking, reason[:MAX_MESSAGE_CHARS]),
            )
        add_message(
            session_id,
            role=Message.Role.USER,
            content="Approved the proposal. Write the final plan.",
        )
        _hand_back_to_agents(session_id, from_status=PlanningSession.Status.AWAITING_HUMAN)


def request_changes(user: Any, session_id: int, text: Any) -> Message:
    session = _session_to_act_in(user, session_id)
    _require_checkpoint(session)
    text = _clean_text(text)
    _check_message_rate(user, session_id)
    start, target = human_move(MODIFY)
    with transaction.atomic():
        moved = PlanningState.objects.filter(session_id=session_id, current_node=start).update(
            current_node=target, feedback=text, validation_failures=0
        )
        if not moved:
            raise SessionError("The plan is not waiting for your review any more.")
        message = add_message(
            session_id, role=Message.Role.USER, content=f"Requested changes: {text}"
        )
        _hand_back_to_agents(session_id, from_status=PlanningSession.Status.AWAITING_HUMAN)
    return message


def revise(user: Any, session_id: int) -> str:
    """Reopen a completed planning session at the checkpoint, to revise its latest plan. The
    owner may do it with or without a review; when the reviewer asked for changes, their notes
    are returned as the suggested change request (the page prefills it, the owner edits it),
    and "Request changes" from there runs the revision loop to a new plan version."""
    session = _session_to_act_in(user, session_id)
    plan = session.plans.order_by("-version").first()
    if session.mode != PlanningSession.Mode.PLANNING:
        raise SessionError("Only planning sessions can be revised; start a new session instead.")
    if session.status != PlanningSession.Status.COMPLETED or plan is None:
        raise SessionError("Only a completed session with a plan can be revised.")
    notes = revision_notes(plan)
    start, target = human_move(REVISE)
    with transaction.atomic():
        # Both rows by compare-and-swap: a second Revise (another tab) finds them moved.
        moved = PlanningState.objects.filter(session_id=session_id, current_node=start).update(
            current_node=target, validation_failures=0
        )
        reopened = moved and PlanningSession.objects.filter(
            pk=session_id, status=PlanningSession.Status.COMPLETED
        ).update(
            status=PlanningSession.Status.AWAITING_HUMAN,
            stop_requested=False,
            cancel_requested=False,
            error="",
        )
        if not reopened:  # raising inside atomic() rolls back the state's move too
            raise SessionError("This session was reopened already; reload to see where it is.")
        review = (
            f" The reviewer set it to *{plan.get_review_status_display()}*"
            + (" and wrote:\n\n> " + notes.replace("\n", "\n> ") if notes else ".")
            if plan.review_status != plan.Review.DRAFT
            else ""
        )
        add_message(
            session_id,
            role=Message.Role.SYSTEM,
            content=f"**Plan v{plan.version} reopened for revision.** Request changes to run "
            "the proposal, review and validation again; the approved result becomes the next "
            f"plan version.{review}",
            data={"revise": {"plan": plan.version, "notes": notes}},
        )
    transaction.on_commit(lambda: publish_state(session_id))
    return notes


def revision_notes(plan: Any) -> str:
    """What a revision of `plan` starts from: the reviewer's notes when they asked for changes
    (or rejected it), nothing otherwise."""
    asked = (plan.Review.CHANGES_REQUESTED, plan.Review.REJECTED)
    return plan.review_notes.strip() if plan.review_status in asked else ""


def revision_prefill(session: PlanningSession) -> str | None:
    """The change request to suggest on the page: the notes of a revision just opened (and
    not answered yet); None when the session is not waiting on one."""
    if session.status != PlanningSession.Status.AWAITING_HUMAN or not _at_checkpoint(session):
        return None
    last = session.messages.order_by("-seq").first()
    revise = last.data.get("revise") if last and isinstance(last.data, dict) else None
    return str(revise.get("notes") or "") if isinstance(revise, dict) else None


def can_revise(user: Any, session: PlanningSession) -> bool:
    """Whether the page offers Revise: the owner's completed planning session with a plan."""
    return (
        can_act_in_session(user, session)
        and session.mode == PlanningSession.Mode.PLANNING
        and session.status == PlanningSession.Status.COMPLETED
        and session.plans.exists()
    )


def stop(user: Any, session_id: int) -> None:
    """Stop the session. A running job sees the flag at its next check and writes the summary;
    a session waiting for the human gets its summary written by a new job. Idempotent: a second
    Stop (a double click, another tab) writes nothing again."""
    _session_to_act_in(user, session_id)
    with transaction.atomic():
        # Compare-and-swap on the flag: of two Stops only one sees it unset and says so.
        claimed = (
            PlanningSession.objects.filter(pk=session_id, stop_requested=False)
            .exclude(status__in=ENDED)
            .update(stop_requested=True)
        )
        status = PlanningSession.objects.values_list("status", flat=True).get(pk=session_id)
        if status in ENDED:
            raise SessionError("This session has already ended.")
        if claimed:
            add_message(session_id, role=Message.Role.USER, content="Stopped the session.")
        if status != PlanningSession.Status.RUNNING:
            # Nobody is running to see the flag (this Stop's, or an earlier one's that a job
            # handed over without reading): a new job writes the summary.
            _hand_back_to_agents(session_id, from_status=status)
    publish_state(session_id)


def resume_if_stalled(session_id: int, *, stale_after_seconds: int = 90) -> bool:
    """Re-dispatch a running session whose job stopped beating (the process died mid-turn).
    Turns are idempotent, so the worst case of a false alarm is one wasted check."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_seconds)
    with transaction.atomic():
        claimed = (
            PlanningSession.objects.filter(pk=session_id, status=PlanningSession.Status.RUNNING)
            .filter(heartbeat_at__lt=cutoff)
            .update(heartbeat_at=timezone.now())
        )
        if claimed:
            _dispatch_run(session_id)
    return bool(claimed)


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


def _hand_back_to_agents(session_id: int, *, from_status: str) -> None:
    session = PlanningSession.objects.get(pk=session_id)
    if budget_spent(session):
        # Giving the agents the floor again is the human choosing to spend more: another
        # budget of the same size.
        calls, tokens = budget_defaults()
        PlanningSession.objects.filter(pk=session_id).update(
            call_budget=F("calls_used") + calls if session.call_budget else 0,
            token_budget=F("tokens_used") + tokens if session.token_budget else 0,
        )
    moved = PlanningSession.objects.filter(pk=session_id, status=from_status).update(
        status=PlanningSession.Status.RUNNING,
        exchanges_since_human=0,
        heartbeat_at=timezone.now(),
        cancel_requested=False,
        error="",
    )
    if not moved:
        raise SessionError("Someone else changed this session just now; reload to see where it is.")
    _dispatch_run(session_id)
    transaction.on_commit(lambda: publish_state(session_id))


def _dispatch_run(session_id: int) -> None:
    dispatch(run_session, session_id)


def _session_to_act_in(user: Any, session_id: int) -> PlanningSession:
    session = get_session_for(user, session_id)
    if not can_act_in_session(user, session):
        raise SessionNotFound("That session does not exist.")
    return session


def _at_checkpoint(session: PlanningSession) -> bool:
    return PlanningState.objects.filter(session=session, current_node=CHECKPOINT).exists()


def _require_checkpoint(session: PlanningSession) -> None:
    if session.status != PlanningSession.Status.AWAITING_HUMAN or not _at_checkpoint(session):
        raise SessionError("There is no proposal waiting for your review right now.")


def _check_message_rate(user: Any, session_id: int) -> None:
    """Refuse a message past the per-session or per-user limit for the last minute: each one
    is stored, rendered, put in a prompt and, at a checkpoint, restarts the agents."""
    now = timezone.now()
    # The task is the session's first message (seq 1), written by the form, not typed here.
    recent = Message.objects.filter(
        role=Message.Role.USER, seq__gt=1, created_at__gt=now - MESSAGE_RATE_WINDOW
    )
    limits = (
        (recent.filter(session_id=session_id), settings.PLANAGENTS_SESSION_MESSAGES_PER_MINUTE,
         "in this session"),
        (recent.filter(session__owner=user), settings.PLANAGENTS_USER_MESSAGES_PER_MINUTE,
         "across your sessions"),
    )  # fmt: skip
    for rows, limit, where in limits:
        sent = list(rows.order_by("-created_at").values_list("created_at", flat=True)[:limit])
        if len(sent) >= limit:
            wait = max(1, math.ceil((sent[-1] + MESSAGE_RATE_WINDOW - now).total_seconds()))
            raise TooManyMessages(
                f"You sent {limit} messages {where} in the last minute, the most allowed; "
                f"wait {wait} s before sending another. The agents read every message at "
                "their next turn, so one message with everything you want to say is enough."
            )


def _clean_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise SessionError("Type a message first.")
    text = text.strip()
    if len(text) > MAX_MESSAGE_CHARS:
        raise SessionError(
            f"That message is too long ({len(text)} characters; at most {MAX_MESSAGE_CHARS})."
        )
    return text
