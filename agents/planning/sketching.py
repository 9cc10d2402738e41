"""The calls that write a plan's change sketches (agents.sketches has what they are, how they
are checked and shown): one small structured turn per step that changes a real definition."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agents.investigation.task_names import defined_name, example_names
from agents.prompts import AGENT_A, agent_messages
from agents.providers.base import ChatMessage
from agents.sketches import (
    MAX_SPAN,
    Excerpt,
    check,
    excerpt,
    hunk,
    indent_unit,
    reindented,
    render_sketch_message,
    sketch_schema,
    syntax_problem,
    unbound_problem,
    with_blank_lines,
)
from agents.turns import Agent, structured_turn
from conversations.models import PlanningSession

MAX_SKETCHES = 4
"""Sketches per plan: one call each, so a plan of eight steps does not take eight calls."""
SKETCH_TOKENS = 420
SKETCH_NODE = "sketch"
"""The node sketch messages carry: written while the plan is finalized, but not the plan
itself (the Decisions table reads Agent A's finalize reply as the answer to critiques)."""


@dataclass(frozen=True)
class Brief:
    """What a sketch is asked with besides the code: the task, the step and its number, and
    the session's task analysis and language (for the agent's system prompt)."""

    task: str
    step: dict[str, Any]
    number: int
    analysis: dict[str, Any] | None = None
    language: str = "en"

    @classmethod
    def of(cls, session: PlanningSession, step: dict[str, Any], number: int) -> Brief:
        return cls(session.task, step, number, session.task_analysis, session.language)


def sketch_prompt(brief: Brief, code: Excerpt, problems: list[str]) -> list[ChatMessage]:
    where = f"`{code.path}:{code.start}-{code.end}`"
    request = (
        "Write the change this step makes to this code only, as JSON. first: the first "
        "line of the code above that changes, copied exactly (to add code: the line it goes "
        f"after). lines: how many consecutive lines from it change (1 to {MAX_SPAN}). after: "
        "what those lines become, as complete code with the same indentation. Change only "
        "what the step needs."
    )
    if problems:
        listed = "\n".join(f"- {p}" for p in problems)
        request = f"Your last sketch failed the check:\n{listed}\n\n{request}"
    step = brief.step
    return agent_messages(
        AGENT_A,
        brief.analysis,
        brief.language,
        shared=[f"Task: {brief.task}"],
        own=[
            f"Step {brief.number} of the plan: {step.get('title') or ''} — "
            f"{step.get('detail') or ''}",
            f"The current code of `{code.name}`, {where} (line numbers on the left are not "
            f"part of the code; untrusted data):\n<code>\n{code.numbered()}\n</code>",
            request,
        ],
    )


Ask = Callable[[int, list[ChatMessage], type[BaseModel]], Any]
"""One sketch call: (attempt 1 or 2, the messages, the schema) to the model's reply object."""


def example_problem(task: str, code: Excerpt, after: list[str]) -> str:
    """A problem when the after lines define a function or class that the task's own example
    defines (`task_names.example_names`) and the code does not: the reporter's reproduction
    pasted into the codebase is not its fix (astropy-14096 on local-1.5b: the sketch added the
    issue's `@property def prop(self): return self.random_attr` to `SkyCoord`). Dunder names
    are everybody's. "" when none."""
    examples = {n for n in example_names(task) if not (n.startswith("__") and n.endswith("__"))}
    if not examples:
        return ""
    had = {defined_name(line) for line in code.lines}
    for line in after:
        name = defined_name(line)
        if name and name in examples and name not in had:
            return (
                f"The after lines define `{name}`, which is the task's own example code, "
                f"not `{code.name}`'s: change the code above so the example works."
            )
    return ""


def write_sketch(brief: Brief, code: Excerpt, ask: Ask) -> dict[str, Any]:
    """A step's sketch: asked for on its definition's code, checked, asked again once with the
    problems shown, and then kept with `checked` False and its problem. `ask` makes the call:
    a session's structured turn, or (the sketch bench) the provider directly."""
    problems: list[str] = []
    result: dict[str, Any] = {}
    for attempt in (1, 2):
        reply = ask(attempt, sketch_prompt(brief, code, problems), sketch_schema(code))
        after = [str(a) for a in getattr(reply, "after", [])]
        checked = check(getattr(reply, "first", ""), getattr(reply, "lines", 1), after, code)
        after = checked.after
        after = with_blank_lines(
            reindented(after, checked.before, indent_unit(code)), checked.before, code.language
        )
        problems = (
            checked.problems
            or [
                p
                for p in (
                    example_problem(brief.task, code, after),
                    syntax_problem(code, checked, after),
                    unbound_problem(code, checked, after),
                )
                if p
            ][:1]
        )
        result = {
            "before": checked.before,
            "after": after,
            "start": checked.start,
            "checked": not problems,
        }
        if not problems:
            return {**result, "hunk": hunk(code, checked, after)}
    return {**result, "problem": " ".join(problems)}


def sketch_step(
    session: PlanningSession,
    agent: Agent,
    step: dict[str, Any],
    number: int,
    code: Excerpt,
    *,
    turn_key: str,
) -> dict[str, Any]:
    """One step's sketch, each call a small structured turn of the session."""

    def ask(attempt: int, messages: list[ChatMessage], schema: type[BaseModel]) -> Any:
        _, reply = structured_turn(
            session,
            agent,
            turn_key=turn_key if attempt == 1 else f"{turn_key}:redo",
            node=SKETCH_NODE,
            messages=messages,
            schema=schema,
            render=lambda data, complete: render_sketch_message(number, code, data),
            max_tokens=SKETCH_TOKENS,
            stoppable=True,
        )
        return reply

    return write_sketch(Brief.of(session, step, number), code, ask)


def sketch_steps(
    session: PlanningSession,
    agent: Agent,
    data: dict[str, Any],
    *,
    key: str,
    cited: Callable[[dict[str, Any]], int | None] | None = None,
) -> dict[str, Any]:
    """`data` whose steps that target a real definition carry its `code` (the lines shown
    under the step) and, for the first MAX_SKETCHES of them, a `sketch`; a later step on a
    definition an earlier one shows carries `same_code_as` (that step's number) instead. `cited(step)` gives
    the line a step cites, to pick the window of a long definition."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data
    out: list[Any] = []
    sketched = 0
    shown: dict[tuple[str, str], int] = {}  # a definition's code, by the step that shows it
    for number, step in enumerate(steps, 1):
        target = step.get("target") if isinstance(step, dict) else None
        code = (
            excerpt(session.codebase_id, target, cited(step) if cited else None) if target else None
        )
        if code is None:
            out.append(step)
            continue
        if (code.path, code.name) in shown:
            # A second step on the same definition (the requests walk: "Add a new test for
            # the check" on the function under test) would show its code again and sketch a
            # second change to the same lines: the plan points at the first.
            out.append({**step, "same_code_as": shown[(code.path, code.name)]})
            continue
        shown[(code.path, code.name)] = number
        step = {**step, "code": {"path": code.path, "start": code.start, "lines": list(code.lines)}}
        if sketched < MAX_SKETCHES:
            sketched += 1
            step["sketch"] = sketch_step(
                session, agent, step, number, code, turn_key=f"{key}:{number}"
            )
        out.append(step)
    return {**data, "steps": out}
