"""Render proposals and plans as markdown, marking every file path against the codebase.

Renderers take plain dicts (possibly partial, while the model is still writing the JSON) so the
same function serves the live stream and the final document."""

from __future__ import annotations

import re
from typing import Any

from rag.models import Codebase, CodeFile

_LINE_SUFFIX = re.compile(r":\d+(?:-\d+)?$")


def codebase_paths(codebase: Codebase) -> set[str]:
    return set(CodeFile.objects.filter(codebase=codebase).values_list("path", flat=True))


def normalize_path(path: str) -> str:
    """A path as the codebase spells it: no quotes, ./ or leading /, and no :line suffix."""
    path = (path or "").strip().strip("`'\"").replace("\\", "/")
    path = _LINE_SUFFIX.sub("", path)
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def file_status(path: str, action: str, paths: set[str]) -> str:
    """exists / new / missing: what a plan's file entry amounts to in this codebase."""
    exists = normalize_path(path) in paths
    if action == "create":
        return "exists" if exists else "new"
    return "exists" if exists else "missing"


_STATUS_LABEL = {"exists": "exists", "new": "new file", "missing": "**NOT IN THE CODEBASE**"}


def _items(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def unique_files(files: list[Any]) -> list[dict[str, Any]]:
    """File entries with a path, one per normalised path (models like to repeat themselves)."""
    seen: set[str] = set()
    unique: list[dict[str, Any]] = []
    for entry in files:
        if not isinstance(entry, dict) or not _text(entry.get("path")):
            continue
        path = normalize_path(entry["path"])
        if path in seen:
            continue
        seen.add(path)
        unique.append({**entry, "path": path})
    return unique


def _files_table(files: list[Any], paths: set[str], *, complete: bool) -> list[str]:
    # No trailing pipes (GFM does not need them), so a row only ever grows at its end while
    # the model is still writing its reason: the live stream can append instead of redraw.
    rows = ["| File | Change | Status | Why", "|---|---|---|---"]
    for entry in unique_files(files):
        if not complete and "reason" not in entry:
            continue  # the path or action may still be growing
        path = normalize_path(entry["path"])
        action = _text(entry.get("action")) or "modify"
        status = _STATUS_LABEL[file_status(path, action, paths)]
        reason = _text(entry.get("reason")).replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `{path}` | {action} | {status} | {reason}")
    return rows if len(rows) > 2 else []


def _steps(steps: list[Any], *, complete: bool) -> list[str]:
    lines: list[str] = []
    for number, step in enumerate(steps, 1):
        if not isinstance(step, dict) or (not complete and "detail" not in step):
            continue  # wait until the title is whole
        title = _text(step.get("title")) or f"Step {number}"
        detail = _text(step.get("detail"))
        lines.append(f"{number}. **{title}**" + (f" — {detail}" if detail else ""))
        last = number == len(steps)
        files = [normalize_path(f) for f in _items(step, "files") if _looks_like_path(f)]
        if files and (complete or not last):
            lines.append("   Files: " + ", ".join(f"`{f}`" for f in files))
    return lines


def _looks_like_path(value: Any) -> bool:
    # Small models sometimes write the word "path" where a path belongs.
    return isinstance(value, str) and ("/" in value or "." in value) and " " not in value.strip()


def _bullets(data: dict[str, Any], key: str, heading: str) -> list[str]:
    # dict.fromkeys: drop the exact repeats small models produce, keep the order.
    items = [f"- {item}" for item in dict.fromkeys(_text(i) for i in _items(data, key)) if item]
    return [f"## {heading}", "", *items, ""] if items else []


def render_proposal(data: dict[str, Any], paths: set[str], *, complete: bool = True) -> str:
    """Sections in the order the JSON is written, so the live rendering only grows."""
    out: list[str] = []
    if _text(data.get("summary")):
        out += ["**Proposal.** " + _text(data["summary"]), ""]
    steps = _steps(_items(data, "steps"), complete=complete or "files" in data)
    if steps:
        out += ["**Steps**", "", *steps, ""]
    table = _files_table(_items(data, "files"), paths, complete=complete)
    if table:
        out += ["**Files**", "", *table]
    return "\n".join(out).strip()


def render_plan(
    data: dict[str, Any], paths: set[str], *, title: str = "", complete: bool = True
) -> str:
    """The plan document; sections in the order the JSON is written (see render_proposal)."""
    out: list[str] = [f"# Plan: {title}" if title else "# Plan", ""]
    if _text(data.get("summary")):
        out += ["## Summary", "", _text(data["summary"]), ""]
    out += _bullets(data, "decisions", "Decisions")
    steps = _steps(_items(data, "steps"), complete=complete or "files" in data)
    if steps:
        out += ["## Steps", "", *steps, ""]
    table = _files_table(_items(data, "files"), paths, complete=complete or "testing" in data)
    if table:
        out += ["## Files", "", *table, ""]
    out += _bullets(data, "testing", "Testing")
    out += _bullets(data, "risks", "Risks")
    effort = data.get("effort") if isinstance(data.get("effort"), dict) else {}
    if effort and _text(effort.get("size")):
        estimate = _text(effort.get("estimate"))
        out += [
            "## Effort",
            "",
            f"**{_text(effort['size'])}**" + (f" — {estimate}" if estimate else ""),
            "",
        ]
    text = "\n".join(out).strip()
    return text + "\n" if complete else text  # no trailing newline while growing


def annotate_files(data: dict[str, Any], paths: set[str]) -> dict[str, Any]:
    """The plan's data with each file entry's path normalised and its status recorded."""
    files = [
        {
            **entry,
            "status": file_status(entry["path"], _text(entry.get("action")) or "modify", paths),
        }
        for entry in unique_files(_items(data, "files"))
    ]
    return {**data, "files": files}
