"""Agent A writing (part of) a plan after the session's discussion: one section rewritten on
the human's instruction, or a debate's plan when the debate ends.

Both run when the agents no longer have the floor (a completed or stopped session), so their
turn is not stoppable: Stop ended the discussion, not this turn (like the stop summary). The
turn streams over the session's websocket like any other and is saved under its turn key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from agents import plan_sections
from agents.errors import BudgetSpent, TurnFailed
from agents.plan import codebase_paths, render_plan
from agents.prompts import AGENT_A, agent_system, code_context, language_rule
from agents.providers.base import ChatMessage
from agents.schemas import Effort, FileChange, ProposalStep
from agents.transcript import retrieve_for
from agents.turns import agent_for, structured_turn
from conversations.models import Message, Plan, PlanningSession
from conversations.store import add_message

T = TypeVar("T", bound=BaseModel)
NODE = "regenerate_section"
SECTION_TOKENS = 700


def final_structured_turn(
    session: PlanningSession,
    *,
    turn_key: str,
    node: str,
    messages: list[ChatMessage],
    schema: type[T],
    render: Callable[[dict[str, Any], bool], str],
    max_tokens: int,
) -> tuple[Message, T]:
    """Agent A's structured turn, not stoppable (see the module's docstring)."""
    return structured_turn(
        session,
        agent_for(session, "A"),
        turn_key=turn_key,
        node=node,
        messages=messages,
        schema=schema,
        render=render,
        max_tokens=max_tokens,
        stoppable=False,
    )


# ---------------------------------------------------------------- one section


class SummaryReply(BaseModel):
    summary: str = Field(description="What the change does and why.", max_length=1000)


class ItemsReply(BaseModel):
    items: list[str] = Field(description="The section's items, one sentence each.", max_length=6)


class StepsReply(BaseModel):
    steps: list[ProposalStep] = Field(
        description="The step rewritten (several steps when it is split).", max_length=4
    )


class FilesReply(BaseModel):
    files: list[FileChange] = Field(description="Every file the change touches.", max_length=10)


class EffortReply(BaseModel):
    effort: Effort


def schema_for(key: str) -> type[BaseModel]:
    if key == "summary":
        return SummaryReply
    if key in ("decisions", "testing", "risks"):
        return ItemsReply
    if key.startswith("step-"):
        return StepsReply
    if key == "files":
        return FilesReply
    return EffortReply


def section_value(key: str, data: dict[str, Any]) -> Any:
    """The regenerated reply as the plan's field holds it."""
    if key in ("decisions", "testing", "risks"):
        return [i for i in data.get("items", []) if isinstance(i, str) and i.strip()]
    if key.startswith("step-"):
        return data.get("steps", [])
    return data.get(key)


def _as_plan_data(key: str, data: dict[str, Any]) -> dict[str, Any]:
    """A reply (maybe partial) as plan data holding only that section, to render it."""
    if key in ("decisions", "testing", "risks"):
        return {key: data.get("items") or []}
    return {k: v for k, v in data.items() if k in ("summary", "steps", "files", "effort")}


def regenerate_section(message_id: int) -> Plan | None:
    """Run the regeneration the human asked for in message `message_id` (see
    conversations.plan_sections.request_regeneration) and save its result as a new version.
    Safe to run twice: the turn is found finished and the version found written."""

    request = Message.objects.select_related("session__codebase").get(pk=message_id)
    spec = request.data.get("regenerate") if isinstance(request.data, dict) else None
    if not spec:
        return None
    session = request.session
    base = Plan.objects.get(pk=spec["plan"], session=session)
    key, instruction = str(spec["section"]), str(spec["instruction"])
    label = plan_sections.section_info(base.structured, key).label
    note = f"Regenerated {label}: {instruction}"
    latest = Plan.objects.filter(session=session).order_by("-version").first()
    if latest is not None and latest.version != base.version:
        if latest.version == base.version + 1 and latest.note == note:
            return latest  # a re-run: this request's version is written
        add_message(
            session.pk,
            role=Message.Role.SYSTEM,
            content=f"**{label} was not regenerated:** v{latest.version} was written "
            "meanwhile. Ask again on the latest version.",
        )
        return None
    paths = codebase_paths(session.codebase)
    hits = retrieve_for(session, instruction)
    current = plan_sections.section_text(base.structured, key)
    prompt = "\n\n".join(
        [
            code_context(hits, budget=1800),
            f"Task: {session.task}",
            f"The plan so far:\n{base.markdown[:6000]}",
            f"The section to rewrite, {label}:\n{current or '(empty)'}",
            f"The human's instruction for it: {instruction}",
            f"Rewrite only {label}, following the instruction. Cite code as `path:line` where "
            "it helps. Reply as JSON. " + language_rule(session.language),
        ]
    )
    heading = f"**Rewriting {label} of plan v{base.version}:** {instruction}\n\n"

    def render(data: dict[str, Any], complete: bool) -> str:
        body = render_plan(_as_plan_data(key, data), paths, complete=complete)
        body = body.removeprefix("# Plan").lstrip()
        return heading + body

    try:
        _message, reply = final_structured_turn(
            session,
            turn_key=f"regenerate:{request.seq}",
            node=NODE,
            messages=[
                agent_system(AGENT_A, session.task_analysis, session.language),
                ChatMessage("user", prompt),
            ],
            schema=schema_for(key),
            render=render,
            max_tokens=SECTION_TOKENS,
        )
    except (TurnFailed, BudgetSpent) as exc:
        add_message(
            session.pk,
            role=Message.Role.SYSTEM,
            content=f"**{label} was not regenerated:** {exc}. The plan is unchanged.",
        )
        return None
    data = plan_sections.replace_section(
        base.structured, key, section_value(key, reply.model_dump()), by="Agent A (regenerated)"
    )
    try:
        return plan_sections.save_version(
            base, data, kind=Plan.Author.REGENERATE, author=session.owner, note=note
        )
    except plan_sections.SectionError as exc:
        add_message(
            session.pk, role=Message.Role.SYSTEM, content=f"**{label} was not regenerated:** {exc}"
        )
        return None
