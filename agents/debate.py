"""Debate mode: Agent A proposes, Agent B critiques, turn by turn, until an agent hands over,
the exchange limit is reached, or an agent decides the discussion is finished."""

from __future__ import annotations

from django.db.models import F
from django.db.models.functions import Coalesce

from agents import rules, trace
from agents.decision_log import decision_log
from agents.investigation.evidence import Evidence, evidence_context
from agents.investigation.session import NODE as INVESTIGATION_NODE
from agents.investigation.session import investigate, load_evidence
from agents.loops import hand_over, session_loop
from agents.plan import append_version, build_version, codebase_paths, render_plan
from agents.plan_writer import final_structured_turn
from agents.prompts import (
    AGENT_A,
    AGENT_B,
    OBJECTIONS_CUE,
    agent_messages,
    clip_transcript,
    code_context,
    language_rule,
)
from agents.providers import estimate_cost, get_provider
from agents.providers.base import CallOptions, ChatMessage, ProviderError
from agents.schemas import PlanDraft, TurnSignal
from agents.transcript import human_notes, retrieve_for, transcript_lines
from agents.turns import (
    BudgetSpent,
    TurnFailed,
    agent_for,
    require_running,
    structured_call,
    text_turn,
)
from agents.verification import flag_citations, kept, verify_objections
from conversations.models import Message, Plan, PlanningSession
from conversations.store import add_message, message_payload

HANDOVER = "handover"
INVESTIGATION = "investigate"
FINISHED = "finished"
DEBATE_NODES = ("",)
"""Debate turns carry no node (investigation and summaries do)."""
NOTHING_KEPT = "(Every objection was discarded: the evidence does not support it.)"


def run_debate(session_id: int) -> str:
    """Run turns until the human has the floor (HANDOVER) or an agent said STOP (FINISHED)."""
    hits = None
    evidence: list[Evidence] | None = None
    while True:
        session = require_running(session_id)
        # Before the cap: a loop hands over at once, saying which loop it was.
        loop = session_loop(session_id, nodes=DEBATE_NODES)
        if loop is not None:
            hand_over(session_id, loop, turn_key=f"loop:{session.turn_index}")
            return HANDOVER
        if session.exchanges_since_human >= session.max_exchanges:
            return HANDOVER
        letter = "A" if session.turn_index % 2 == 0 else "B"
        if hits is None:
            hits = retrieve_for(session)
        agent = agent_for(session, letter)
        if evidence is None:
            # Agent A's first turn is preceded by the investigation (idempotent: a re-run or a
            # later turn finds the evidence saved).
            if session.turn_index == 0:
                evidence = investigate(session, agent, key=INVESTIGATION)
            else:
                evidence = load_evidence(session.pk, INVESTIGATION)
        context = code_context(hits, budget=1800 if evidence else 4200)
        if evidence:
            context = f"{evidence_context(evidence)}\n\n{context}"
        other = _other_reply(session, letter)
        answered = other.content if other is not None else None
        if letter == "A" and other is not None and evidence:
            # Only B's objections that survive a check against the evidence reach A.
            own = _other_reply(session, "B")  # A's reply that B's critique answers
            checked = verify_objections(
                session,
                agent,
                other.content,
                evidence,
                turn_key=f"verify:{session.turn_index}",
                restating=f"{own.content if own is not None else ''}\n{session.task}",
            )
            if checked is not None:
                answered = kept(checked) or NOTHING_KEPT
        message = text_turn(
            session,
            agent,
            turn_key=f"debate:{session.turn_index}",
            node="",
            messages=_prompt(session, letter, context, answered),
            max_tokens=350,
            answering=other.content if other is not None else "",
            answering_label="Agent B's critique" if letter == "A" else "Agent A's proposal",
        )
        flag_citations(session, message, evidence or [])
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


def _other_reply(session: PlanningSession, letter: str) -> Message | None:
    """The other agent's latest finished reply: what this turn answers."""
    return (
        session.messages.filter(role=Message.Role.AGENT, state=Message.State.COMPLETE)
        .exclude(agent=letter)
        .order_by("-seq")
        .first()
    )


def _prompt(
    session: PlanningSession, letter: str, context: str, other: str | None
) -> list[ChatMessage]:
    """Each agent sees the task, the code, the other agent's latest reply and what the human
    said; not the whole transcript, which small models copy instead of answering."""
    notes = human_notes(session)
    if letter == "A":
        ask = (
            "Propose a concrete plan for the task: which functions in which files change and how, "
            "citing `path:line` (and evidence as [E#] when there is some). If the reviewer objected (between the <critique> tags), fix each "
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
    # The stable part first (a prompt cache keeps it): the code and evidence, then the task.
    # The codebase's rules and pinned context, as in planning mode (each bounded; none if empty).
    shared = [context, *rules.prompt_sections(session, rules.session_pins(session))]
    shared.append(f"Task: {session.task}")
    parts: list[str] = []
    if notes:
        parts.append("The human said:\n" + "\n".join(f"- {n}" for n in notes[-5:]))
    if other is not None:
        tag = "critique" if letter == "A" else "proposal"
        parts.append(f"<{tag}>\n{other[-2000:]}\n</{tag}>")
    cue = "Your proposal:" if letter == "A" else f"Your critique: {OBJECTIONS_CUE}"
    parts.append(f"{ask} {language_rule(session.language)} At most 180 words.\n\n{cue}")
    return agent_messages(role, session.task_analysis, session.language, shared=shared, own=parts)


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
        cost_usd=Coalesce(F("cost_usd"), 0.0) + cost if cost is not None else F("cost_usd"),
    )
    message.signal = decision.signal
    from planagents.streaming import publish

    message.refresh_from_db()
    # The decision's call is the message's too: its tokens and time, from the trace.
    if trace.settle(message, usage):
        message.save(update_fields=["prompt_tokens", "completion_tokens", "latency_ms"])
    publish(session.pk, {"type": "message.end", "message": message_payload(message)})
    return decision.signal


DEBATE_PLAN_NODE = "debate_plan"
DEBATE_PLAN_NOTE = "Written from the debate"


def write_debate_plan(session: PlanningSession) -> Plan | None:
    """The debate's outcome as a versioned plan, like planning mode's finalize: Agent A writes
    it (structured, streaming) from the discussion and its evidence, its paths and citations
    are checked, and the Decisions table carries the objections and their verdicts from the
    session's messages. None when nothing was said, or when the model is down (the summary
    already told the human what was discussed). Runs once per session."""
    if Plan.objects.filter(session=session, note=DEBATE_PLAN_NOTE).exists():
        return None
    said = session.messages.filter(role=Message.Role.AGENT, state=Message.State.COMPLETE)
    # Agent A's evidence plan is not a turn of the discussion: a plan needs one.
    if not said.exclude(content="").exclude(node=INVESTIGATION_NODE).exists():
        return None
    paths = codebase_paths(session.codebase)
    evidence = load_evidence(session.pk, INVESTIGATION)
    hits = retrieve_for(session)
    context = code_context(hits, budget=1800 if evidence else 3000)
    if evidence:
        context = f"{evidence_context(evidence)}\n\n{context}"
    discussion = clip_transcript(
        [line for line in transcript_lines(session) if not line.startswith("System: **Summary")],
        budget=5000,
    )
    request = (
        "Write the implementation plan the discussion arrived at, as JSON. summary: what the "
        "change does and why. effort: size S, M, L or XL and an estimate. decisions: the "
        "design choices the agents settled on, each with "
        "its reason. steps: ordered, each with a title, a detail citing `path:line`"
        + (" and the evidence as [E#]" if evidence else "")
        + ", and its files. files: every file touched, with its path exactly as in the code, "
        "action (modify, create or delete) and reason. testing: the tests to add or run. "
        "risks: what could go wrong and how to guard against it. Only what the discussion "
        "supports. " + language_rule(session.language)
    )
    extra = rules.prompt_sections(session, rules.session_pins(session))
    try:
        message, draft = final_structured_turn(
            session,
            turn_key="debate-plan",
            node=DEBATE_PLAN_NODE,
            messages=agent_messages(
                AGENT_A,
                session.task_analysis,
                session.language,
                shared=[context, *extra, f"Task: {session.task}"],
                own=[f"Discussion:\n{discussion}", request],
            ),
            schema=PlanDraft,
            render=lambda data, complete: render_plan(
                data, paths, title=session.title, complete=complete
            ),
            max_tokens=1600,
        )
    except (TurnFailed, BudgetSpent) as exc:
        add_message(
            session.pk,
            role=Message.Role.SYSTEM,
            content=f"**No plan was written:** {exc}. The summary above is what was discussed.",
        )
        return None
    flag_citations(session, message, evidence or [])
    data = {**draft.model_dump(), "decision_log": decision_log(session)}
    markdown, structured = build_version(
        data, session.codebase, title=session.title, task=session.task
    )
    plan = append_version(session, markdown, structured, note=DEBATE_PLAN_NOTE)
    from planagents.streaming import publish

    publish(session.pk, {"type": "plan.updated", "version": plan.version})
    return plan
