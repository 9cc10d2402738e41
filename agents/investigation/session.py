"""Investigation in a session: Agent A writes an evidence plan, the app runs it with the
read-only tools, each result is saved and shown as its own message ([E1]…), and A may plan one
more round seeing what was found and what is missing. The plan is JSON under the local model's
grammar, or, for a provider with native tool calls, the calls it makes (investigation.native).

Idempotent like every turn: the plan of each round and each evidence item are messages with
stable turn keys (`<key>:plan:<round>`, `<key>:E<n>`); a re-run finds them and runs neither the
model nor the tools again."""

from __future__ import annotations

import builtins
import keyword
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict

from django.conf import settings

from agents.investigation import clarify, native
from agents.investigation.evidence import Evidence, EvidencePlan, EvidenceStep, plan_schema
from agents.investigation.runner import Step, run_steps, tidy_steps
from agents.investigation.task_names import (
    Named,
    example_names,
    named_in_task,
    without_markup,
)
from agents.investigation.tools import ToolResult, Workspace
from agents.prompts import TOOL_GUIDE, evidence_plan_prompt, replan_prompt
from agents.providers import get_provider
from agents.providers.base import CallOptions, ChatMessage, ProviderError
from agents.runtime import TurnStream
from agents.turns import Agent, BudgetSpent, structured_call
from conversations.models import Message, PlanningSession
from rag import index, profile
from rag.query import split_frames

log = logging.getLogger(__name__)

NODE = "investigate"


def load_evidence(session_id: int, key: str) -> list[Evidence]:
    """The evidence an investigation under `key` saved, in [E#] order."""
    rows = Message.objects.filter(
        session_id=session_id,
        node=NODE,
        role=Message.Role.SYSTEM,
        state=Message.State.COMPLETE,
        turn_key__startswith=f"{key}:E",
    ).values_list("data", flat=True)
    items = [Evidence.from_dict(d["evidence"]) for d in rows if d and "evidence" in d]
    return sorted(items, key=lambda e: e.number)


def profile_summary(session: PlanningSession) -> str:
    return profile.summary(profile.load(index.index_dir(session.codebase_id)))


def investigate(session: PlanningSession, agent: Agent, *, key: str) -> list[Evidence]:
    """Plan, run and record the evidence for `session`'s task; returns every item so far."""
    max_steps = settings.PLANAGENTS_EVIDENCE_STEPS
    if max_steps <= 0:
        return []
    workspace = Workspace.of(session.codebase)
    summary = profile_summary(session)
    evidence = load_evidence(session.pk, key)
    rounds = settings.PLANAGENTS_EVIDENCE_ROUNDS
    for round_no in range(1, rounds + 1):
        done = clarify.asked(session.pk, key)
        plan, steps, base = _plan(
            session, agent, key, round_no, summary, evidence, max_steps, done,
            workspace=workspace,
        )  # fmt: skip
        if steps:
            evidence = _run(session.pk, key, workspace, steps, evidence, base)
        elif plan.next_action != "clarify":
            break
        more = plan.next_action == "retrieve"
        if plan.next_action == "clarify" and round_no < rounds:
            if done is None:
                prompt = evidence_plan_prompt(session.task, summary, max_steps, session.language)
                question = clarify.usable_question(plan.question, prompt)
                if question:
                    clarify.ask(session.pk, key, question, round_no)  # the human has the floor
            # Asked in this round: the next one is planned with the answer.
            more = done is not None and done.round == round_no
        if not more:
            break
    return evidence


def _plan(
    session: PlanningSession,
    agent: Agent,
    key: str,
    round_no: int,
    summary: str,
    evidence: list[Evidence],
    max_steps: int,
    asked: clarify.Asked | None = None,
    *,
    workspace: Workspace | None = None,
) -> tuple[EvidencePlan, list[Step], int]:
    """This round's plan, the steps to run (tidied) and the [E#] number they count from: the
    saved ones on a re-run; else one call, replaced by a deterministic plan if unusable: the
    model's native tool calls when its provider has them, else a structured call repaired once
    (the one repair path)."""
    stream = TurnStream(
        session.pk,
        turn_key=f"{key}:plan:{round_no}",
        role=Message.Role.AGENT,
        agent=agent.letter,
        node=NODE,
        profile=agent.profile,
    )
    done = stream.existing()
    if done is not None and done.data and "evidence_plan" in done.data:
        saved = [Step(**{**s, "depends_on": tuple(s["depends_on"])}) for s in done.data["steps"]]
        return EvidencePlan.model_validate(done.data["evidence_plan"]), saved, done.data["base"]
    paths: Iterable[str] = workspace.files if workspace is not None else ()
    named = task_named(session.task, workspace) if round_no == 1 else []
    provider = get_provider(agent.profile)
    tools = provider.native_tools
    if round_no == 1:
        prompt = evidence_plan_prompt(
            session.task, summary, max_steps, session.language, tools=tools
        )
    else:
        prompt = replan_prompt(
            session.task, summary, [e.line() for e in evidence], max_steps, session.language,
            question=asked.question if asked else "", answer=asked.answer if asked else "",
            tools=tools,
        )  # fmt: skip
    stream.fields["model"] = provider.model_name
    options = CallOptions(max_tokens=90 * max_steps + 40, temperature=0.0)
    note = ""
    try:
        plan: EvidencePlan
        if tools:
            last = round_no >= settings.PLANAGENTS_EVIDENCE_ROUNDS
            plan, dropped = native.plan_with_tools(
                session, provider, prompt, options, max_steps, last_round=last
            )
            note = native.dropped_note(dropped)
        else:
            messages = [ChatMessage("user", prompt)]
            plan = structured_call(session, provider, messages, plan_schema(max_steps), options)
    except BudgetSpent:
        raise
    except ProviderError as exc:
        log.info("session %s: evidence plan unusable (%s); using the default", session.pk, exc)
        note = f"\n\n_The model's plan was unusable ({str(exc)[:160]}); the app planned instead._"
        fallback = default_steps(session.task, paths, named) if round_no == 1 else []
        plan = EvidencePlan(steps=fallback[:max_steps], next_action="synthesize")
    ran = {(e.tool, e.argument.strip().lower()) for e in evidence}
    examples = example_names(session.task)
    planned = [
        step
        for step in plan.steps
        if not copies_the_guide(step.argument) and not example_only(step, examples, workspace)
    ]
    added: set[tuple[str, str]] = set()
    if round_no == 1:
        # What a small model can't be trusted to do: look up the symbols the task names, and
        # search the task itself. Those lookups come first and last around the model's own,
        # and always run: the model's last steps give way to them.
        # What the task names explicitly (a file, a quoted line, `Class.method`) earns the
        # app a third lookup: the issue's own words decide first.
        anchors = default_steps(session.task, paths, named)
        added = {(a.tool, a.argument) for a in anchors}
        lookups = 3 if any(n.found and n.tool for n in named) else 2
        steps = _with_anchors(planned, anchors, max_steps, ran, lookups)
    else:
        steps = tidy_steps(planned, max_steps, ran)
    base = max((e.number for e in evidence), default=0)
    stream.open()
    stream.finish(
        content=render_plan(plan, steps, round_no, added, base) + note,
        usage=options.usage,
        data={
            "evidence_plan": plan.model_dump(),
            "steps": [asdict(step) for step in steps],
            "base": base,
        },
    )
    return plan, steps, base


def _with_anchors(
    own: list[EvidenceStep],
    anchors: list[EvidenceStep],
    limit: int,
    ran: set[tuple[str, str]],
    lookups: int = 2,
) -> list[Step]:
    """The app's lookups (the first `lookups` after its search) around the model's steps,
    tidied, at most `limit`: while there are too many, the model's last step is left out
    (seaborn and pylint's 0.5B plans filled all six slots with lookups of a file the task
    mentions but the codebase lacks, and the search of the task itself never ran). Later
    steps depend only on earlier ones, so none loses a dependency."""
    first = anchors[1 : 1 + lookups]
    planned = [*first, *own, anchors[0]]
    steps = tidy_steps(planned, len(planned), ran)
    while len(steps) > limit and own:
        own = own[:-1]
        planned = [*first, *own, anchors[0]]
        steps = tidy_steps(planned, len(planned), ran)
    return steps[:limit]


def _run(
    session_id: int,
    key: str,
    workspace: Workspace,
    steps: list[Step],
    evidence: list[Evidence],
    base: int,
) -> list[Evidence]:
    """Run the round's steps; each result becomes the next [E#] as it arrives. Numbers follow
    the plan's order (not the finishing order) so a re-run gives every step its old number."""
    number = {step.id: base + i + 1 for i, step in enumerate(steps)}
    saved = {e.number: e for e in evidence}
    todo = [s for s in steps if number[s.id] not in saved]
    # Steps whose result is saved already: the others may still need their file.
    known = {s.id: _as_result(saved[number[s.id]]) for s in steps if number[s.id] in saved}
    whys = {s.id: s.why for s in steps}

    def record(step: Step, result: ToolResult) -> None:
        item = Evidence.of(number[step.id], whys[step.id], result)
        stream = TurnStream(
            session_id, turn_key=f"{key}:E{item.number}", role=Message.Role.SYSTEM, node=NODE
        )
        if stream.existing() is None:
            stream.open()
            stream.finish(content=item.markdown(), data={"evidence": item.as_dict()})
        saved[item.number] = item

    run_steps(todo, workspace.call, record, known=known)
    return sorted(saved.values(), key=lambda e: e.number)


def _as_result(item: Evidence) -> ToolResult:
    return ToolResult(
        item.tool, item.argument, item.found, item.message, item.path, item.start, item.end,
        item.text,
    )  # fmt: skip


_BUILTINS = frozenset(dir(builtins))
_IDENTIFIER = re.compile(r"`([A-Za-z_][\w.]{2,60})`|\b([A-Z][a-z0-9]+[A-Z]\w*|[a-z]+_[a-z_0-9]+)\b")


_GUIDE = TOOL_GUIDE.lower()
_GUIDE_WORDS = frozenset({"query", "name", "path", "path:start-end", "symbol", "file"})


def copies_the_guide(argument: str) -> bool:
    """Whether a step's argument is the tool guide's own example (`find_symbol(name)`,
    `query`): seaborn-3069's 0.5B plan searched for "find_symbol(name)" three times."""
    written = argument.strip().lower()
    return written in _GUIDE_WORDS or ("(" in written and written in _GUIDE)


_NAME_TOOLS = frozenset({"find_symbol", "find_references"})
_PATH_TOOLS = frozenset({"outline", "read_file"})
"""Tools that take a path, given a name all the same (`outline C`: the tools answer a name
as find_symbol does, `Workspace._as_name`)."""
_EXAMPLE_MATCHES = frozenset({"exact", "case-insensitive", "qualified", "inherited"})


def example_only(step: EvidenceStep, examples: set[str], workspace: Workspace | None) -> bool:
    """Whether a step looks up a name only the task's own example defines (`C`, `a` of
    `class C: def __init__(self, a)`; `task_names.example_names`) and the codebase does not:
    pylint-4551's 1.5B plan spent four of its six lookups on the issue's example class and
    its parameter, and none on the code to change."""
    if step.tool not in _NAME_TOOLS | _PATH_TOOLS or not examples:
        return False
    name = step.argument.strip().strip("`'\"")
    if re.split(r"\.|::", name)[0] not in examples:
        return False
    if step.tool in _PATH_TOOLS and (
        workspace is None or "/" in name or workspace.files.resolve(name).found
    ):
        return False  # a path, or a file of that name: the codebase's, not the example's
    if workspace is None or workspace.navigator is None:
        return True
    found = workspace.navigator.find_symbol(name)
    return not (found.found and found.match in _EXAMPLE_MATCHES)


def task_named(task: str, workspace: Workspace | None) -> list[Named]:
    """What the task names, resolved (`task_names.named_in_task`); nothing when the workspace
    has no index. A failure here costs the session these lookups, never the session."""
    if workspace is None or workspace.navigator is None:
        return []
    try:
        return named_in_task(task, workspace.files, workspace.navigator)
    except Exception:
        log.exception("could not look up what the task names")
        return []


def default_steps(
    task: str, paths: Iterable[str] = (), named: Sequence[Named] = ()
) -> list[EvidenceStep]:
    """The plan the app makes when the model's is unusable: search the task, look up the
    functions a pasted traceback failed in inside this codebase (`paths`), then what the task
    names and the codebase has (`named`: a quoted line, a file, `Class.method`), then the
    symbols the task names (`code`, CamelCase, snake_case) that `named` did not rule out (a
    name only an example defines); at most three lookups."""
    steps = [
        EvidenceStep(
            id="E1", tool="search", argument=task.strip()[:150], why="code the task is about",
            kind="independent",
        )
    ]  # fmt: skip
    frames = failed_frames(task, paths)
    failed_in = [name for name, _ in frames]
    lookups = [
        ("find_symbol", _frame_lookup(name, path), f"where the traceback failed: {name}")
        for name, path in frames
    ]
    lookups += [(n.tool, n.argument, n.why) for n in named if n.found and n.tool]
    ruled_out = {n.written for n in named if not n.found}
    names = dict.fromkeys(a or b for a, b in _IDENTIFIER.findall(without_markup(task)))
    for name in names:
        # `None`, `str`, `self`: a lookup of the language's own names finds nothing to plan on.
        if keyword.iskeyword(name) or name in _BUILTINS or name in ("self", "cls"):
            continue
        if name not in ruled_out and name not in failed_in:
            lookups.append(("find_symbol", name, f"where {name} is defined"))
    seen: set[tuple[str, str]] = set()
    for tool, argument, why in lookups:
        if (tool, argument.lower()) in seen or len(steps) > 3:
            continue
        seen.add((tool, argument.lower()))
        step = {"id": f"E{len(steps) + 1}", "tool": tool, "argument": argument[:160],
                "why": why[:60], "kind": "independent"}  # fmt: skip
        steps.append(EvidenceStep.model_validate(step))
    return steps


def frame_names(task: str, paths: Iterable[str]) -> list[str]:
    """What to look up where each pasted traceback failed in this codebase (`failed_frames`):
    the function's name, or `path::name` for a protocol method such as `__getattr__`, which
    only its file makes a place."""
    return list(dict.fromkeys(_frame_lookup(n, p) for n, p in failed_frames(task, paths)))


def _frame_lookup(name: str, path: str | None) -> str:
    return f"{path}::{name}" if path and name.startswith("__") else name


def failed_frames(task: str, paths: Iterable[str]) -> list[tuple[str, str | None]]:
    """(function, codebase file or None) of each pasted traceback's innermost frame in this
    codebase: where the error surfaced in our code (frames of the user's script and of
    installed libraries are not ours). A frame is ours when its path ends with one of `paths`
    (that file), or runs through one of the codebase's top-level packages (None: the same
    package at another version, whose file may have moved: seaborn-2848's `seaborn/_core.py`
    is `seaborn/_oldcore.py` here)."""
    _, frames = split_frames(task)
    if not frames:
        return []
    files = {p.lower(): p for p in paths}
    packages = {
        parts[-2]
        for parts in (p.split("/") for p in files if p.endswith("/__init__.py"))
        if len(parts) == 2 or (len(parts) == 3 and parts[0] == "src")
    }
    innermost: dict[int, tuple[str, str | None]] = {}
    for written, text, trace in frames:
        tail = written.replace("\\", "/").lower().split("/")
        name = text.split("\n", 1)[0].rsplit(".", 1)[-1]
        if not name.isidentifier() or keyword.iskeyword(name):
            continue  # `<module>`, `<lambda>`
        suffixes = ("/".join(tail[-n:]) for n in range(min(2, len(tail)), min(len(tail), 6) + 1))
        file = next((files[x] for x in suffixes if x in files), None)
        if name.startswith("__") and file is None:
            continue  # `__getitem__` names a protocol; only with its file is it a place
        if file is not None or packages & set(tail[:-1]):
            innermost[trace] = (name, file)
    return list(dict.fromkeys(innermost.values()))


def render_plan(
    plan: EvidencePlan,
    steps: list[Step],
    round_no: int,
    added: set[tuple[str, str]],
    base: int = 0,
) -> str:
    """The evidence plan as it runs (the model's steps tidied, the app's own lookups marked),
    and how many of the model's steps were left out: the page shows what was done, not what
    a small model wrote six times. Each step is named by the [E#] its result will have."""
    label = {s.id: f"E{base + i}" for i, s in enumerate(steps, 1)}

    def argument(s: Step) -> str:
        return label.get(s.argument, s.argument).replace("`", "'")

    rows = [
        f"- {label[s.id]}: `{s.tool}` `{argument(s)}` — {s.why}"
        + (f" (after {', '.join(label[d] for d in s.depends_on)})" if s.depends_on else "")
        + (" _(the app's own lookup)_" if (s.tool, s.argument) in added else "")
        for s in steps
    ]
    head = "**Evidence plan**" if round_no == 1 else f"**Evidence plan, round {round_no}**"
    own = sum(1 for s in steps if (s.tool, s.argument) not in added)
    left_out = len(plan.steps) - own
    note = (
        f"\n\n_{left_out} of the model's {len(plan.steps)} step(s) left out: repeats, lookups "
        "already made, the tool guide's own examples, or names only the task's example "
        "defines._"
        if left_out > 0
        else ""
    )
    tail = {"synthesize": "Then: propose.", "clarify": "Then: ask you a question."}.get(
        plan.next_action, "Then: look further."
    )
    body = "\n".join([head, *rows, "", tail]) if rows else f"{head}\n\nNothing to look up. {tail}"
    return body + note
