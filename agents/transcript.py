"""The conversation so far, as agents read it."""

from __future__ import annotations

from conversations.models import Message, PlanningSession
from rag.retrieval import Hit, retrieve


def transcript_lines(session: PlanningSession, *, skip_first_user: bool = True) -> list[str]:
    lines: list[str] = []
    first_user_seen = False
    for message in session.messages.order_by("seq"):
        if message.state == Message.State.STREAMING or not message.content.strip():
            continue
        if message.role == Message.Role.USER:
            if skip_first_user and not first_user_seen:
                first_user_seen = True
                continue
            lines.append(f"Human: {message.content.strip()}")
        elif message.role == Message.Role.AGENT:
            lines.append(f"Agent {message.agent}: {message.content.strip()}")
        else:
            lines.append(f"System: {message.content.strip()}")
    return lines


def human_notes(session: PlanningSession, after_seq: int = 0) -> list[str]:
    """What the human typed after the task (taken into the next turn)."""
    first = session.messages.filter(role=Message.Role.USER).order_by("seq").first()
    return [
        m.content.strip()
        for m in session.messages.filter(
            role=Message.Role.USER, seq__gt=max(after_seq, first.seq if first else 0)
        ).order_by("seq")
    ]


def retrieve_for(session: PlanningSession, extra: str = "", k: int | None = None) -> list[Hit]:
    from django.conf import settings

    query = session.task if not extra else f"{session.task}\n{extra}"
    return retrieve(session.codebase, query, k or settings.PLANAGENTS_RETRIEVAL_K)


def hit_citations(hits: list[Hit]) -> list[dict[str, object]]:
    return [
        {"path": h.path, "start": h.start_line, "end": h.end_line, "exists": True} for h in hits
    ]
