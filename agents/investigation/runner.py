"""Run evidence plans: independent steps together on a few threads, dependent ones after the
steps they name. `run_steps` is the scheduler alone (no database, no model); `investigate` in
agents/investigation/session.py drives it for a session."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from django.db import close_old_connections, connection

from agents.investigation.evidence import EvidenceStep
from agents.investigation.tools import TOOLS, ToolResult

WORKERS = 3
_REFERENCE = re.compile(r"^\$?(E\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Step:
    """One step to run, as the scheduler sees it: ids already checked, duplicates gone."""

    id: str
    tool: str
    argument: str
    why: str
    depends_on: tuple[str, ...] = ()


@dataclass
class Outcome:
    results: dict[str, ToolResult] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    """Step ids in the order they finished."""


def tidy_steps(
    steps: list[EvidenceStep], limit: int, done: set[tuple[str, str]] | None = None
) -> list[Step]:
    """The plan's steps made safe to run: at most `limit`, no step that repeats one already
    run (same tool and argument), ids renumbered S1…, dependencies only on earlier steps (so
    no cycle can form). Small models write duplicate ids and dangling references."""
    done = set(done or ())
    kept: list[Step] = []
    ids: dict[str, str] = {}
    by_key: dict[tuple[str, str], str] = {}
    for step in steps:
        tool, argument = _called(step.tool, step.argument.strip())
        key = (tool, argument.lower())
        if key in by_key:  # a repeat in this plan: steps depending on it get the first one
            ids.setdefault(step.id.strip().upper(), by_key[key])
            continue
        if key in done or not argument:
            continue
        done.add(key)
        by_key[key] = f"S{len(kept) + 1}"
        new_id = f"S{len(kept) + 1}"
        deps = tuple(dict.fromkeys(ids[d.strip().upper()] for d in step.depends_on
                                   if d.strip().upper() in ids))  # fmt: skip
        ref = _REFERENCE.match(argument)
        if ref and ref[1].upper() in ids:
            argument = ids[ref[1].upper()]
            deps = tuple(dict.fromkeys((*deps, argument)))
        ids.setdefault(step.id.strip().upper(), new_id)
        kept.append(Step(new_id, tool, argument, step.why, deps))
        if len(kept) >= limit:
            break
    return kept


def _called(tool: str, argument: str) -> tuple[str, str]:
    """(tool, argument) of a step whose argument is written as a call of a tool,
    `find_symbol(Inner.copy)` under any tool (the 0.5B model's habit, from the tool guide's
    own notation): that tool with what is inside. Anything else stays as it is."""
    call = _CALL.fullmatch(argument)
    if call and call[1] in TOOLS:
        return call[1], call[2].strip().strip("'\"`")
    return tool, argument


_CALL = re.compile(r"(\w{3,20})\(([^()]{1,160})\)")


def run_steps(
    steps: list[Step],
    call: Callable[[str, str], ToolResult],
    on_result: Callable[[Step, ToolResult], None] | None = None,
    workers: int = WORKERS,
    known: Mapping[str, ToolResult] | None = None,
) -> Outcome:
    """Run every step: those whose dependencies are done go to the pool together; as each
    finishes, the steps waiting on it are released. `on_result` runs in the calling thread
    (it may write to the database), in the order steps finish. A step whose argument names
    another step (`S1`) gets that step's file (and lines, for read_file). `known`: results of
    steps that ran before (a resumed round), which the others may depend on."""
    outcome = Outcome(results=dict(known or {}))
    waiting = list(steps)
    running: dict[Future[ToolResult], Step] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="evidence") as pool:
        while waiting or running:
            for step in [s for s in waiting if all(d in outcome.results for d in s.depends_on)]:
                waiting.remove(step)
                argument = _bind(step.argument, step.tool, outcome.results)
                running[pool.submit(_in_thread, call, step.tool, argument)] = step
            if not running:  # only unreachable dependencies left (cannot happen after tidy)
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                step = running.pop(future)
                result = future.result()
                outcome.results[step.id] = result
                outcome.order.append(step.id)
                if on_result is not None:
                    on_result(step, result)
    return outcome


def _bind(argument: str, tool: str, results: Mapping[str, ToolResult]) -> str:
    ref = _REFERENCE.match(argument) or re.fullmatch(r"(S\d+)", argument)
    source = results.get(ref[1].upper()) if ref else None
    if source is None:
        return argument
    if not source.path:
        return argument
    if tool == "read_file" and source.start:
        return f"{source.path}:{source.start}-{source.end}"
    return source.path


def _in_thread(call: Callable[[str, str], ToolResult], tool: str, argument: str) -> ToolResult:
    """Run one tool on a pool thread. Django opens a connection per thread: close it, or a
    thread pool leaks one per worker (and a test database refuses to be dropped)."""
    close_old_connections()
    try:
        return call(tool, argument)
    finally:
        connection.close()
