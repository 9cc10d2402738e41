"""Score a finished plan against the real fix of a swe-dev instance (issue 18), from the data a
session left, with today's code whatever code wrote the plan: so "before" (an older commit,
its own database) and "after" (the working tree) are judged by the same function.

Reads the session's SQLite database with plain SQL (an older schema has the same core tables)
and the pack's files with rag.api.read_pack (no database). Quality (invented paths and names,
steps on real definitions, sketches matched) is agents.plan_quality.judge, the function the
plan page's quality line comes from; the gold columns compare the plan with
../shared/bench/swe-dev/gold_spans.jsonl.
"""

from __future__ import annotations

import json
import re
import sqlite3
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLD_SPANS = ROOT.parent / "shared" / "bench" / "swe-dev" / "gold_spans.jsonl"
MIN_SHARED_CHARS = 10
"""A sketch line counts as the real fix's line only when it says something (`return`, `)`
and `else:` are in every hunk)."""


@lru_cache(maxsize=1)
def gold_spans() -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in GOLD_SPANS.read_text().splitlines() if line.strip()]
    return {row["instance_id"]: row for row in rows}


def fold(line: str) -> str:
    return " ".join(line.split())


def patch_lines(patch: str) -> dict[str, set[str]]:
    """For each file of a unified diff, its lines (removed, context and added), folded: what a
    sketch's "before" lines can share with the real fix, leaving out the trivial ones.

    Added lines count too because swe-dev packs a release, not the base commit: in 33 of its 42
    instances the release already holds the fix (../shared/bench/swe-dev/README.md, Caveats),
    so a sketch on the code the fix changed quotes the fixed lines there, not the removed ones
    (`fix_in_pack` says which instances)."""
    out: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current = out.setdefault(line.split(" b/", 1)[-1].strip(), set())
        elif line.startswith(("---", "+++", "@@")) or current is None:
            continue
        elif line.startswith(("-", " ", "+")):
            text = fold(line[1:])
            if len(text) >= MIN_SHARED_CHARS:
                current.add(text)
    return out


def fix_in_pack(patch: str, files: dict[str, str]) -> tuple[int, int]:
    """(the real fix's added lines found in the packed files, its added lines), trivial ones
    left out: all found means the pack already holds the fix, and the task asks for a change
    the code has."""
    added: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current = added.setdefault(line.split(" b/", 1)[-1].strip(), set())
        elif line.startswith("+") and not line.startswith("+++") and current is not None:
            text = fold(line[1:])
            if len(text) >= MIN_SHARED_CHARS:
                current.add(text)
    found = total = 0
    for path, lines in added.items():
        there = {fold(x) for x in files.get(path, "").splitlines()}
        found, total = found + len(lines & there), total + len(lines)
    return found, total


def targets_gold(target: dict[str, Any], spans: dict[str, list[str]]) -> bool:
    """A step's target is a definition the real fix changed: same file, and the same name, or
    the same last part (`visit_assignname` for `Linker.visit_assignname`)."""
    if target.get("kind") != "definition":
        return False
    names = spans.get(str(target.get("path")), [])
    name = str(target.get("name") or "")
    return any(name == g or name.split(".")[-1] == g.split(".")[-1] for g in names)


@lru_cache(maxsize=4)
def pack_files(pack: str) -> dict[str, str]:
    from rag.api import read_pack  # noqa: PLC0415

    return {f.path: f.content for f in read_pack(Path(pack)) if isinstance(f.content, str)}


class PackText:
    """`written(name)`: whether some file of the pack has `name` as a whole word."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def __call__(self, name: str) -> bool:
        word = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
        return any(name in text and word.search(text) for text in self.files.values())


def session_data(database: Path, session_id: int) -> dict[str, Any]:
    """The task, codebase id, latest plan's structured data and the Decisions rows' objections
    of a session, read with plain SQL."""
    db = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        task, codebase = db.execute(
            "SELECT task, codebase_id FROM conversations_planningsession WHERE id = ?",
            (session_id,),
        ).fetchone()
        row = db.execute(
            "SELECT structured FROM conversations_plan WHERE session_id = ? "
            "ORDER BY version DESC LIMIT 1",
            (session_id,),
        ).fetchone()
    finally:
        db.close()
    plan = json.loads(row[0]) if row and row[0] else None
    return {"task": task, "codebase": codebase, "plan": plan}


_OFFERED = re.compile(
    r"The definitions (?:in the code shown|a step may change, likeliest first), by file and line: "
    r"(.*?)(?: \(and \d+ more\))?\.(?:\s|$)"
)
_LISTED = re.compile(r"([^\s:;,][^:;]*?): ((?:`[^`]+` \d+(?:, )?)+)")


def offered(database: Path, session_id: int) -> set[tuple[str, str]]:
    """The definitions (path, name) the session's prompts listed for a step to change: the
    ceiling of "gold definition targeted" (a step's choice is held to them)."""
    db = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        prompts = db.execute(
            "SELECT prompt FROM agents_llmcall WHERE session_id = ?", (session_id,)
        ).fetchall()
    except sqlite3.OperationalError:
        return set()
    finally:
        db.close()
    found: set[tuple[str, str]] = set()
    for (prompt,) in prompts:
        messages = json.loads(prompt) if prompt else []
        for message in messages if isinstance(messages, list) else []:
            content = message.get("content") if isinstance(message, dict) else ""
            for listing in _OFFERED.findall(content if isinstance(content, str) else ""):
                for path, names in _LISTED.findall(listing):
                    found |= {(path.strip(), n) for n in re.findall(r"`([^`]+)`", names)}
    return found


def score(
    instance_id: str, database: Path, index_root: Path, session_id: int, pack: Path
) -> dict[str, Any]:
    """The issue-18 columns of one session."""
    from agents.plan_quality import judge  # noqa: PLC0415
    from rag.navigation import Navigator  # noqa: PLC0415
    from rag.paths import FileSet  # noqa: PLC0415

    gold = gold_spans()[instance_id]
    spans: dict[str, list[str]] = gold["gold_spans"]
    found = session_data(database, session_id)
    plan = found["plan"]
    if plan is None:
        return {"scored": False}
    files = pack_files(str(pack))
    folder = index_root / str(found["codebase"])
    quality = judge(
        plan,
        FileSet(files),
        task=found["task"],
        index_folder=folder,
        written=PackText(files),
        related=Navigator(folder).related,
    )
    steps = [s for s in plan.get("steps") or [] if isinstance(s, dict)]
    fix = patch_lines(gold["gold_patch"])
    overlap = 0
    for step in steps:
        sketch = step.get("sketch") if isinstance(step.get("sketch"), dict) else {}
        target = step.get("target") if isinstance(step.get("target"), dict) else {}
        before = {fold(str(b)) for b in sketch.get("before") or []}
        overlap += bool(before & fix.get(str(target.get("path")), set()))
    targeted = sum(
        targets_gold(s["target"], spans) for s in steps if isinstance(s.get("target"), dict)
    )
    in_pack, added = fix_in_pack(gold["gold_patch"], files)
    return {
        "scored": True,
        "fix_in_pack": f"{in_pack}/{added}",
        "gold_def": targeted > 0,
        "gold_def_offered": any(
            targets_gold({"kind": "definition", "path": path, "name": name}, spans)
            for path, name in offered(database, session_id)
        ),
        "gold_def_steps": targeted,
        "sketch_overlap": overlap > 0,
        "on_definitions": quality.on_definitions,
        "sketches": quality.sketches,
        "sketches_checked": quality.sketches_checked,
        "invented_paths_all": len(quality.invented_paths),
        "invented_names": len(quality.invented_names),
        "invented_name_list": quality.invented_names[:8],
        "non_objections": non_objections(plan),
        "quality_line": quality.line(),
    }


def non_objections(plan: dict[str, Any]) -> int:
    """Decisions rows holding an objection that is not one (an apology, a refusal, a question
    back, a restatement), by agents.objections, the check the app itself applies."""
    from agents.objections import NO_OBJECTION, is_objection  # noqa: PLC0415

    rows = [r for r in plan.get("decision_log") or [] if isinstance(r, dict)]
    said = [str(r.get("objection") or "") for r in rows]
    # The app's own row for a review that objected to nothing says so; it is not an objection.
    markers = ("—", "none raised", NO_OBJECTION)
    return sum(1 for text in said if text and text not in markers and not is_objection(text))
