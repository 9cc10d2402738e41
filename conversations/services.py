"""Use cases for planning sessions: each checks permission, does one thing, raises a named
error the caller can show. Views and the websocket consumer are thin shells over these."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from agents.budget import budget_defaults, budget_spent
from agents.language import detect_language
from agents.providers import list_profiles
from conversations.models import Message, PlanningSession, PlanningState
from conversations.permissions import can_act_in_session, can_view_session
from conversations.rendering import render_markdown
from planagents.jobs import dispatch
from planagents.streaming import publish
from rag.models import Codebase

MAX_MESSAGE_CHARS = 20_000


class SessionError(Exception):
    """An action on a session was refused; the message says why."""


class SessionNotFound(SessionError):
    """No such session for this user (also said for other users' sessions)."""


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


def next_seq(session_id: int) -> int:
    """Hand out the next seq. Must run inside a transaction: the UPDATE holds the row lock
    (PostgreSQL) or the write lock (SQLite) until commit, so two writers never get one seq."""
    PlanningSession.objects.filter(pk=session_id).update(last_seq=F("last_seq") + 1)
    return PlanningSession.objects.filter(pk=session_id).values_list("last_seq", flat=True).get()


def add_message(session_id: int, *, publish_event: bool = True, **fields: Any) -> Message:
    """Append a complete message and tell the watchers."""
    with transaction.atomic():
        message = Message.objects.create(session_id=session_id, seq=next_seq(session_id), **fields)
    if publish_event:
        payload = message_payload(message)
        transaction.on_commit(
            lambda: publish(session_id, {"type": "message.end", "message": payload})
        )
    return message


def message_payload(message: Message) -> dict[str, Any]:
    session = message.session
    payload: dict[str, Any] = {
        "seq": message.seq,
        "role": message.role,
        "agent": message.agent,
        "node": message.node,
        "state": message.state,
        "content": message.content,
        "signal": message.signal,
        "citations": message.citations,
        "profile": message.profile,
        "model": message.model,
        "prompt_tokens": message.prompt_tokens,
        "completion_tokens": message.completion_tokens,
        "latency_ms": message.latency_ms,
        "cost_usd": message.cost_usd,
    }
    if message.state != Message.State.STREAMING:
        payload["html"] = render_markdown(
            message.content, file_url_prefix=file_url_prefix(session.codebase_id)
        )
    return payload


def file_url_prefix(codebase_id: int) -> str:
    return f"/codebases/{codebase_id}/file/"


def session_state_payload(session: PlanningSession) -> dict[str, Any]:
    state = PlanningState.objects.filter(session=session).first()
    node = state.current_node if state else ""
    options: list[str] = []
    if session.status == PlanningSession.Status.AWAITING_HUMAN:
        options = ["approve", "modify", "stop"] if node == "checkpoint" else ["continue", "stop"]
    elif session.status == PlanningSession.Status.RUNNING:
        options = ["cancel", "stop"]
    plan = session.plans.order_by("-version").first()
    return {
        "type": "session.state",
        "status": session.status,
        "status_label": session.get_status_display(),
        "mode": session.mode,
        "node": node,
        "options": options,
        "last_seq": session.last_seq,
        "error": session.error,
        "validation": state.validation if state else {},
        "plan_version": plan.version if plan else None,
        "usage": {
            "calls": session.calls_used,
            "call_budget": session.call_budget,
            "tokens": session.tokens_used,
            "token_budget": session.token_budget,
        },
    }


def publish_state(session_id: int) -> None:
    session = PlanningSession.objects.select_related("codebase").get(pk=session_id)
    publish(session_id, session_state_payload(session))


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


def approve(user: Any, session_id: int) -> None:
    session = _session_to_act_in(user, session_id)
    _require_checkpoint(session)
    with transaction.atomic():
        moved = PlanningState.objects.filter(
            session_id=session_id, current_node="checkpoint"
        ).update(current_node="finalize_plan")
        if not moved:
            raise SessionError("The plan is not waiting for approval any more.")
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
    with transaction.atomic():
        moved = PlanningState.objects.filter(
            session_id=session_id, current_node="checkpoint"
        ).update(current_node="propose_changes", feedback=text, validation_failures=0)
        if not moved:
            raise SessionError("The plan is not waiting for your review any more.")
        message = add_message(
            session_id, role=Message.Role.USER, content=f"Requested changes: {text}"
        )
        _hand_back_to_agents(session_id, from_status=PlanningSession.Status.AWAITING_HUMAN)
    return message


def stop(user: Any, session_id: int) -> None:
    """Stop the session. A running job sees the flag at its next check and writes the summary;
    a session waiting for the human gets its summary written by a new job."""
    session = _session_to_act_in(user, session_id)
    if session.status in (PlanningSession.Status.COMPLETED, PlanningSession.Status.STOPPED):
        raise SessionError("This session has already ended.")
    with transaction.atomic():
        PlanningSession.objects.filter(pk=session_id).update(stop_requested=True)
        add_message(session_id, role=Message.Role.USER, content="Stopped the session.")
        if session.status != PlanningSession.Status.RUNNING:
            _hand_back_to_agents(session_id, from_status=session.status)
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
    from conversations.tasks import run_session

    dispatch(run_session, session_id)


def _session_to_act_in(user: Any, session_id: int) -> PlanningSession:
    session = get_session_for(user, session_id)
    if not can_act_in_session(user, session):
        raise SessionNotFound("That session does not exist.")
    return session


def _at_checkpoint(session: PlanningSession) -> bool:
    return PlanningState.objects.filter(session=session, current_node="checkpoint").exists()


def _require_checkpoint(session: PlanningSession) -> None:
    if session.status != PlanningSession.Status.AWAITING_HUMAN or not _at_checkpoint(session):
        raise SessionError("There is no proposal waiting for your review right now.")


def _clean_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise SessionError("Type a message first.")
    text = text.strip()
    if len(text) > MAX_MESSAGE_CHARS:
        raise SessionError(
            f"That message is too long ({len(text)} characters; at most {MAX_MESSAGE_CHARS})."
        )
    return text
