"""Debate mode: Agent A proposes, Agent B critiques, turn by turn, until an agent hands over,
the exchange limit is reached, or an agent decides the discussion is finished."""

from __future__ import annotations

from django.db.models import F

from agents.prompts import AGENT_A, AGENT_B, clip_transcript, code_context, language_rule
from agents.providers import get_provider
from agents.providers.base import CallOptions, ChatMessage, ProviderError
from agents.schemas import TurnSignal
from agents.transcript import retrieve_for, transcript_lines
from agents.turns import TurnFailed, agent_for, require_running, text_turn
from conversations.models import Message, PlanningSession

HANDOVER = "handover"
FINISHED = "finished"


def run_debate(session_id: int) -> str:
    """Run turns until the human has the floor (HANDOVER) or an agent said STOP (FINISHED)."""
    hits = None
    while True:
        session = require_running(session_id)
        if session.exchanges_since_human >= session.max_exchanges:
            return HANDOVER
        letter = "A" if session.turn_index % 2 == 0 else "B"
        if hits is None:
            hits = retrieve_for(session)
        agent = agent_for(session, letter)
        message = text_turn(
            session,
            agent,
            turn_key=f"debate:{session.turn_index}",
            node="",
            messages=_prompt(session, letter, code_context(hits)),
            max_tokens=350,
        )
        signal = message.signal or _decide_signal(session, agent.profile, letter, message)
        moved = PlanningSession.objects.filter(pk=session_id, turn_index=session.turn_index).update(
            turn_index=F("turn_index") + 1,
            exchanges_since_human=F("exchanges_since_human") + (1 if letter == "B" else 0),
        )
        if not moved:
            return HANDOVER
        if signal == "STOP":
            return FINISHED
        if signal == "HANDOVER":
            return HANDOVER


def _prompt(session: PlanningSession, letter: str, context: str) -> list[ChatMessage]:
    role = AGENT_A if letter == "A" else AGENT_B
    ask = (
        "Propose (or refine) a concrete plan for the task, answering the critique and the human if they spoke."
        if letter == "A"
        else "Critique Agent A's latest proposal against the code. Do not just agree."
    )
    history = clip_transcript(transcript_lines(session))
    user = f"Task: {session.task}\n\n{context}\n\nDiscussion so far:\n{history or '(none yet)'}\n\n{ask} At most 180 words."
    return [
        ChatMessage("system", f"{role} {language_rule(session.language)}"),
        ChatMessage("user", user),
    ]


def _decide_signal(session: PlanningSession, profile: str, letter: str, message: Message) -> str:
    """Ask the agent, in a structured reply, what should happen next; store it on the message."""
    provider = get_provider(profile)
    prompt = (
        f"You are Agent {letter} in a planning discussion about: {session.task}\n\n"
        f"Your last reply:\n{message.content[-1500:]}\n\n"
        "Decide what happens next. CONTINUE if the other agent should answer, HANDOVER if the "
        "human must decide something now, STOP if the plan is settled and nothing is left to "
        "discuss. Reply as JSON with the signal and a one-sentence reason."
    )
    options = CallOptions(max_tokens=60, temperature=0.0)
    try:
        decision = provider.structured([ChatMessage("user", prompt)], TurnSignal, options)
    except ProviderError as exc:
        raise TurnFailed(f"Agent {letter} could not decide its next step: {exc}") from exc
    Message.objects.filter(pk=message.pk).update(
        signal=decision.signal,
        prompt_tokens=F("prompt_tokens") + options.usage.prompt_tokens,
        completion_tokens=F("completion_tokens") + options.usage.completion_tokens,
    )
    message.signal = decision.signal
    from conversations.services import message_payload
    from planagents.streaming import publish

    message.refresh_from_db()
    publish(session.pk, {"type": "message.end", "message": message_payload(message)})
    return decision.signal
