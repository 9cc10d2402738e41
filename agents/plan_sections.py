"""A plan's sections: each (Summary, Decisions, each Step, Files, Testing, Risks, Effort) is a
field of the plan's `structured` data, the one source of truth: the markdown is rendered from
it (agents.plan.build_version), so an edit changes the field and every version's path checks
and citations are judged again by the same function finalize uses. A human edits a section as
short plain text, one item a line (see `section_text`), which `apply_text` reads back; Agent A
regenerates one as structured output (agents.plan_writer), put back by `replace_section`.

Only the latest version gets a successor: a new version is the latest + 1, and the unique
(session, version) constraint makes two edits racing on the same version a clean error for the
second one instead of a silent loss."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError

from agents.plan import append_version, build_version
from conversations.models import Plan
from planagents.streaming import publish

LIST_SECTIONS = {"decisions": "Decisions", "testing": "Testing", "risks": "Risks"}
SIZES = ("S", "M", "L", "XL")
ACTIONS = ("modify", "create", "delete")
MAX_EDIT_CHARS = 20_000
MAX_INSTRUCTION_CHARS = 500
REGENERATE_PREFIX = "Regenerate "
"""How a regeneration request starts in the transcript (agents.decision_log leaves it out)."""


class SectionError(Exception):
    """The section cannot be changed as asked; the message says why."""


@dataclass(frozen=True)
class SectionInfo:
    key: str
    """summary, decisions, step-1…, files, testing, risks, effort."""
    label: str
    """As the page names it: Summary, Step 2, …"""
    heading: str
    """The `## ` heading the section sits under in the markdown."""


def sections_of(data: dict[str, Any]) -> list[SectionInfo]:
    """Every section a plan has, in document order (a section with nothing in it is offered
    too, so a human can fill it)."""
    found = [SectionInfo("summary", "Summary", "Summary")]
    found.append(SectionInfo("decisions", "Decisions", "Decisions"))
    steps = [s for s in data.get("steps") or [] if isinstance(s, dict)]
    found += [SectionInfo(f"step-{n}", f"Step {n}", "Steps") for n in range(1, len(steps) + 1)]
    found += [
        SectionInfo("files", "Files", "Files"),
        SectionInfo("testing", "Testing", "Testing"),
        SectionInfo("risks", "Risks", "Risks"),
        SectionInfo("effort", "Effort", "Effort"),
    ]
    return found


def section_info(data: dict[str, Any], key: str) -> SectionInfo:
    for info in sections_of(data):
        if info.key == key:
            return info
    raise SectionError("This plan has no such section.")


def _step_index(data: dict[str, Any], key: str) -> int:
    section_info(data, key)  # raises for a step that is not there
    return int(key.removeprefix("step-")) - 1


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def section_text(data: dict[str, Any], key: str) -> str:
    """The section as a human edits it: plain text, one item a line."""
    if key == "summary":
        return str(data.get("summary") or "")
    if key in LIST_SECTIONS:
        return "\n".join(f"- {item}" for item in _strings(data.get(key)))
    if key.startswith("step-"):
        step = data["steps"][_step_index(data, key)]
        files = _strings(step.get("files"))
        lines = [str(step.get("title") or ""), "", str(step.get("detail") or "")]
        if files:
            lines += ["", "Files: " + ", ".join(files)]
        return "\n".join(lines)
    if key == "files":
        rows = [f for f in data.get("files") or [] if isinstance(f, dict)]
        return "\n".join(
            f"{f.get('path', '')} | {f.get('action') or 'modify'} | {f.get('reason') or ''}"
            for f in rows
        )
    if key == "effort":
        effort = data.get("effort")
        effort = effort if isinstance(effort, dict) else {}
        size, estimate = effort.get("size") or "", effort.get("estimate") or ""
        return f"{size} — {estimate}" if estimate else str(size)
    raise SectionError("This plan has no such section.")


def _lines(text: str) -> list[str]:
    """Non-empty lines, a leading list marker ("- ", "* ", "1. ") taken off."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        for marker in ("- ", "* ", "+ "):
            if line.startswith(marker):
                line = line[len(marker) :].strip()
                break
        else:
            head, dot, rest = line.partition(". ")
            if dot and head.isdigit():
                line = rest.strip()
        if line:
            out.append(line)
    return out


def apply_text(data: dict[str, Any], key: str, text: str, *, by: str = "human") -> dict[str, Any]:
    """`data` with section `key` read back from its edited text (the format of section_text)."""
    if len(text) > MAX_EDIT_CHARS:
        raise SectionError(f"That section is too long (at most {MAX_EDIT_CHARS} characters).")
    out = copy.deepcopy(data)
    if key == "summary":
        out["summary"] = " ".join(text.split())
    elif key == "decisions":
        old = _strings(data.get("decisions"))
        authors = data.get("decision_authors")
        authors = dict(authors) if isinstance(authors, dict) else {}
        new = _lines(text)
        # A decision left as it was keeps its author; a new or reworded one is the editor's.
        out["decision_authors"] = {d: (authors.get(d) if d in old else by) for d in new}
        out["decision_authors"] = {d: a for d, a in out["decision_authors"].items() if a}
        out["decisions"] = new
    elif key in LIST_SECTIONS:
        out[key] = _lines(text)
    elif key.startswith("step-"):
        index = _step_index(data, key)
        lines = text.strip().splitlines()
        title = lines[0].strip() if lines else ""
        files: list[str] = []
        detail: list[str] = []
        for line in lines[1:]:
            if line.strip().lower().startswith("files:"):
                files += [f.strip() for f in line.split(":", 1)[1].split(",") if f.strip()]
            else:
                detail.append(line.strip())
        if not title:
            raise SectionError("A step needs a title on its first line.")
        out["steps"][index] = {
            **data["steps"][index],
            "title": title,
            "detail": " ".join(" ".join(detail).split()),
            "files": files,
        }
    elif key == "files":
        out["files"] = [_file_row(line) for line in _lines(text)]
    elif key == "effort":
        size, _, estimate = text.strip().replace(" - ", " — ", 1).partition("—")
        size = size.strip().upper()
        if size and size not in SIZES:
            raise SectionError("Effort starts with a size: S, M, L or XL (then — and an estimate).")
        out["effort"] = {"size": size, "estimate": " ".join(estimate.split())}
    else:
        raise SectionError("This plan has no such section.")
    return out


def _file_row(line: str) -> dict[str, str]:
    path, _, rest = (part.strip() for part in line.partition("|"))
    action, _, reason = (part.strip() for part in rest.partition("|"))
    if action not in ACTIONS:
        # "path | reason": the action was left out.
        action, reason = "modify", " | ".join(p for p in (action, reason) if p)
    if not path:
        raise SectionError("Each line of Files starts with a path: path | action | reason.")
    return {"path": path, "action": action, "reason": reason}


def replace_section(data: dict[str, Any], key: str, value: Any, *, by: str) -> dict[str, Any]:
    """`data` with section `key` replaced by a regenerated value (the section's own shape)."""
    out = copy.deepcopy(data)
    if key.startswith("step-"):
        index = _step_index(data, key)
        # A step regenerated as several ("split step 3") takes its place in the order.
        out["steps"][index : index + 1] = value if isinstance(value, list) else [value]
    elif key == "decisions":
        out["decisions"] = value
        old = _strings(data.get("decisions"))
        authors = data.get("decision_authors")
        authors = dict(authors) if isinstance(authors, dict) else {}
        out["decision_authors"] = {d: (authors.get(d) if d in old else by) for d in value}
        out["decision_authors"] = {d: a for d, a in out["decision_authors"].items() if a}
    else:
        section_info(data, key)
        out[key] = value
    return out


def plain(data: dict[str, Any]) -> dict[str, Any]:
    """The plan's data without what a version derives from it (statuses, citations)."""
    out = {k: v for k, v in data.items() if k not in ("citations", "quality")}
    out["files"] = [
        {k: v for k, v in f.items() if k not in ("status",)}
        for f in out.get("files") or []
        if isinstance(f, dict)
    ]
    return out


def save_version(
    base: Plan, data: dict[str, Any], *, kind: str, author: Any = None, note: str = ""
) -> Plan:
    """A new version after `base`, which must be the latest, built from `data`. Approvals of
    sections whose text did not change carry over."""
    session = base.session
    markdown, structured = build_version(
        plain(data), session.codebase, title=session.title, task=session.task
    )
    approved = [
        key
        for key in base.approved_sections or []
        if _same_section(base.structured, structured, key)
    ]
    try:
        plan = append_version(
            session,
            markdown,
            structured,
            note=note,
            kind=kind,
            author=author,
            after=base.version,
            approved=approved,
        )
    except IntegrityError:
        raise SectionError(
            f"Version {base.version + 1} was written meanwhile; reload and edit the latest version."
        ) from None
    publish(session.pk, {"type": "plan.updated", "version": plan.version})
    return plan


def _same_section(old: dict[str, Any], new: dict[str, Any], key: str) -> bool:
    try:
        return section_text(old, key) == section_text(new, key)
    except (SectionError, IndexError, KeyError):
        return False
