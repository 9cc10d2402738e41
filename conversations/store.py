"""A session's messages and state as the page sees them: appending a message with its seq,
the protocol's payloads, the stored HTML of finished messages, and the session.state event.

The agents write through this module while they work and the use cases in
conversations.services do too; it knows nothing of either (it reads the workflow table and
the rules' approval gate, both data), so the agents never import the use-case layer that
starts them."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils.safestring import mark_safe

from agents import rules_gate
from agents.workflow import APPROVE, CHECKPOINT, MODIFY
from conversations.models import Message, PlanningSession, PlanningState
from conversations.progress import current_progress, workflow_steps
from conversations.rendering import RENDERING_VERSION, render_markdown
from planagents.streaming import publish


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


def message_payload(message: Message, *, render: bool = True) -> dict[str, Any]:
    """The message as the protocol sends it. A finished one carries its HTML; with
    render=False only when it is stored already (the caller renders the rest)."""
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
        "heard": message.heard,
        # Earlier attempts of this turn that were redone (an echo, invalid JSON): kept, labelled.
        "discarded": message.data.get("discarded", []) if isinstance(message.data, dict) else [],
        # An investigation's result [E#] is drawn as a card whose code folds (session.js).
        "kind": (
            "evidence"
            if message.node == "investigate"
            and isinstance(message.data, dict)
            and "evidence" in message.data
            else ""
        ),
    }
    if message.state != Message.State.STREAMING:
        html = message_html(message) if render else stored_html(message)
        if html is not None:
            payload["html"] = html
    return payload


def message_html(message: Message) -> str:
    """The message as sanitized HTML. Rendering a long reply takes tens of milliseconds and
    every reconnecting page replays the conversation, so a finished text is rendered once and
    the HTML stored with the digest of the text it came from; a changed text renders anew."""
    stored = stored_html(message)
    if stored is not None:
        return stored
    digest = _digest(message.content)
    html = render_markdown(
        message.content, file_url_prefix=file_url_prefix(message.session.codebase_id)
    )
    if message.state != Message.State.STREAMING:
        # One UPDATE writes both, so a stored html always matches its digest.
        Message.objects.filter(pk=message.pk).update(html=html, html_digest=digest)
        message.html, message.html_digest = html, digest
    return html


def stored_html(message: Message) -> str | None:
    """The stored HTML of the message, if it was rendered from the text it has now. Only
    message_html writes it, from render_markdown's sanitized output, so a page may show it as
    HTML (as a plain str the template escaped it and the page showed tags)."""
    if message.html_digest != _digest(message.content):
        return None
    return mark_safe(message.html)  # noqa: S308


def _digest(text: str) -> str:
    # The renderer's version is part of the digest: HTML stored by an older renderer (one that
    # kept outside links live) is rendered again rather than served.
    keyed = f"{RENDERING_VERSION}\0{text}"
    return hashlib.sha256(keyed.encode("utf-8", "surrogatepass")).hexdigest()


def file_url_prefix(codebase_id: int) -> str:
    return f"/codebases/{codebase_id}/file/"


def session_state_payload(session: PlanningSession) -> dict[str, Any]:
    state = PlanningState.objects.filter(session=session).first()
    node = state.current_node if state else ""
    options: list[str] = []
    if session.status == PlanningSession.Status.AWAITING_HUMAN:
        options = [APPROVE, MODIFY, "stop"] if node == CHECKPOINT else ["continue", "stop"]
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
        "rules": _rules_state(session, node),
        "plan_version": plan.version if plan else None,
        "usage": {
            "calls": session.calls_used,
            "call_budget": session.call_budget,
            "tokens": session.tokens_used,
            "token_budget": session.token_budget,
        },
        "workflow": workflow_steps(session, state) if session.mode == "planning" else None,
        "progress": (
            current_progress(session) if session.status == PlanningSession.Status.RUNNING else None
        ),
    }


def publish_state(session_id: int) -> None:
    session = PlanningSession.objects.select_related("codebase").get(pk=session_id)
    publish(session_id, session_state_payload(session))


def _rules_state(session: PlanningSession, node: str) -> dict[str, Any]:
    return rules_gate.state(session.pk) if node == CHECKPOINT else {"blocking": []}
