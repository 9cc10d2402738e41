"""Debate mode: Agent A proposes, Agent B critiques, turn by turn, until an agent hands over,
the exchange limit is reached, or an agent decides the discussion is finished."""

from __future__ import annotations

from django.db.models import F
from django.db.models.functions import Coalesce

from agents.prompts import AGENT_A, AGENT_B, code_context, language_rule
from agents.providers import estimate_cost, get_provider
from agents.providers.base import CallOptions, ChatMessage, ProviderError
from agents.schemas import TurnSignal
from agents.transcript import human_notes, retrieve_for
from agents.turns import (
    BudgetSpent,
    TurnFailed,
    agent_for,
    require_running,
    structured_call,
    text_turn,
)
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
    """Each agent sees the task, the code, the other agent's latest reply and what the human
    said; not the whole transcript, which small models copy instead of answering."""
    other = (
        session.messages.filter(role=Message.Role.AGENT, state=Message.State.COMPLETE)
        .exclude(agent=letter)
        .order_by("-seq")
        .first()
    )
    notes = human_notes(session)
    if letter == "A":
        ask = (
            "Propose a concrete plan for the task: which functions in which files change and how, "
            "citing `path:line`. If the reviewer objected (between the <critique> tags), fix each "
            "objection; do not repeat the critique or the code."
        )
        role = AGENT_A
    else:
        ask = (
            "Critique Agent A's proposal (between the <proposal> tags) against the code: list the "
            "concrete problems (wrong or missing files, wrong assumptions, edge cases, tests, "
            "security) and what must change, citing `path:line`. Do not restate the proposal and "
            "do not simply agree."
        )
        role = AGENT_B
    # The instruction goes last, right before the cue: small models follow what they read last.
    parts = [f"Task: {session.task}"]
    if notes:
        parts.append("The human said:\n" + "\n".join(f"- {n}" for n in notes[-5:]))
    parts.append(context)
    if other is not None:
        tag = "critique" if letter == "A" else "proposal"
        parts.append(f"<{tag}>\n{other.content[-2000:]}\n</{tag}>")
    cue = "Your proposal:" if letter == "A" else "Your critique:"
    parts.append(f"{ask} {language_rule(session.language)} At most 180 words.\n\n{cue}")
    return [
        ChatMessage("system", f"{role} {language_rule(session.language)}"),
        ChatMessage("user", "\n\n".join(parts)),
    ]


def _decide_signal(session: PlanningSession, profile: str, letter: str, message: Message) -> str:
    """Ask the agent, in a structured reply, what should happen next; store it on the message."""
    # The message's own profile: after a fallback, the model that wrote the reply decides.
    profile = message.profile or profile
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
        decision = structured_call(
            session, provider, [ChatMessage("user", prompt)], TurnSignal, options
        )
    except BudgetSpent:
        raise
    except ProviderError as exc:
        raise TurnFailed(f"Agent {letter} could not decide its next step: {exc}") from None
    usage = options.usage
    cost = estimate_cost(profile, usage.prompt_tokens, usage.completion_tokens)
    Message.objects.filter(pk=message.pk).update(
        signal=decision.signal,
        prompt_tokens=F("prompt_tokens") + usage.prompt_tokens,
        completion_tokens=F("completion_tokens") + usage.completion_tokens,
        cost_usd=Coalesce(F("cost_usd"), 0.0) + cost if cost is not None else F("cost_usd"),
    )
    message.signal = decision.signal
    from conversations.services import message_payload
    from planagents.streaming import publish

    message.refresh_from_db()
    publish(session.pk, {"type": "message.end", "message": message_payload(message)})
    return decision.signal
