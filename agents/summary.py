"""The summary written when a session stops: what was discussed, decided and left open."""

from __future__ import annotations

from agents.prompts import clip_transcript, language_rule
from agents.providers.base import ChatMessage
from agents.runtime import TurnStream
from agents.transcript import transcript_lines
from agents.turns import TurnFailed, agent_for, text_turn
from conversations.models import Message, PlanningSession


def write_summary(session: PlanningSession) -> Message:
    lines = transcript_lines(session)
    prompt = (
        f"Task: {session.task}\n\nDiscussion:\n{clip_transcript(lines, budget=5000)}\n\n"
        "Summarize the whole discussion for the human: the proposals made, the objections raised, "
        "what was agreed, what is still open, and the files involved (as `path`). Use short "
        "markdown sections. At most 200 words."
    )
    try:
        return text_turn(
            session,
            agent_for(session, "A"),
            turn_key="summary",
            node="summary",
            messages=[
                ChatMessage(
                    "system",
                    f"You summarize engineering discussions faithfully. {language_rule(session.language)}",
                ),
                ChatMessage("user", prompt),
            ],
            max_tokens=350,
            role=Message.Role.SYSTEM,
            stoppable=False,
        )
    except TurnFailed:
        # The model is down: a plain outline of the discussion beats no summary.
        outline = (
            "\n".join(f"- {line.splitlines()[0][:200]}" for line in lines) or "- (nothing was said)"
        )
        stream = TurnStream(
            session.pk, turn_key="summary-outline", role=Message.Role.SYSTEM, node="summary"
        )
        stream.open()
        return stream.finish(content=f"**Summary (model unavailable, outline only)**\n\n{outline}")
