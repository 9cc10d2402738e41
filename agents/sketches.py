"""Change sketches: for each plan step that changes a real definition, the definition's current
code (verbatim, with its line numbers) and a short before/after the model writes for that code
alone, checked against it.

A small model asked for a whole plan restates the bug as the fix; asked for one definition's
change, with its code in front of it, it writes the change. So each sketch is one small call
(agents.planning.sketching): the task, the step, and the definition's code. The "before" lines are held to the code's own
lines by the schema (an enum of them: the local model's grammar cannot write another line);
whatever a provider returns, the app checks every "before" line is in the code, character for
character after whitespace is folded, and an "after" that changes nothing is no sketch. A
sketch that fails the check is asked for once more with the problem shown, then kept flagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, create_model

from rag.chunking import split_lines
from rag.models import CodeFile

EXCERPT_LINES = 60
"""At most this many lines of a definition go to the model (and its enum of lines)."""
SHOWN_LINES = 24
"""A definition longer than this is folded on the page around the lines the sketch changes."""


@dataclass(frozen=True)
class Excerpt:
    """Lines `start`… of `path`, the code of the definition `name` (or a window of it)."""

    path: str
    name: str
    start: int
    lines: tuple[str, ...]
    whole: tuple[int, int]
    """The definition's own first and last line (the excerpt may be a window of it)."""

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1

    def numbered(self) -> str:
        width = len(str(self.end))
        return "\n".join(f"{n:>{width}}  {line}" for n, line in enumerate(self.lines, self.start))


def fold(line: str) -> str:
    """A line with its white space folded: how "before" lines are compared with the code."""
    return " ".join(line.split())


def excerpt(codebase_id: int, target: dict[str, Any], near: int | None = None) -> Excerpt | None:
    """The code of a step's target definition, from the stored file: the whole definition, or
    for a long one the EXCERPT_LINES lines around `near` (a line the step cites), else its
    first lines. None when the file or the lines are not there (a withheld file included)."""
    if target.get("kind") != "definition":
        return None
    row = (
        CodeFile.objects.filter(codebase_id=codebase_id, path=target.get("path"))
        .values_list("content", "withheld_reason")
        .first()
    )
    if row is None or row[1]:
        return None
    lines = split_lines(row[0])
    start, end = int(target.get("start") or 0), int(target.get("end") or 0)
    end = min(max(end, start), len(lines))
    if start < 1 or start > len(lines):
        return None
    first = start
    if end - start + 1 > EXCERPT_LINES:
        if near is not None and start <= near <= end:
            first = max(start, min(near - EXCERPT_LINES // 2, end - EXCERPT_LINES + 1))
        last = first + EXCERPT_LINES - 1
    else:
        last = end
    return Excerpt(
        str(target.get("path")),
        str(target.get("name") or ""),
        first,
        tuple(lines[first - 1 : last]),
        (start, end),
    )


def sketch_schema(code: Excerpt) -> type[BaseModel]:
    """before: lines of `code`; after: free. The JSON schema (a grammar for the local model,
    response_format for a remote one) offers only the code's own (folded, non-blank) lines
    as "before" lines; validation takes any string, so a provider that ignores the schema is
    caught by `check` and asked again with the mismatch shown, not failed as invalid JSON."""
    choices: list[Any] = list(dict.fromkeys(f for f in (fold(line) for line in code.lines) if f))
    return create_model(
        "ChangeSketch",
        before=(
            list[str],
            Field(
                description="The lines of the code shown that the step changes, copied exactly "
                "and in order (for an addition: the line the new code goes after).",
                min_length=1,
                max_length=8,
                json_schema_extra={"items": {"type": "string", "enum": choices}},
            ),
        ),
        after=(
            list[str],
            Field(
                description="Those lines as they read after the change.",
                max_length=14,
            ),
        ),
    )


@dataclass(frozen=True)
class Checked:
    before: list[str]
    """The "before" lines as the code spells them (indentation included)."""
    start: int
    """The line number of the first "before" line (0 when it is not in the code)."""
    problems: list[str]


def check(before: list[str], after: list[str], code: Excerpt) -> Checked:
    """Each "before" line found in the code, in order, after white space is folded; an empty
    sketch or one whose "after" equals its "before" is a problem too."""
    problems: list[str] = []
    folded = [fold(line) for line in code.lines]
    found: list[int] = []
    position = 0
    for line in before:
        want = fold(line)
        if not want:
            continue
        at = _index(folded, want, position)
        if at is None:
            at = _index(folded, want, 0)  # out of order: still the code's line
        if at is None:
            problems.append(f"`{line.strip()}` is not a line of `{code.name}`.")
            continue
        found.append(at)
        position = at + 1
    if not [b for b in before if fold(b)]:
        problems.append("The sketch names no line of the code it changes.")
    elif [fold(a) for a in after if fold(a)] == [fold(b) for b in before if fold(b)]:
        problems.append("The sketch's after lines are its before lines: it changes nothing.")
    lines = [code.lines[i] for i in found]
    return Checked(lines, code.start + found[0] if found else 0, problems)


def _index(folded: list[str], want: str, start: int) -> int | None:
    for n in range(start, len(folded)):
        if folded[n] == want:
            return n
    return None


def reindented(after: list[str], before: list[str]) -> list[str]:
    """The "after" lines with the code's indentation when the model wrote none: it answers
    with lines stripped of the indentation the "before" lines have."""
    indents = {line[: len(line) - len(line.lstrip())] for line in before if line.strip()}
    if not after or len(indents) != 1 or any(a[:1].isspace() for a in after if a.strip()):
        return list(after)
    indent = indents.pop()
    return [f"{indent}{line}" if line.strip() else line for line in after]


# ------------------------------------------------------------------ rendering


def diff_lines(sketch: dict[str, Any]) -> list[str]:
    before = [str(b) for b in sketch.get("before") or []]
    after = [str(a) for a in sketch.get("after") or []]
    return [*(f"-{b}" for b in before), *(f"+{a}" for a in after)]


def render_sketch_message(number: int, code: Excerpt, data: dict[str, Any]) -> str:
    """What the session page shows while a sketch is written."""
    head = f"**Change sketch for step {number}:** `{code.name}` at `{code.path}:{code.start}`"
    lines = diff_lines(data)
    return head + ("\n\n```diff\n" + "\n".join(lines) + "\n```" if lines else "")


def shown_code(code: dict[str, Any], sketch: dict[str, Any] | None) -> list[str]:
    """The definition's lines as the plan shows them, numbered: all of a short one; of a long
    one, its first lines and the lines around the sketch's, the gaps marked with ⋮."""
    lines = [str(line) for line in code.get("lines") or []]
    start = int(code.get("start") or 1)
    if not lines:
        return []
    keep = set(range(len(lines)))
    if len(lines) > SHOWN_LINES:
        keep = set(range(4))
        at = int((sketch or {}).get("start") or 0) - start
        span = len((sketch or {}).get("before") or [])
        if 0 <= at < len(lines):
            keep |= set(range(max(0, at - 4), min(len(lines), at + span + 4)))
        else:
            keep = set(range(SHOWN_LINES))
    width = len(str(start + len(lines) - 1))
    out: list[str] = []
    previous = -1
    for n in sorted(keep):
        if previous >= 0 and n != previous + 1:
            out.append(f"{'⋮':>{width}}")
        out.append(f"{start + n:>{width}}  {lines[n]}")
        previous = n
    if previous < len(lines) - 1:
        out.append(f"{'⋮':>{width}}  ({len(lines) - 1 - previous} more lines)")
    return out


def fenced(lines: list[str], info: str = "") -> list[str]:
    """A fenced block around `lines` that none of them can close."""
    longest = max((len(line) - len(line.lstrip("`")) for line in lines), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *lines, fence]
