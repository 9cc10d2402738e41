"""The planning workflow's nodes. Each takes the node context and returns what to store in the
PlanningState and, where it branches, which node comes next."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from agents.citations import extract_citations
from agents.plan import (
    annotate_files,
    codebase_paths,
    file_status,
    normalize_path,
    render_plan,
    render_proposal,
    unique_files,
)
from agents.prompts import AGENT_A, AGENT_B, code_context, language_rule
from agents.providers.base import ChatMessage
from agents.runtime import TurnStream
from agents.schemas import PlanDraft, Proposal
from agents.transcript import hit_citations, human_notes, retrieve_for
from agents.turns import agent_for, structured_turn, text_turn
from conversations.models import Message, Plan, PlanningSession, PlanningState
from planagents.streaming import publish
from rag.retrieval import Hit, closest_paths


@dataclass
class NodeContext:
    session: PlanningSession
    state: PlanningState
    hits: list[Hit] = field(default_factory=list)
    paths: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, session: PlanningSession, state: PlanningState) -> NodeContext:
        extra = state.feedback
        return cls(session, state, retrieve_for(session, extra), codebase_paths(session.codebase))

    def system(self, role_prompt: str) -> ChatMessage:
        return ChatMessage("system", f"{role_prompt} {language_rule(self.session.language)}")

    def notes(self) -> str:
        notes = human_notes(self.session)
        return (
            ("\n\nNotes from the human:\n" + "\n".join(f"- {n}" for n in notes[-5:]))
            if notes
            else ""
        )


@dataclass
class NodeResult:
    changes: dict[str, Any] = field(default_factory=dict)
    next_node: str | None = None  # None: the table's default


def analyze_codebase(ctx: NodeContext) -> NodeResult:
    prompt = (
        "Analyze the code below for the task: which files and functions matter and how they "
        "work today, citing `path:line`. Describe the code as it is; do not propose the change "
        "yet. At most 180 words.\n\n"
        f"Task: {ctx.session.task}{ctx.notes()}\n\n{code_context(ctx.hits)}\n\n"
        f"{language_rule(ctx.session.language)}\n\nYour analysis:"
    )
    message = text_turn(
        ctx.session,
        agent_for(ctx.session, "A"),
        turn_key=f"analyze:{ctx.state.iteration}",
        node="analyze_codebase",
        messages=[ctx.system(AGENT_A), ChatMessage("user", prompt)],
        max_tokens=320,
    )
    _store_citations(ctx, message)
    return NodeResult({"analysis": message.content})


def propose_changes(ctx: NodeContext) -> NodeResult:
    iteration = ctx.state.iteration + 1
    parts = [f"Task: {ctx.session.task}{ctx.notes()}", code_context(ctx.hits)]
    if ctx.state.analysis:
        parts.append(f"Analysis so far:\n{ctx.state.analysis}")
    if ctx.state.proposal and ctx.state.review:
        parts.append(f"Reviewer's critique of the previous proposal:\n{ctx.state.review}")
    problems = ctx.state.validation.get("problems") if ctx.state.validation else None
    if problems and not ctx.state.validation.get("ok"):
        parts.append(
            "The previous proposal failed validation:\n" + "\n".join(f"- {p}" for p in problems)
        )
    if ctx.state.feedback:
        parts.append(f"The human asked for these changes:\n{ctx.state.feedback}")
    parts.append(
        "Propose the change as JSON. summary: two or three sentences on what changes and why. "
        "steps: the ordered implementation steps, each with a short title, a detail that cites "
        "`path:line`, and the files it touches. files: every file touched, each with its path "
        "(for existing files, exactly as labelled in the code context), action (modify, create "
        "or delete) and reason. " + language_rule(ctx.session.language)
    )
    message, proposal = structured_turn(
        ctx.session,
        agent_for(ctx.session, "A"),
        turn_key=f"propose:{iteration}",
        node="propose_changes",
        messages=[ctx.system(AGENT_A), ChatMessage("user", "\n\n".join(parts))],
        schema=Proposal,
        render=lambda data, complete: render_proposal(data, ctx.paths, complete=complete),
        max_tokens=600,
    )
    _store_citations(ctx, message)
    return NodeResult({"proposal": proposal.model_dump(), "iteration": iteration})


def review_and_refine(ctx: NodeContext) -> NodeResult:
    proposal_md = render_proposal(ctx.state.proposal, ctx.paths)
    prompt = (
        "Review Agent A's proposal (between the <proposal> tags) against the code: what is wrong "
        "or missing, which files or tests it forgets, what you would change. Cite `path:line`. "
        "Write only your review, at most 180 words.\n\n"
        f"Task: {ctx.session.task}{ctx.notes()}\n\n{code_context(ctx.hits)}\n\n"
        f"<proposal>\n{proposal_md}\n</proposal>\n\n{language_rule(ctx.session.language)}\n\nYour review:"
    )
    message = text_turn(
        ctx.session,
        agent_for(ctx.session, "B"),
        turn_key=f"review:{ctx.state.iteration}",
        node="review_and_refine",
        messages=[ctx.system(AGENT_B), ChatMessage("user", prompt)],
        max_tokens=320,
    )
    _store_citations(ctx, message)
    return NodeResult({"review": message.content})


def validate_proposal(ctx: NodeContext) -> NodeResult:
    proposal = ctx.state.proposal or {}
    problems = proposal_problems(ctx.session, proposal, ctx.paths)
    ok = not problems
    failures = ctx.state.validation_failures + (0 if ok else 1)
    retry = not ok and failures <= settings.PLANAGENTS_MAX_VALIDATION_RETRIES
    if ok:
        text = f"**Validation passed:** all {len(proposal.get('files', []))} file(s) check out against the codebase."
    else:
        listed = "\n".join(f"- {p}" for p in problems)
        tail = "Sending it back to Agent A." if retry else "Retries used up; the human decides."
        text = f"**Validation found** {len(problems)} problem(s):\n{listed}\n\n{tail}"
    stream = TurnStream(
        ctx.session.pk,
        turn_key=f"validate:{ctx.state.iteration}",
        role=Message.Role.SYSTEM,
        node="validate_proposal",
    )
    if stream.existing() is None:
        stream.open()
        stream.finish(content=text)
    validation = {"ok": ok, "problems": problems, "iteration": ctx.state.iteration}
    return NodeResult(
        {"validation": validation, "validation_failures": failures if retry else 0},
        next_node="propose_changes" if retry else "checkpoint",
    )


def proposal_problems(
    session: PlanningSession, proposal: dict[str, Any], paths: set[str]
) -> list[str]:
    problems: list[str] = []
    files = unique_files(proposal.get("files") or [])
    if not files:
        problems.append(
            "The proposal names no files; every change must say which files it touches."
        )
    for entry in files:
        path = normalize_path(entry["path"])
        action = entry.get("action") or "modify"
        status = file_status(path, action, paths)
        if status == "missing":
            near = closest_paths(session.codebase, path)
            hint = f" Did you mean {', '.join(f'`{p}`' for p in near)}?" if near else ""
            problems.append(f"`{path}` does not exist in the codebase (action: {action}).{hint}")
        elif action == "create" and status == "exists":
            problems.append(f"`{path}` already exists; modify it instead of creating it.")
    return problems


def finalize_plan(ctx: NodeContext) -> NodeResult:
    version = (
        ctx.session.plans.order_by("-version").values_list("version", flat=True).first() or 0
    ) + 1
    proposal_md = render_proposal(ctx.state.proposal, ctx.paths)
    prompt = "\n\n".join(
        [
            f"Task: {ctx.session.task}{ctx.notes()}",
            code_context(ctx.hits, budget=2500),
            f"Approved proposal:\n{proposal_md}",
            f"Reviewer's critique:\n{ctx.state.review}" if ctx.state.review else "",
            "Write the final implementation plan as JSON. summary: a short paragraph on what the "
            "change does and why. decisions: the design choices, each with its reason. steps: "
            "ordered, each with a title, a detail citing `path:line`, and its files. files: every "
            "file touched with its path (existing files exactly as labelled in the code context), "
            "action (modify, create or delete) and reason. testing: how to test it. risks: what "
            "could go wrong and how to guard against it. effort: size S, M, L or XL and an "
            "estimate such as '2-3 days'. " + language_rule(ctx.session.language),
        ]
    )
    message, draft = structured_turn(
        ctx.session,
        agent_for(ctx.session, "A"),
        turn_key=f"finalize:{version}",
        node="finalize_plan",
        messages=[ctx.system(AGENT_A), ChatMessage("user", prompt)],
        schema=PlanDraft,
        render=lambda data, complete: render_plan(
            data, ctx.paths, title=ctx.session.title, complete=complete
        ),
        max_tokens=900,
    )
    _store_citations(ctx, message)
    structured = annotate_files(draft.model_dump(), ctx.paths)
    plan, _ = Plan.objects.get_or_create(
        session=ctx.session,
        version=version,
        defaults={"markdown": message.content, "structured": structured},
    )
    publish(ctx.session.pk, {"type": "plan.updated", "version": plan.version})
    return NodeResult({})


def _store_citations(ctx: NodeContext, message: Message) -> None:
    cited = [c.as_dict() for c in extract_citations(ctx.session.codebase, message.content)]
    seen = {(c["path"], c["start"], c["end"]) for c in cited}
    context = [c for c in hit_citations(ctx.hits) if (c["path"], c["start"], c["end"]) not in seen]
    Message.objects.filter(pk=message.pk).update(
        citations=cited + [{**c, "context": True} for c in context]
    )
