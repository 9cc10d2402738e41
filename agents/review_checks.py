"""What code can tell about a proposal before Agent B reviews it, as points B starts from.

A small model asked to "review the proposal" mostly restates it. Given concrete facts about the
proposal, read off the code with no model, it has something to judge:

- a symbol the task names whose definition the investigation found, in a file the proposal does
  not change (the task is about that code; either it changes or the proposal says why not);
- a file listed in Files that no step mentions (what changes there?);
- a file the proposal deletes that other files still import (the 0.5B model "deletes" the
  module the task is about; every importer would break);
- no test file changed while the import graph knows the tests of a changed file;
- in a bug fix whose task never asks to delete or rename, a step that deletes a file or renames
  a public name (the 0.5B model marked the very file to fix "delete"); `action_risks` returns
  the same sentences for the final plan's Risks.

At most two of each kind and one about tests, so the block stays a few lines of the prompt.

Each point is a fact with its source (`[E#]`, `path:line`); whether it matters is B's call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.investigation.evidence import Evidence
from rag.navigation import RelatedResult
from rag.paths import FileSet, tidy
from rag.roles import role_for
from rag.vietnamese import fold

# On folded text (lower case, no diacritics); the Vietnamese words only for a Vietnamese task,
# where unaccented syllables could be English words too.
_ASKS = {
    "en": re.compile(
        r"(?<!\w)(?:delet\w*|remov\w*|drop\w*|renam\w*|deprecat\w*|get rid of|mov(?:e|es|ed|ing))"
        r"(?!\w)"
    ),
    "vi": re.compile(r"(?<!\w)(?:xoa|go bo|loai bo|bo di|doi ten|di chuyen)(?!\w)"),
}
_RENAME = re.compile(r"(?<!\w)(?:renam\w*|doi ten)(?!\w)")
_SPAN = re.compile(r"`([^`\n]{1,120})`")
_CODE_WORD = re.compile(r"(?<![\w.])(?:\w+(?:[._/]\w+)+(?:\(\))?|\w+\(\)|[a-z]+[A-Z]\w*)")


def review_points(
    proposal: dict[str, Any],
    evidence: Sequence[Evidence],
    paths: FileSet,
    related: Callable[[str], RelatedResult],
    *,
    task: str = "",
    analysis: Mapping[str, Any] | None = None,
) -> list[str]:
    """The facts about `proposal` worth a reviewer's look, most telling first. `related(path)`
    is the import graph around a file (rag.navigation's `Navigator.related`). With the `task`
    and its `analysis` (agents.analysis), an action the task does not call for is questioned
    too (`action_risks`)."""
    entries = [f for f in proposal.get("files") or [] if isinstance(f, dict) and f.get("path")]
    files = list(dict.fromkeys(str(f["path"]) for f in entries))  # the 0.5B lists a file twice
    real = list(dict.fromkeys(found for p in files if (found := paths.resolve(p).path)))
    deleted = [
        found
        for f in entries
        if f.get("action") == "delete" and (found := paths.resolve(str(f["path"])).path)
    ]
    points = _unasked_actions(task, analysis or {}, proposal, "the proposal")
    points += _untouched_definitions(evidence, set(real), paths)
    points += _deleted_but_imported(list(dict.fromkeys(deleted)), related)
    points += _files_without_a_step(proposal, files)
    points += _tests_left_out(real, lambda path: [t.path for t in related(path).tests])
    return points


def _untouched_definitions(
    evidence: Sequence[Evidence], changed: set[str], paths: FileSet
) -> list[str]:
    points: list[str] = []
    seen: set[str] = set()
    for item in evidence:
        if item.tool != "find_symbol" or not item.found or not item.path:
            continue
        if item.path in changed or item.path in seen or item.path not in paths:
            continue
        if role_for(item.path) != "source":
            continue  # a test or an example defining the name is not where the change goes
        seen.add(item.path)
        points.append(
            f"[{item.label}] finds `{item.argument}` defined at `{item.location}`; the proposal "
            "changes nothing in that file."
        )
        if len(points) == 2:
            break
    return points


def _deleted_but_imported(deleted: list[str], related: Callable[[str], RelatedResult]) -> list[str]:
    points = []
    for path in deleted:
        importers = [p for p in related(path).importers if p not in deleted]
        if importers:
            shown = ", ".join(f"`{p}`" for p in importers[:3])
            more = f" and {len(importers) - 3} more" if len(importers) > 3 else ""
            points.append(
                f"`{path}` is deleted, but {len(importers)} file(s) import it: {shown}{more}."
            )
    return points[:2]


def _files_without_a_step(proposal: dict[str, Any], files: list[str]) -> list[str]:
    steps = proposal.get("steps") or []
    named = " ".join(
        " ".join([str(s.get("detail", "")), str(s.get("title", "")), *map(str, s.get("files", []))])
        for s in steps
        if isinstance(s, dict)
    )
    return [
        f"`{path}` is in Files, but no step says what changes in it."
        for path in files
        if path not in named
    ][:2]


def _tests_left_out(changed: list[str], tests_of: Callable[[str], list[str]]) -> list[str]:
    if any(role_for(p) == "test" for p in changed):
        return []
    for path in changed:
        tests = tests_of(path)[:2] if role_for(path) == "source" else []
        if tests:
            listed = ", ".join(f"`{t}`" for t in tests)
            return [f"No test file changes, though `{path}`, which changes, has tests: {listed}."]
    return []


def action_risks(task: str, analysis: Mapping[str, Any], data: Mapping[str, Any]) -> list[str]:
    """The actions of a plan (or proposal) `data` that do not fit the task, one plain sentence
    each, for the plan's Risks: in a bug fix (`analysis["type"] == "bug_fix"`, agents.analysis)
    whose `task` never asks to delete, remove, drop, move or rename anything, each file the
    plan deletes ("Step 2 deletes `pkg/x.py`, which the task does not ask for; a bug fix usually
    modifies it.") and each public name a step renames (a name not starting with "_"). [] for
    any other kind of task, for a task that asks for such an action, and for a plan with none.
    `data` has the Proposal / PlanDraft shape: `files` (path, action), `steps` (title, detail,
    files). Read by code, no model."""
    return _unasked_actions(task, analysis, data, "the plan")


def _unasked_actions(
    task: str, analysis: Mapping[str, Any], data: Mapping[str, Any], whole: str
) -> list[str]:
    if analysis.get("type") != "bug_fix":
        return []
    folded = fold(task[:4000])
    languages = ("en", "vi") if analysis.get("language") == "vi" else ("en",)
    if any(_ASKS[lang].search(folded) for lang in languages):
        return []
    steps = [s for s in data.get("steps") or [] if isinstance(s, dict)]
    said = [f"{s.get('title', '')} {s.get('detail', '')}" for s in steps]
    points: list[str] = []
    deleted = [
        tidy(str(f.get("path", "")))
        for f in data.get("files") or []
        if isinstance(f, dict) and f.get("action") == "delete"
    ]
    for path in dict.fromkeys(p for p in deleted if p):
        number = next(
            (
                n
                for n, (step, text) in enumerate(zip(steps, said, strict=True), 1)
                if path in map(str, step.get("files") or []) or path in text
            ),
            None,
        )
        who = f"Step {number}" if number else whole.capitalize()
        points.append(
            f"{who} deletes `{path}`, which the task does not ask for; a bug fix usually "
            "modifies it."
        )
    for number, text in enumerate(said, 1):
        found = _RENAME.search(fold(text))
        name = _renamed(text[found.end() :]) if found else ""
        if name and not name.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[-1].startswith("_"):
            points.append(
                f"Step {number} renames `{name}`, a public name, which the task does not ask "
                "for; a bug fix keeps public names so that their callers do not break."
            )
    return points


def _renamed(after: str) -> str:
    """The name a step renames: the first code span after "rename", else the first word shaped
    like code (`snake_case`, `dotted.name`, `a/path`, `call()`, `camelCase`); "" when neither
    comes within a few words."""
    head = " ".join(after.split()[:6])
    span = _SPAN.search(head)
    if span:
        return span[1].removesuffix("()")
    shaped = _CODE_WORD.search(head)
    return shaped[0].removesuffix("()") if shaped else ""


def checks_block(points: list[str]) -> str:
    """The points as a prompt section (empty when there are none)."""
    if not points:
        return ""
    listed = "\n".join(f"- {p}" for p in points)
    return f"<checks>\nFacts the app found about the proposal by reading the code:\n{listed}\n</checks>"
