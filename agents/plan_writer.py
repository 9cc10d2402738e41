"""Agent A writing (part of) a plan after the session's discussion: one section rewritten on
the human's instruction, or a debate's plan when the debate ends.

Both run when the agents no longer have the floor (a completed or stopped session), so their
turn is not stoppable: Stop ended the discussion, not this turn (like the stop summary). The
turn streams over the session's websocket like any other and is saved under its turn key.

A regenerated section that repeats another section, or holds none of the content words its
instruction asks for (stemmed, diacritics folded, Vietnamese bridged to English by
rag.vietnamese's glossary), is written once more with what was wrong shown to the model; if the
second try is no better, the version's note says what is wrong with it."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from agents import model_queue, plan_sections
from agents.echoes import TERM_WORD as _TOKEN
from agents.echoes import stem as _stem
from agents.errors import BudgetSpent, TurnFailed
from agents.objections import restates
from agents.plan import codebase_paths, render_plan
from agents.prompts import AGENT_A, agent_messages, code_context, language_rule
from agents.providers.base import ChatMessage
from agents.schemas import Effort, FileChange, ProposalStep
from agents.transcript import retrieve_for
from agents.turns import agent_for, structured_turn
from conversations.models import Message, Plan, PlanningSession
from conversations.store import add_message
from rag.vietnamese import english_terms, is_vietnamese

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
    Safe to run twice: the turn is found finished and the version found written. Its model
    calls wait behind live turns (agents.model_queue): someone watching a turn goes first."""
    with model_queue.priority(model_queue.REGENERATION):
        return _regenerate_section(message_id)


def _regenerate_section(message_id: int) -> Plan | None:
    request = Message.objects.select_related("session__codebase").get(pk=message_id)
    spec = request.data.get("regenerate") if isinstance(request.data, dict) else None
    if not spec:
        return None
    session = request.session
    base = Plan.objects.get(pk=spec["plan"], session=session)
    key, instruction = str(spec["section"]), str(spec["instruction"])
    label = plan_sections.section_info(base.structured, key).label
    latest = Plan.objects.filter(session=session).order_by("-version").first()
    if latest is not None and latest.version != base.version:
        if latest.version == base.version + 1 and _note_of(latest.note, label, instruction):
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
    messages = agent_messages(
        AGENT_A,
        session.task_analysis,
        session.language,
        shared=[code_context(hits, budget=1800), f"Task: {session.task}"],
        own=[
            f"The plan so far:\n{base.markdown[:6000]}",
            f"The section to rewrite, {label}:\n{current or '(empty)'}",
            f"The human's instruction for it: {instruction}",
            f"Rewrite only {label}, following the instruction. Cite code as `path:line` where "
            "it helps. Reply as JSON. " + language_rule(session.language),
        ],
    )

    def turn(heading: str, turn_key: str, asked: list[ChatMessage]) -> dict[str, Any]:
        def render(data: dict[str, Any], complete: bool) -> str:
            body = render_plan(_as_plan_data(key, data), paths, complete=complete)
            return heading + body.removeprefix("# Plan").lstrip()

        _message, reply = final_structured_turn(
            session,
            turn_key=turn_key,
            node=NODE,
            messages=asked,
            schema=schema_for(key),
            render=render,
            max_tokens=SECTION_TOKENS,
        )
        return reply.model_dump()

    try:
        reply = turn(
            f"**Rewriting {label} of plan v{base.version}:** {instruction}\n\n",
            f"regenerate:{request.seq}",
            messages,
        )
        data, faults = _checked(base.structured, key, reply, instruction)
        if faults:
            # Once more, with what was wrong shown last (after the reply, as turns' redo does).
            said = "; and ".join(faults)
            redo = [
                *messages,
                ChatMessage("assistant", json.dumps(reply, ensure_ascii=False)[:4000]),
                ChatMessage(
                    "user",
                    f"That {label} {said}. Rewrite {label} so that it does what the instruction "
                    f"asks: {instruction}. Reply as JSON.",
                ),
            ]
            reply = turn(
                f"**Rewriting {label} again:** the first try {said}.\n\n",
                f"regenerate:{request.seq}:redo",
                redo,
            )
            data, faults = _checked(base.structured, key, reply, instruction)
    except (TurnFailed, BudgetSpent) as exc:
        add_message(
            session.pk,
            role=Message.Role.SYSTEM,
            content=f"**{label} was not regenerated:** {exc}. The plan is unchanged.",
        )
        return None
    note = f"Regenerated {label}: {instruction}"
    if faults:
        note = f"Regenerated {label}, but the new text {' and '.join(faults)}"
        note += "" if instruction in note else f" (asked: {instruction})"
    try:
        plan = plan_sections.save_version(
            base, data, kind=Plan.Author.REGENERATE, author=session.owner, note=note
        )
    except plan_sections.SectionError as exc:
        add_message(
            session.pk, role=Message.Role.SYSTEM, content=f"**{label} was not regenerated:** {exc}"
        )
        return None
    if faults:
        add_message(session.pk, role=Message.Role.SYSTEM, content=f"**v{plan.version}:** {note}.")
    return plan


def _note_of(note: str, label: str, instruction: str) -> bool:
    """Whether a version's note is the one this request writes (whichever way it went)."""
    return note.startswith(f"Regenerated {label}") and instruction in note


# ---------------------------------------------------------------- did it do as asked?

_NOT_ASKED_TEXT = """
a an and are as at be by for from if in into is it its of on or the this that these those to
with about all any each more most some such than then there their them they we you your our i
me my please can could should would must will shall may might do does did make let add mention
include cover describe explain say write rewrite redo regenerate keep use also instead only just
new better clear clearer detail concrete specific section item point one two three what how why
when which who where
va cua cac nhung mot la cho khi voi nay do duoc co trong ve hay them neu viet lai phan muc cung
nhu the nao de vao ra o tu den hon nua ro rang cu dung rui buoc tep tom tat quyet dinh kiem thu
"""
_NOT_ASKED = frozenset(_NOT_ASKED_TEXT.split())
"""Function words, the verbs of asking and the sections' own names, English and (folded)
Vietnamese: not what an instruction asks a section to hold."""
_SUBTRACTIVE_TEXT = """
remove drop delete omit cut trim shorten shorter fewer less without split merge join combine
reorder move rephrase reword simplify bỏ xóa xoá bớt ngắn gọn tách gộp
"""
_SUBTRACTIVE = frozenset(_SUBTRACTIVE_TEXT.split())
"""An instruction with one of these asks for a change of form, or for words to go: the new
text cannot be judged by which of the instruction's words it holds. Vietnamese ones are
matched with their diacritics when the instruction has them ("bỏ" is not "bộ"), folded when
it was typed without."""


def _terms(text: str) -> set[str]:
    """The stems of `text`'s words, and, when it is Vietnamese, of the English for its phrases
    (rag.vietnamese's glossary), so a Vietnamese instruction is found in an English text and the
    other way round."""
    words = _TOKEN.findall(text)
    if is_vietnamese(text):
        words += " ".join(english_terms(text)).split()
    return {_stem(w) for w in words}


def asked_for(instruction: str, label: str) -> set[str]:
    """The content words the instruction asks the section to hold (stemmed): none when it asks
    for a change of form, or names nothing but the section."""
    terms = _terms(instruction)
    words = set(_TOKEN.findall(unicodedata.normalize("NFC", instruction).lower()))
    accented = not instruction.isascii()
    if words & _SUBTRACTIVE if accented else terms & {_stem(w) for w in _SUBTRACTIVE}:
        return set()
    return terms - {_stem(w) for w in _NOT_ASKED} - _terms(label)


def _new_text(data: dict[str, Any], key: str, count: int) -> str:
    if not key.startswith("step-"):
        return plan_sections.section_text(data, key)
    first = int(key.removeprefix("step-"))
    return "\n\n".join(
        plan_sections.section_text(data, f"step-{n}") for n in range(first, first + count)
    )


def _checked(
    base: dict[str, Any], key: str, reply: dict[str, Any], instruction: str
) -> tuple[dict[str, Any], list[str]]:
    """The plan with the regenerated section in place, and what is wrong with the new text: it
    repeats another section (most of its word 3-grams are there, agents.objections.restates),
    or holds none of the words the instruction asks for."""
    value = section_value(key, reply)
    data = plan_sections.replace_section(base, key, value, by="Agent A (regenerated)")
    if key == "effort":
        return data, []
    count = len(value) if isinstance(value, list) and key.startswith("step-") else 1
    text = _new_text(data, key, count)
    mine = (
        {key} | {f"step-{int(key[5:]) + n}" for n in range(count)}
        if key.startswith("step-")
        else {key}
    )
    faults = []
    for info in plan_sections.sections_of(data):
        if info.key in mine or info.key == "effort":
            continue
        other = plan_sections.section_text(data, info.key)
        if other.strip() and restates(text, other):
            faults.append(f"repeats {info.label}")
            break
    label = plan_sections.section_info(base, key).label
    asked = asked_for(instruction, label)
    if asked and not asked & _terms(text):
        faults.append(f"does not address: {instruction}")
    return data, faults
