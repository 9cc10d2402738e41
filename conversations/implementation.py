"""Did the code follow the plan? A plan's steps set against an implementation, step by step.

    report = verify(structured, changes, judge=None, rules=[])

`changes` is what the implementation did to each file it touched (`FileChange`: the text before
when it is known, the text after). A pasted diff gives both sides; a newer version of the
codebase gives only the new text, since re-indexing replaces the old in place: then the old
side of a step is what the plan kept of it, its target definition's code (`step["code"]`).

What is decided here needs no model: which definitions changed (rag.symbols on the old and new
text; a definition is found again by its qualified name), whether a step's checked sketch is
there (its added lines present and its removed lines gone, white space folded), which changed
files no step names, whether the tests the plan names changed, and which critical rules name a
changed path as one not to touch. Where a target changed in another way than its sketch says,
`judge` (the model, one small call per step; None: not asked) says whether the change is
equivalent, and after a yes whether the change undone is too (the control); its answers are
kept as the model's, with the hunks it read.

Statuses: done (the target changed as the sketch says, or the model judged the change
equivalent and the change undone not; a step with no checked sketch: its target changed),
partly (some of its files or definitions changed, not its target), not_done (nothing it
targets changed), deviated (its target changed, differently from its sketch).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rag.chunking import split_lines
from rag.languages import language_for
from rag.paths import InvalidPath, clean, find_citations
from rag.symbols import Definition, extract

DONE, PARTLY, NOT_DONE, DEVIATED = "done", "partly", "not_done", "deviated"
STATUSES = (DONE, PARTLY, NOT_DONE, DEVIATED)
LABELS = {DONE: "done", PARTLY: "partly", NOT_DONE: "not done", DEVIATED: "deviated"}
HUNK_CONTEXT = 2
MAX_HUNK_LINES = 80
"""Lines of one step's evidence hunk kept in the report (the rest is counted)."""
MAX_LISTED = 200
"""Unplanned files listed in a report."""


@dataclass(frozen=True)
class FileChange:
    """What an implementation did to one file."""

    path: str
    kind: str
    """added, removed or modified."""
    old: str | None = None
    """The text before; None when the file was not there or its earlier text is gone."""
    new: str | None = None
    """The text after; None when it was removed."""
    old_known: bool = True
    """False when the text before is gone (a newer version replaced it in the index)."""


@dataclass(frozen=True)
class Judgement:
    """The model's answer on one step: is the change it read equivalent to the sketch?"""

    equivalent: bool | None
    reason: str
    error: str = ""
    undone: Judgement | None = None
    """The control, asked only after a yes: the same question on the change undone (the hunk
    reversed). A yes counts only when the model says no to it: a model that calls both a change
    and its opposite equivalent to the sketch cannot tell them apart."""

    @property
    def told_apart(self) -> bool:
        """Yes to the change and no to the change undone: the only yes that counts."""
        return (
            self.equivalent is True and self.undone is not None and self.undone.equivalent is False
        )


Judge = Callable[[dict[str, Any], list[str], list[str]], Judgement]
"""(step, the sketch's diff lines, the target's actual diff lines) → the model's judgement,
with its control (`Judgement.undone`) when it said yes."""


def fold(line: str) -> str:
    return " ".join(line.split())


def _key(path: Any) -> str | None:
    if not isinstance(path, str) or not path.strip():
        return None
    try:
        return clean(path)
    except InvalidPath:
        return None


# ------------------------------------------------------------------ definitions and hunks


@dataclass(frozen=True)
class Code:
    """Lines `start`… of a file: a definition's code (or the part of it the plan kept)."""

    start: int
    lines: list[str]
    whole: bool = True
    """False when these are a window of a longer definition (what a plan keeps of one)."""


def _definitions(path: str, text: str) -> list[Definition]:
    found = extract(path, text, language_for(path))
    return found.definitions if found is not None else []


def find_definition(path: str, text: str, name: str, near: int = 0) -> Code | None:
    """The definition `name` (qualified: `Class.method`) in `text`, the one nearest line
    `near` when several share the name; None when the file has none of that name."""
    named = [d for d in _definitions(path, text) if d.qualified_name == name]
    if not named:
        return None
    best = min(named, key=lambda d: abs(d.start_line - near))
    lines = split_lines(text)
    return Code(best.start_line, lines[best.start_line - 1 : best.end_line])


def _folded(lines: Iterable[str]) -> list[str]:
    return [f for f in (fold(line) for line in lines) if f]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    """Whether `needle` is a run of consecutive lines of `haystack` (both folded, no blanks)."""
    if not needle:
        return True
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _runs(haystack: list[str], needle: list[str]) -> int:
    """How many times `needle` is a run of consecutive lines of `haystack` (both folded)."""
    n = len(needle)
    return sum(1 for i in range(len(haystack) - n + 1) if haystack[i : i + n] == needle)


def unchanged(old: Code, new: Code) -> bool:
    """Whether the definition reads the same, white space folded (a window of it: whether the
    window's lines are still there, in a row)."""
    if old.whole:
        return _folded(old.lines) == _folded(new.lines)
    return _contains(_folded(new.lines), _folded(old.lines))


_HEADER = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


MAX_COMPARED = 4_000_000
"""Old lines times new lines a definition's change is computed for: difflib's time grows
faster than that product (a 10,000-line definition took 18 s, 20,000 lines more than 100 s,
in the web process), and no plan step's definition is that long."""


def hunk(old: Code, new: Code, name: str = "") -> list[str]:
    """The change from `old` to `new` as unified diff hunks with the file's real line
    numbers on both sides; for definitions too long to compare (MAX_COMPARED), one line
    saying so."""
    if len(old.lines) * len(new.lines) > MAX_COMPARED:
        return [f"@@ {name}: {len(old.lines)} lines before, {len(new.lines)} after; too long "
                "to show the change @@"]  # fmt: skip
    lines = list(difflib.unified_diff(old.lines, new.lines, lineterm="", n=HUNK_CONTEXT))[2:]
    out: list[str] = []
    for line in lines:
        found = _HEADER.match(line)
        if found:
            a, b = int(found[1]) + old.start - 1, int(found[3]) + new.start - 1
            line = f"@@ -{a}{found[2] or ''} +{b}{found[4] or ''} @@ {name}".rstrip()
        out.append(line)
    return out


def undone(lines: list[str]) -> list[str]:
    """A hunk reversed, the change undone: its added and removed lines swapped, and its
    headers' sides."""
    swap = {"+": "-", "-": "+"}
    return [
        _HEADER.sub(lambda m: f"@@ -{m[3]}{m[4] or ''} +{m[1]}{m[2] or ''} @@", line)
        if line.startswith("@@")
        else swap.get(line[:1], line[:1]) + line[1:]
        for line in lines
    ]


def first_added_line(lines: list[str]) -> int:
    """The line number (new side) of the first line a hunk adds or, failing that, of its first
    hunk: where a citation of the change points."""
    at = 0
    for line in lines:
        found = _HEADER.match(line)
        if found:
            at = int(found[3])
            continue
        if line.startswith("+"):
            return at
        if not line.startswith("-"):
            at += 1
    starts = [int(m[3]) for m in (_HEADER.match(x) for x in lines) if m]
    return starts[0] if starts else 0


def _clipped(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_HUNK_LINES:
        return lines
    return [*lines[:MAX_HUNK_LINES], f"… {len(lines) - MAX_HUNK_LINES} more lines"]


# ------------------------------------------------------------------ sketches


def sketch_of(step: dict[str, Any]) -> dict[str, Any] | None:
    sketch = step.get("sketch")
    if isinstance(sketch, dict) and sketch.get("checked") and isinstance(sketch.get("after"), list):
        return sketch
    return None


def sketch_lines(sketch: dict[str, Any]) -> list[str]:
    """The sketch as diff lines (its hunk when it has one)."""
    if sketch.get("hunk"):
        return [str(line) for line in sketch["hunk"]]
    return [*(f"-{b}" for b in sketch.get("before") or []), *(f"+{a}" for a in sketch["after"])]


def sketch_present(sketch: dict[str, Any], old: Code, new: Code) -> bool:
    """Whether the new code has the sketch's change: its after-lines there in a row (more
    times than the old code had them: a run that was already there is no sign of the change),
    or every line it adds there (as many times more as it adds it) and every line it removes
    gone (as many times fewer), white space folded."""
    before = _folded(str(b) for b in sketch.get("before") or [])
    after = _folded(str(a) for a in sketch.get("after") or [])
    now = _folded(new.lines)
    was = Counter(_folded(old.lines))
    counted = Counter(now)
    added = Counter(after) - Counter(before)
    removed = Counter(before) - Counter(after)
    if not added and not removed:
        return False
    if (
        added
        and _runs(now, after) > _runs(_folded(old.lines), after)
        and all(counted[line] < was[line] or was[line] == 0 for line in removed)
    ):
        return True
    if any(counted[line] < was[line] + times for line, times in added.items()):
        return False
    return all(counted[line] <= was[line] - times for line, times in removed.items())


# ------------------------------------------------------------------ one step


def step_paths(step: dict[str, Any]) -> list[str]:
    """The files a step names: its file list, its target's file, the files its words cite."""
    found: dict[str, None] = {}
    target: dict[str, Any] = step["target"] if isinstance(step.get("target"), dict) else {}
    for written in [target.get("path"), *(step.get("files") or [])]:
        key = _key(written)
        if key and ("/" in key or "." in key):
            found.setdefault(key)
    text = " ".join(str(step.get(k) or "") for k in ("title", "detail"))
    for citation in find_citations(text):
        key = _key(citation.path)
        if key:
            found.setdefault(key)
    return list(found)


def _old_code(step: dict[str, Any], change: FileChange, name: str, near: int) -> Code | None:
    if change.old_known and change.old is not None:
        found = find_definition(change.path, change.old, name, near)
        if found is not None:
            return found
    kept = step.get("code") if isinstance(step.get("code"), dict) else None
    if kept and kept.get("path") == change.path and kept.get("lines"):
        lines = [str(x) for x in kept["lines"]]
        target = step.get("target") or {}
        span = int(target.get("end") or 0) - int(target.get("start") or 0) + 1
        return Code(int(kept.get("start") or near or 1), lines, whole=len(lines) >= span)
    return None


def _result(step: dict[str, Any], number: int) -> dict[str, Any]:
    target = step.get("target") if isinstance(step.get("target"), dict) else None
    return {
        "number": number,
        "title": " ".join(str(step.get("title") or f"Step {number}").split())[:300],
        "target": {
            "kind": str(target.get("kind") or ""),
            "name": str(target.get("name") or ""),
            "path": str(target.get("path") or ""),
        }
        if target
        else None,
        "status": NOT_DONE,
        "reason": "",
        "by": "app",
        "files": [],
        "evidence": [],
        "sketch": [],
        "judgement": None,
    }


def verify_step(
    step: dict[str, Any], number: int, changes: dict[str, FileChange], judge: Judge | None
) -> dict[str, Any]:
    """One row of the report (see the module's docstring for the statuses)."""
    out = _result(step, number)
    paths = step_paths(step)
    out["files"] = [{"path": p, "changed": p in changes} for p in paths]
    touched = [p for p in paths if p in changes]
    target: dict[str, Any] = step["target"] if isinstance(step.get("target"), dict) else {}
    kind, path = target.get("kind"), _key(target.get("path"))
    for p in touched:
        if p != path:
            change = changes[p]
            out["evidence"].append({"path": p, "line": 0, "what": change.kind, "hunk": []})

    if kind == "definition" and path:
        return _definition_step(step, out, changes.get(path), path, judge)
    if kind == "new" and path:
        return _new_step(out, changes.get(path), path)
    if not paths:
        out["reason"] = "The step names no file or definition, so nothing can be checked."
    elif len(touched) == len(paths):
        out["status"], out["reason"] = DONE, "Every file the step names changed."
    elif touched:
        out["status"] = PARTLY
        out["reason"] = f"{len(touched)} of the {len(paths)} files the step names changed."
    else:
        out["reason"] = "None of the files the step names changed."
    return out


def _definition_step(
    step: dict[str, Any],
    out: dict[str, Any],
    change: FileChange | None,
    path: str,
    judge: Judge | None,
) -> dict[str, Any]:
    name = str(step["target"].get("name") or "")
    near = int(step["target"].get("start") or 0)
    others = [e for e in out["evidence"] if e["path"] != path]
    if change is None:
        out["status"] = PARTLY if others else NOT_DONE
        out["reason"] = f"`{path}` did not change" + (
            ", though other files of the step did." if others else "."
        )
        return out
    old = _old_code(step, change, name, near)
    new = (
        find_definition(path, change.new, name, old.start if old else near) if change.new else None
    )
    if old is None:
        out["status"] = PARTLY
        out["reason"] = (
            f"`{path}` {change.kind}; the plan kept no code of `{name}` to compare with, so "
            "whether the definition itself changed cannot be told."
        )
        return out
    if new is None:
        where = "was removed" if change.new is None else f"no longer defines `{name}`"
        out["evidence"].insert(0, {"path": path, "line": 0, "what": "removed", "hunk": []})
        sketch = sketch_of(step)
        out["status"] = DEVIATED if sketch else DONE
        out["reason"] = f"`{path}` {where} (removed or renamed)" + (
            ", which its sketch does not say." if sketch else "."
        )
        return out
    if unchanged(old, new):
        out["status"] = PARTLY if others else NOT_DONE
        out["reason"] = f"`{name}` is as it was" + (
            ", though other files of the step changed." if others else "."
        )
        return out
    actual = hunk(old, new, name)
    out["evidence"].insert(
        0, {"path": path, "line": first_added_line(actual), "what": "changed",
            "hunk": _clipped(actual)},
    )  # fmt: skip
    sketch = sketch_of(step)
    if sketch is None:
        out["status"] = DONE
        out["reason"] = f"`{name}` changed; the step has no checked sketch to compare it with."
        return out
    out["sketch"] = sketch_lines(sketch)
    if sketch_present(sketch, old, new):
        out["status"] = DONE
        out["reason"] = f"`{name}` changed as the sketch says: its lines are there."
        return out
    out["status"] = DEVIATED
    out["reason"] = f"`{name}` changed, but not in the lines the sketch shows."
    if judge is not None:
        # The model reads what the report shows it read: a long rewrite's first lines, not
        # thousands (a prompt past the local model's window, minutes on two cores).
        read = _clipped(actual)
        verdict = judge(step, out["sketch"], read)
        out["judgement"] = _answer(verdict, read)
        control = verdict.undone
        if control is not None:
            out["judgement"]["undone"] = _answer(control, undone(read))
        if verdict.told_apart:
            out["status"], out["by"] = DONE, "model"
            out["reason"] = (
                f"`{name}` changed otherwise than the sketch; the model judged it equivalent, "
                "and this change undone not."
            )
        elif verdict.equivalent and (control is None or control.error):
            out["reason"] = (
                f"`{name}` changed otherwise than the sketch. The model judged it equivalent, "
                "but could not be asked about this change undone, so its yes does not count."
            )
        elif verdict.equivalent:
            out["reason"] = (
                f"`{name}` changed otherwise than the sketch. The model could not tell: it also "
                "called this change undone equivalent to the sketch."
            )
    return out


def _answer(verdict: Judgement, read: list[str]) -> dict[str, Any]:
    return {
        "equivalent": verdict.equivalent,
        "reason": verdict.reason,
        "error": verdict.error,
        "hunk": read,
    }


def _new_step(out: dict[str, Any], change: FileChange | None, path: str) -> dict[str, Any]:
    if change is None or change.new is None:
        out["reason"] = f"`{path}` " + ("was removed." if change else "did not change.")
        return out
    new_defs = {d.qualified_name: d for d in _definitions(path, change.new)}
    if change.old_known:
        old_names = {d.qualified_name for d in _definitions(path, change.old or "")}
        added = [d for n, d in new_defs.items() if n not in old_names]
        if added:
            out["status"] = DONE
            names = ", ".join(f"`{d.qualified_name}`" for d in added[:5])
            out["reason"] = f"`{path}` has new definitions: {names}."
            out["evidence"].insert(
                0, {"path": path, "line": added[0].start_line, "what": "added", "hunk": []}
            )
            return out
        out["status"] = PARTLY
        out["reason"] = f"`{path}` changed, but defines nothing new."
        return out
    out["status"] = DONE if change.kind == "added" else PARTLY
    out["reason"] = (
        f"`{path}` was added." if change.kind == "added"
        else f"`{path}` changed; its earlier text is gone, so which definitions are new cannot be told."
    )  # fmt: skip
    out["evidence"].insert(0, {"path": path, "line": 0, "what": change.kind, "hunk": []})
    return out


# ------------------------------------------------------------------ the whole report


_TEST = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/|(^|/)test_[^/]*\.py$|_test\.(py|go)$"
    r"|\.(test|spec)\.[jt]sx?$|Tests?\.java$|_spec\.rb$"
)


def is_test(path: str) -> bool:
    return bool(_TEST.search(path))


_PATHISH = re.compile(
    r"`([^`\s]{1,200})`|([\w.*-]{1,100}(?:/[\w.*-]{1,100}){0,20}/(?:[\w.*-]{1,100})?)"
)
_FORBIDS = re.compile(
    r"\b(never|do not|don't|must not|mustn't|may not|cannot|can't|forbidden|not allowed|"
    r"no one|nobody|avoid|only .* may)\b",
    re.IGNORECASE,
)


def _rule_patterns(text: str) -> list[str]:
    found = []
    for match in _PATHISH.finditer(text):
        token = (match.group(1) or match.group(2) or "").strip()
        if "/" in token or "*" in token or re.search(r"\.\w{1,5}$", token):
            found.append(token.lstrip("./"))
    return found


def _matches(pattern: str, path: str) -> bool:
    if "*" in pattern:
        return fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, f"*/{pattern}")
    if pattern.endswith("/"):
        return path.startswith(pattern) or f"/{pattern}" in f"/{path}"
    return path == pattern or path.endswith(f"/{pattern}") or path.startswith(f"{pattern}/")


def rule_findings(rules: list[dict[str, Any]], changed: list[str]) -> dict[str, Any]:
    """Critical rules that forbid touching a path a changed file matches (a rule in words with
    no path in it is listed as not checked: the app does not read prose)."""
    broken, unchecked = [], []
    for rule in rules:
        text = str(rule.get("text") or "")
        patterns = _rule_patterns(text) if _FORBIDS.search(text) else []
        if not patterns:
            unchecked.append({"label": rule.get("label", ""), "text": text[:300]})
            continue
        hit = sorted({p for p in changed for pat in patterns if _matches(pat, p)})
        if hit:
            broken.append({"label": rule.get("label", ""), "text": text[:300], "paths": hit})
    return {"broken": broken, "unchecked": unchecked, "checked": len(rules) - len(unchecked)}


def named_tests(structured: dict[str, Any], steps: list[dict[str, Any]]) -> list[str]:
    """The test files the plan names: in Testing, in Files, in a step."""
    found: dict[str, None] = {}
    for item in structured.get("testing") or []:
        for citation in find_citations(str(item)):
            key = _key(citation.path)
            if key and is_test(key):
                found.setdefault(key)
        for match in _PATHISH.finditer(str(item)):
            key = _key(match.group(1) or match.group(2) or "")
            if key and is_test(key):
                found.setdefault(key)
    for entry in structured.get("files") or []:
        key = _key(entry.get("path")) if isinstance(entry, dict) else None
        if key and is_test(key):
            found.setdefault(key)
    for step in steps:
        for key in step_paths(step):
            if is_test(key):
                found.setdefault(key)
    return list(found)


def planned_paths(structured: dict[str, Any]) -> set[str]:
    steps = [s for s in structured.get("steps") or [] if isinstance(s, dict)]
    found = {p for s in steps for p in step_paths(s)}
    for entry in structured.get("files") or []:
        key = _key(entry.get("path")) if isinstance(entry, dict) else None
        if key:
            found.add(key)
    return found | set(named_tests(structured, steps))


def with_shared_code(step: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A later step on a definition an earlier step shows keeps no code of its own, only
    `same_code_as` (that step's number, agents.planning.sketching): it is compared with the
    code that step kept, so a newer version (whose old text is gone) can still be judged."""
    shared = step.get("same_code_as")
    if step.get("code") or not isinstance(shared, int) or not 1 <= shared <= len(steps):
        return step
    code = steps[shared - 1].get("code")
    return {**step, "code": code} if isinstance(code, dict) else step


def verify(
    structured: dict[str, Any],
    changes: dict[str, FileChange],
    *,
    judge: Judge | None = None,
    rules: list[dict[str, Any]] | None = None,
    changed_elsewhere: Iterable[str] = (),
    on_step: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The report: a row per step, the unplanned files, the tests, the rules. `changed_elsewhere`
    are files known to have changed whose text is not in `changes` (a newer version's list)."""
    steps = [s for s in structured.get("steps") or [] if isinstance(s, dict)]
    rows = []
    for number, step in enumerate(steps, 1):
        if on_step is not None:  # before the step: a model call may take a minute
            on_step(number, len(steps))
        rows.append(verify_step(with_shared_code(step, steps), number, changes, judge))
    changed = sorted(set(changes) | set(changed_elsewhere))
    planned = planned_paths(structured)
    unplanned = [p for p in changed if p not in planned]
    tests = named_tests(structured, steps)
    kinds = {p: c.kind for p, c in changes.items()}
    return {
        "steps": rows,
        "counts": {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES},
        "changed_files": [{"path": p, "kind": kinds.get(p, "changed")} for p in changed][
            :MAX_LISTED
        ],
        "changed_count": len(changed),
        "unplanned": unplanned[:MAX_LISTED],
        "unplanned_count": len(unplanned),
        "tests": {
            "named": [
                {"path": t, "changed": t in changed, "kind": kinds.get(t, "")} for t in tests
            ],
            "other_changed": [p for p in changed if is_test(p) and p not in tests][:MAX_LISTED],
        },
        "rules": rule_findings(rules or [], changed),
    }


def moved(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[dict[str, Any]]:
    """Steps whose status differs from the previous check's: what a re-check moved."""
    if not previous:
        return []
    before = {r.get("number"): r.get("status") for r in previous.get("steps") or []}
    return [
        {"number": r["number"], "title": r["title"], "from": before[r["number"]], "to": r["status"]}
        for r in current.get("steps") or []
        if r["number"] in before and before[r["number"]] != r["status"]
    ]
