"""Where a plan comment belongs in another version of the plan: pure functions on the plans'
structured data (no database), so the page, the prompts and the tests judge it the same way.

A comment is anchored to what it was written about, never to a number: a step's number
changes as soon as a step is split or inserted above it ("split step 3" shifts every later
step), so a comment on "Step 4" would silently land on a different step. The anchor is:

- a step: its definition target (kind, name, path from the step's `target`) and its title and
  detail as they were;
- a section (summary, decisions, files, testing, risks, effort): its key, and its text then;
- a cited line: `path:line`.

`place` finds the anchor in a version. A step is the step with the same target definition (of
several on it, as after a split, the one whose text is most alike); when no step has that
target, or the old step had none, the step whose title and detail are most alike, if the two
share most of their words (more than half of each one's distinct words, SHARED_WORDS). A
section is always there under its key. A step that changes another definition is never the
same step by its words (the comment was about the definition it changed). A cited line is there when the version still cites a
range of that file holding the line. Anything else is *outdated*: placed nowhere, shown as
such, never dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agents.plan_sections import section_text, sections_of

STEP = "step"
SECTION = "section"
LINE = "line"
KINDS = (STEP, SECTION, LINE)

SHARED_WORDS = 0.5
"""A step is the same step by its text when the words both have are more than this share of
each one's distinct words: "Count failed logins per user in the handler" and "Count failed
logins per user name" share 5 of 8 and 5 of 6; a different step on the same file ("Log the
refused logins") shares 1."""

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Placement:
    """Where a comment sits in one version: `key` is the section (step-2, summary…) or, for a
    cited line, "" with `line`; `key is None` means outdated."""

    key: str | None
    how: str
    """Why it is there, as the page says it: "same definition", "similar text (5 of 8
    words)", "same section", "same cited line"; for an outdated one, what was not found."""
    changed: bool = False
    """Placed, but the step's or section's text is not what the comment was written on."""
    line: str = ""

    @property
    def outdated(self) -> bool:
        return self.key is None


# ---------------------------------------------------------------- anchors


def _steps(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in data.get("steps") or [] if isinstance(s, dict)]


def _target(step: dict[str, Any]) -> dict[str, str] | None:
    """The step's definition (kind, name, path), without the line range that moves with edits."""
    target = step.get("target")
    if not isinstance(target, dict) or not target.get("path"):
        return None
    return {k: str(target[k]) for k in ("kind", "name", "path") if target.get(k)}


def anchor_for(data: dict[str, Any], key: str) -> tuple[str, dict[str, Any]]:
    """The anchor of a comment on section `key` ("step-2", "summary"…) of a version's data.
    Raises agents.plan_sections.SectionError for a section the plan does not have."""
    text = section_text(data, key)  # raises for a key that is not there
    if key.startswith("step-"):
        step = _steps(data)[int(key.removeprefix("step-")) - 1]
        return STEP, {
            "target": _target(step),
            "title": str(step.get("title") or ""),
            "detail": str(step.get("detail") or ""),
        }
    return SECTION, {"key": key, "text": text}


def cited_lines(data: dict[str, Any]) -> list[str]:
    """The `path:line` a version cites (the first line of each cited range), in order, once."""
    found: dict[str, None] = {}
    for c in data.get("citations") or []:
        if isinstance(c, dict) and c.get("path") and isinstance(c.get("start"), int):
            found[f"{c['path']}:{c['start']}"] = None
    return list(found)


def line_anchor(value: str) -> dict[str, Any] | None:
    """`path:line` as an anchor, or None when it is not one."""
    path, _, line = value.strip().rpartition(":")
    if not path or not (line.isascii() and line.isdigit() and len(line) < 8):
        return None
    return {"path": path, "line": int(line)}


def label(kind: str, anchor: dict[str, Any]) -> str:
    """The anchor in a few words, for the page and the prompt."""
    if kind == STEP:
        target = anchor.get("target") or {}
        where = " in ".join(t for t in (target.get("name"), target.get("path")) if t)
        return f"the step “{anchor.get('title', '')}”" + (f" ({where})" if where else "")
    if kind == SECTION:
        return f"the {str(anchor.get('key', '')).capitalize()} section"
    return f"the cited line {anchor.get('path')}:{anchor.get('line')}"


# ---------------------------------------------------------------- placing


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def shared_words(a: str, b: str) -> tuple[int, int, int]:
    """How many distinct words `a` and `b` have in common, and how many each has."""
    left, right = words(a), words(b)
    return len(left & right), len(left), len(right)


def similar(a: str, b: str) -> bool:
    """Whether two steps' texts share most of their words (SHARED_WORDS of each side)."""
    common, left, right = shared_words(a, b)
    return bool(left and right) and common > SHARED_WORDS * left and common > SHARED_WORDS * right


def _step_text(step: dict[str, Any]) -> str:
    return f"{step.get('title') or ''} {step.get('detail') or ''}"


def _closeness(a: str, b: str) -> float:
    common, left, right = shared_words(a, b)
    return common / (left + right - common) if common else 0.0


def place(kind: str, anchor: dict[str, Any], data: dict[str, Any]) -> Placement:
    """Where a comment anchored at `anchor` sits in the version whose data is `data`."""
    if kind == STEP:
        return _place_step(anchor, data)
    if kind == SECTION:
        key = str(anchor.get("key", ""))
        if key not in {s.key for s in sections_of(data)} or key.startswith("step-"):
            return Placement(None, f"no {key} section")
        return Placement(key, "same section", changed=section_text(data, key) != anchor.get("text"))
    if kind == LINE:
        path, line = anchor.get("path"), anchor.get("line")
        for c in data.get("citations") or []:
            if not isinstance(c, dict) or c.get("path") != path:
                continue
            start, end = c.get("start"), c.get("end")
            if not isinstance(start, int) or not isinstance(line, int):
                continue
            if start <= line <= (end if isinstance(end, int) else start):
                return Placement("", "same cited line", line=f"{path}:{line}")
        return Placement(None, f"{path}:{line} is no longer cited")
    return Placement(None, "unknown anchor")


def _place_step(anchor: dict[str, Any], data: dict[str, Any]) -> Placement:
    old = f"{anchor.get('title') or ''} {anchor.get('detail') or ''}"
    steps = _steps(data)
    target = anchor.get("target")
    if target:
        same = [n for n, s in enumerate(steps, 1) if _target(s) == target]
        if same:
            # A split leaves several steps on one definition: the one most like the old step.
            n = max(same, key=lambda n: (_closeness(old, _step_text(steps[n - 1])), -n))
            return Placement(f"step-{n}", "same definition", changed=_changed(anchor, steps[n - 1]))
    alike = [
        n
        for n, s in enumerate(steps, 1)
        if similar(old, _step_text(s)) and not _other_definition(target, s)
    ]
    if not alike:
        return Placement(None, "no step with the same definition or most of the same words")
    n = max(alike, key=lambda n: (_closeness(old, _step_text(steps[n - 1])), -n))
    if not _changed(anchor, steps[n - 1]):
        return Placement(f"step-{n}", "same title and detail")
    common, left, _ = shared_words(old, _step_text(steps[n - 1]))
    return Placement(
        f"step-{n}",
        f"similar text ({common} of {left} words)",
        changed=_changed(anchor, steps[n - 1]),
    )


def _other_definition(target: dict[str, str] | None, step: dict[str, Any]) -> bool:
    """Whether `step` changes another definition than the one the comment's step changed: such
    a step is another step however alike their words (a plan's steps are often worded alike,
    "Change `a` at `x.py:10`" and "Change `b` at `x.py:40`"). A step on no definition, or on
    a new file, may still be it: a version can lose a step's target."""
    theirs = _target(step)
    return bool(
        target
        and target.get("kind") == "definition"
        and theirs
        and theirs.get("kind") == "definition"
        and theirs != target
    )


def _changed(anchor: dict[str, Any], step: dict[str, Any]) -> bool:
    return (str(step.get("title") or ""), str(step.get("detail") or "")) != (
        anchor.get("title"),
        anchor.get("detail"),
    )
