"""One plan version in the spec-driven layouts people keep in their repositories: GitHub Spec
Kit (`specs/NNN-<slug>/spec.md`, `plan.md`, `tasks.md`), Kiro (`.kiro/specs/<slug>/
requirements.md`, `design.md`, `tasks.md`) and an AGENTS.md section for coding agents.

Each is a set of files (`Layout.files`), served as a zip of that directory layout or as one
markdown document with the files one after another. They are built from the same data as the
other exports (`exports.plan_data`: paths and citations re-checked against the codebase, every
model-written string inert markdown) plus what those leave out: each step's target definition,
its change sketch, and the plan's quality line (agents.plan_quality). The AGENTS.md section is
the hand-off prompt (`exports.handoff_prompt`) one heading level down, with the code to change.

A plan is model output, so hostile: no text of it names a file of the zip (the folder is a
slug of ASCII letters, digits and hyphens; every entry name is checked to stay inside it), and
code goes in fences no line of it can close."""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from agents.plan import check_file, code_span, codebase_paths
from agents.plan_quality import Quality, as_dict
from agents.sketches import diff_lines
from conversations.exports import (
    _STATUS_WORDS,
    _citation,
    _text,
    guidance,
    handoff_prompt,
    plan_data,
    safe_markdown,
)
from conversations.models import Plan
from rag import index as rag_index
from rag import profile as rag_profile

SLUG_WORDS = 5
SLUG_CHARS = 48


class UnsafeEntry(ValueError):
    """A zip entry name that could land outside the export's folder."""


# ------------------------------------------------------------------ the data


def slug(text: str) -> str:
    """A short kebab-case name for the feature folder (Spec Kit's and Kiro's convention): the
    first few ASCII words of `text`, accents dropped (`sửa lỗi đăng nhập` → `sua-loi-dang-nhap`);
    nothing else of the text survives, so no name can climb out of its folder."""
    plain = unicodedata.normalize("NFKD", text.replace("đ", "d").replace("Đ", "D"))
    words = re.findall(r"[a-z0-9]+", plain.encode("ascii", "ignore").decode().lower())
    name = "-".join(words[:SLUG_WORDS])[:SLUG_CHARS].strip("-")
    return name or "plan"


def _one_line(value: Any) -> str:
    """Text that goes inside a code span: one line, as written (a code span is inert)."""
    return " ".join(value.split()) if isinstance(value, str) else ""


def quality_line(structured: dict[str, Any]) -> str:
    """The plan's quality line as the plan page shows it, inert; "" when the version has none
    (or a hand-edited one that no longer reads as a quality record)."""
    quality = structured.get("quality")
    if not isinstance(quality, dict):
        return ""
    try:
        line = Quality.from_dict(quality).line()
    except (TypeError, ValueError, AttributeError):
        return ""
    return safe_markdown(" ".join(line.split()))


def _target(step: dict[str, Any], paths: Any) -> dict[str, Any] | None:
    """The definition a step changes (`name` at `path:start-end`) or the file a new one goes
    in, its path re-checked; None when the step has neither."""
    target = as_dict(step.get("target"))
    path = _one_line(target.get("path"))
    if not path or target.get("kind") not in ("definition", "new"):
        return None
    checked = check_file(path, "create" if target["kind"] == "new" else "modify", paths)
    found = {"kind": target["kind"], "path": checked.path, "status": checked.status}
    if target["kind"] == "definition":
        start, end = target.get("start"), target.get("end")
        lines = (start, end) if isinstance(start, int) and isinstance(end, int) else None
        found |= {"name": _one_line(target.get("name")), "lines": lines}
    return found


def _sketch(step: dict[str, Any]) -> dict[str, Any] | None:
    sketch = step.get("sketch")
    if not isinstance(sketch, dict):
        return None
    lines = [part for line in diff_lines(sketch) for part in str(line).splitlines() or [""]]
    if not lines:
        return None
    return {
        "lines": lines,
        "hunk": bool(sketch.get("hunk")),
        "checked": sketch.get("checked") is True,
        "problem": _text(sketch.get("problem")),
    }


def _context(codebase_id: int) -> dict[str, str]:
    """What the codebase profile (computed at indexing) says of the stack and the tests."""
    found = rag_profile.load(rag_index.index_dir(codebase_id))
    if found is None:
        return {}
    languages = [
        rag_profile.display_language(str(lang.get("name", "")))
        for lang in found.languages[:3]
        if isinstance(lang, dict)
    ]
    return {
        "languages": ", ".join(_one_line(name) for name in languages if name),
        "stack": ", ".join(_one_line(name) for name in found.stack[:8] if isinstance(name, str)),
        "test_command": _one_line(found.test_command),
    }


def spec_data(plan: Plan) -> dict[str, Any]:
    """`exports.plan_data` with what the spec layouts carry besides: each step's target and
    sketch, the quality line and the tests it found, the codebase's rules, the stack and
    test command, and the names the layouts give the feature."""
    data = plan_data(plan)
    structured = plan.structured if isinstance(plan.structured, dict) else {}
    paths = codebase_paths(plan.session.codebase)
    raw = [s for s in structured.get("steps") or [] if isinstance(s, dict)]
    for step, source in zip(data["steps"], raw, strict=False):
        step["target"] = _target(source, paths)
        step["sketch"] = _sketch(source)
    quality = as_dict(structured.get("quality"))
    tests = []
    for entry in quality.get("tests") or []:
        if isinstance(entry, list | tuple) and len(entry) == 2:
            checked = check_file(_one_line(entry[0]), "modify", paths)
            if checked.status == "exists":
                tests.append({"path": checked.path, "why": _text(entry[1])})
    name = slug(plan.session.title or plan.session.task)
    guide = guidance(plan)
    return {
        **data,
        "guide": guide,
        "quality": quality_line(structured),
        "tests": tests,
        "rules": guide["rules"],
        "context": _context(plan.session.codebase_id),
        "slug": name,
        "feature": f"{plan.session.pk:03d}-{name}",
        "created": plan.created_at.date().isoformat(),
    }


# ------------------------------------------------------------------ shared pieces


def fence(lines: list[str], info: str = "") -> list[str]:
    """A fenced block around `lines` that none of them can close (a closing fence may be
    indented, so every backtick run counts, not only a leading one)."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    mark = "`" * max(3, longest + 1)
    return [f"{mark}{info}", *lines, mark]


def _title(data: dict[str, Any]) -> str:
    return _text(data["plan"]["title"]) or _text(data["plan"]["task"]) or "Plan"


def _change(target: dict[str, Any]) -> str:
    """ "changes `name` at `path:12-30`", or "adds a new definition to `path`"."""
    if target["kind"] == "new":
        return f"adds a new definition to {code_span(target['path'])}"
    lines = target["lines"]
    at = f"{target['path']}:{lines[0]}-{lines[1]}" if lines else target["path"]
    name = code_span(target["name"]) + " at " if target["name"] else ""
    missing = "" if target["status"] == "exists" else " (not in the codebase)"
    return f"changes {name}{code_span(at)}{missing}"


def _clause(item: str) -> str:
    """A sentence as a clause to follow other words: no full stop, a capital lowered unless
    the word is all capitals (an acronym) or code."""
    item = item.rstrip(".")
    first = item.split(" ", 1)[0]
    lowered = first[:1].isupper() and first != "I" and (first[1:].islower() or len(first) == 1)
    return item[0].lower() + item[1:] if lowered else item


def _sketch_lines(step: dict[str, Any]) -> list[str]:
    """The step's change sketch as a diff; a checked hunk gets the file header `git apply`
    reads."""
    sketch, target = step.get("sketch"), step.get("target")
    if not sketch:
        return []
    lines = sketch["lines"]
    if sketch["hunk"] and target and target["status"] == "exists":
        lines = [f"--- a/{target['path']}", f"+++ b/{target['path']}", *lines]
    verdict = (
        "its lines match the code"
        if sketch["checked"]
        else "**fails the check**" + (f": {sketch['problem']}" if sketch["problem"] else "")
    )
    return [f"Change sketch ({verdict}):", "", *fence(lines, "diff"), ""]


def _step_files(step: dict[str, Any]) -> str:
    known = [f["path"] for f in step["files"] if f["status"] in ("exists", "new")]
    return ", ".join(code_span(p) for p in known)


def _unsure(step: dict[str, Any]) -> str:
    gone = [f["path"] for f in step["files"] if f["status"] not in ("exists", "new")]
    if not gone:
        return ""
    return (
        " The plan also names "
        + ", ".join(code_span(p) for p in gone)
        + (", not in the codebase: find the right file before acting.")
    )


def _quality(data: dict[str, Any]) -> list[str]:
    return [f"> **Checked by PlanAgents.** {data['quality']}", ""] if data["quality"] else []


def _line_note(data: dict[str, Any]) -> list[str]:
    note = data["plan"]["line_note"]
    return [f"> **Line numbers.** {note}", ""] if note else []


def _files_table(data: dict[str, Any]) -> list[str]:
    if not data["files"]:
        return []
    rows = ["| File | Change | Status | Why", "|---|---|---|---"]
    for f in data["files"]:
        cells = [code_span(f["path"]), f["action"], _STATUS_WORDS[f["status"]], f["reason"]]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells))
    return [*rows, ""]


def _bullets(heading: str, items: list[str], empty: str = "") -> list[str]:
    if not items and not empty:
        return []
    return [heading, "", *(f"- {i}" for i in items or [empty]), ""]


def _citations(heading: str, data: dict[str, Any]) -> list[str]:
    return _bullets(heading, [_citation(c) for c in data["citations"]])


def _steps_detail(data: dict[str, Any], level: str) -> list[str]:
    """Each step with its target, files and sketch, under `level` headings."""
    out: list[str] = []
    for step in data["steps"]:
        out += [f"{level} Step {step['number']}: {step['title']}", ""]
        if step["detail"]:
            out += [step["detail"], ""]
        if step["target"]:
            out += [f"This step {_change(step['target'])}.", ""]
        files = _step_files(step)
        if files:
            out += [f"Files: {files}.{_unsure(step)}", ""]
        elif _unsure(step):
            out += [_unsure(step).strip(), ""]
        out += _sketch_lines(step)
    return out


_CONDITION = re.compile(r"^(when|whenever|once|after|if|while)\s+([^,]{3,200}),\s*(.{3,})$", re.I)
_CHECK = re.compile(
    r"^(?:(?:add|write)\s+(?:a\s+|an\s+)?(?:unit\s+|integration\s+)?tests?\s+(?:that|for)|"
    r"test\s+that|tests?\s+for|verify(?:\s+that)?|check(?:\s+that)?|ensure(?:\s+that)?|"
    r"assert(?:\s+that)?)\s+(.{3,})$",
    re.I,
)


def _condition(item: str) -> tuple[str, str, str] | None:
    """("WHEN" | "IF" | "WHILE", trigger, outcome) when a Testing item is written as a
    condition and its outcome ("When the sixth attempt comes, it is refused")."""
    found = _CONDITION.match(item.rstrip("."))
    if not found:
        return None
    word = found[1].lower()
    keyword = "IF" if word == "if" else "WHILE" if word == "while" else "WHEN"
    return keyword, found[2].strip(), found[3].strip()


def ears(item: str) -> str:
    """A Testing item as an EARS acceptance criterion (Kiro: "WHEN … THE SYSTEM SHALL …").
    A condition and its outcome become the trigger and the response; a test to write
    becomes what the system shall ensure when tested; anything else is quoted whole."""
    found = _condition(item)
    if found:
        keyword, trigger, outcome = found
        then = " THEN" if keyword == "IF" else ""
        return f"{keyword} {trigger}{then} THE SYSTEM SHALL ensure that {_clause(outcome)}"
    check = _CHECK.match(item.rstrip("."))
    if check:
        return f"WHEN the change is tested THE SYSTEM SHALL ensure that {_clause(check[1])}"
    return f"WHEN the change is tested THE SYSTEM SHALL ensure that {_clause(item)}"


def _scenario(item: str) -> str:
    """A Testing item as a Spec Kit acceptance scenario (Given / When / Then)."""
    found = _condition(item)
    if found:
        _, trigger, outcome = found
        return f"**Given** the change is in place, **When** {trigger}, **Then** {_clause(outcome)}"
    check = _CHECK.match(item.rstrip("."))
    outcome = check[1] if check else item
    return f"**Given** the change is in place, **When** its tests run, **Then** {_clause(outcome)}"


# ------------------------------------------------------------------ GitHub Spec Kit


def speckit_files(data: dict[str, Any]) -> list[tuple[str, str]]:
    """`specs/NNN-<slug>/spec.md`, `plan.md` and `tasks.md` after Spec Kit's templates (v1.0.1)
    and `.specify/feature.json`, which points Spec Kit's commands at that folder."""
    folder = f"specs/{data['feature']}"
    return [
        (f"{folder}/spec.md", _speckit_spec(data)),
        (f"{folder}/plan.md", _speckit_plan(data)),
        (f"{folder}/tasks.md", _speckit_tasks(data)),
        (".specify/feature.json", f'{{"feature_directory": "{folder}"}}\n'),
    ]


def _speckit_spec(data: dict[str, Any]) -> str:
    meta, title = data["plan"], _title(data)
    task = _text(meta["task"])
    out = [f"# Feature Specification: {title}", ""]
    out += [f"**Feature Branch**: `{data['feature']}`", "", f"**Created**: {data['created']}", ""]
    out += ["**Status**: Draft", "", f'**Input**: User description: "{task}"', ""]
    out += _quality(data)
    out += ["## User Scenarios & Testing *(mandatory)*", ""]
    out += [f"### User Story 1 - {title} (Priority: P1)", "", data["summary"] or task, ""]
    out += [
        "**Why this priority**: It is the change that was asked for; the plan has no other.",
        "",
    ]
    command = data["context"].get("test_command")
    run = f"Run {code_span(command)}" if command else "Run the project's tests"
    tests = ", ".join(code_span(t["path"]) for t in data["tests"])
    covered = f" ({tests} cover the changed files)" if tests else ""
    out += [f"**Independent Test**: {run}{covered}; the scenarios below hold.", ""]
    if data["testing"]:
        out += ["**Acceptance Scenarios**:", ""]
        out += [f"{n}. {_scenario(item)}" for n, item in enumerate(data["testing"], 1)]
        out.append("")
    out += _bullets("### Edge Cases", data["risks"])
    out += ["## Requirements *(mandatory)*", "", "### Functional Requirements", ""]
    out += [f"- **FR-001**: System MUST do what was asked: {task}"]
    for n, decision in enumerate(data["decisions"], 2):
        out.append(f"- **FR-{n:03d}**: System MUST keep to this decision: {decision}")
    out += ["", "## Success Criteria *(mandatory)*", "", "### Measurable Outcomes", ""]
    out += [
        "- **SC-001**: Every acceptance scenario above holds, each checked by a test.",
        "- **SC-002**: The existing test suite still passes.",
        "",
        "## Assumptions",
        "",
        f"- The plan was written for codebase {code_span(meta['codebase'])} as uploaded to "
        f"PlanAgents (plan v{meta['version']}); its paths and `path:line` citations were "
        "checked against that upload.",
    ]
    if meta["line_note"]:
        out.append(f"- Line numbers: {meta['line_note']}")
    return "\n".join(out) + "\n"


def _speckit_plan(data: dict[str, Any]) -> str:
    meta, title, folder = data["plan"], _title(data), f"specs/{data['feature']}"
    context = data["context"]
    out = [f"# Implementation Plan: {title}", ""]
    out += [f"**Branch**: `{data['feature']}` | **Date**: {data['created']} | **Spec**: `spec.md`"]
    out += ["", f"**Input**: Feature specification from `/{folder}/spec.md`", ""]
    out += _quality(data) + _line_note(data)
    out += ["## Summary", "", data["summary"] or _text(meta["task"]), ""]
    unknown = "NEEDS CLARIFICATION"
    command = context.get("test_command")
    out += [
        "## Technical Context",
        "",
        f"**Language/Version**: {context.get('languages') or unknown}",
        "",
        f"**Primary Dependencies**: {context.get('stack') or unknown}",
        "",
        f"**Testing**: {code_span(command) if command else unknown}",
        "",
        f"**Codebase**: {code_span(meta['codebase'])} (PlanAgents session {meta['session']}, "
        f"plan v{meta['version']}, {meta['review_status']})",
        "",
    ]
    out += ["## Constitution Check", ""]
    if data["rules"]:
        out += ["The codebase's own rules, as the planning agents were given them:", ""]
        out += [_rule(rule) for rule in data["rules"]] + [""]
    else:
        out += ["The codebase declares no rules (AGENTS.md, CONTRIBUTING.md, …).", ""]
    out += ["## Project Structure", "", "### Documentation (this feature)", ""]
    out += fence([f"{folder}/", "├── spec.md", "├── plan.md", "└── tasks.md"], "text") + [""]
    out += ["### Source Code (repository root)", ""]
    out += _files_table(data) or ["The plan names no files.", ""]
    out += _bullets("## Decisions", data["decisions"])
    if data["steps"]:
        out += ["## Implementation Steps", "", *_steps_detail(data, "###")]
    out += _bullets("## Risks", data["risks"])
    out += _citations("## Code Cited", data)
    return "\n".join(out).rstrip("\n") + "\n"


def _rule(rule: dict[str, Any]) -> str:
    mark = "**[critical]** " if rule["severity"] == "critical" else ""
    where = f" (from {code_span(rule['source'])})" if rule["source"] else ""
    verdict = "PASS"
    if rule["overridden"]:
        verdict = f"BROKEN, accepted by the human: {rule['overridden']}"
    elif rule["broken"]:
        verdict = f"BROKEN: {rule['broken']}"
    return f"- {mark}{rule['text']}{where} — {verdict}"


def _speckit_tasks(data: dict[str, Any]) -> str:
    title, folder = _title(data), f"specs/{data['feature']}"
    out = [f"# Tasks: {title}", "", f"**Input**: Design documents from `/{folder}/`", ""]
    out += ["**Prerequisites**: plan.md (required), spec.md (required for user stories)", ""]
    out += ["## Format: `[ID] [P?] [Story] Description`", ""]
    out += [
        "- **[P]**: Can run in parallel (different files, no dependencies)",
        "- **[Story]**: Which user story this task belongs to (US1)",
        "",
    ]
    number = 0
    out += [f"## Phase 1: User Story 1 - {title} (Priority: P1) 🎯 MVP", ""]
    out += [f"**Goal**: {data['summary'] or _text(data['plan']['task'])}", ""]
    tests = ", ".join(code_span(t["path"]) for t in data["tests"])
    if data["testing"]:
        out += ["### Tests for User Story 1", ""]
        out += ["> **NOTE: Write these tests FIRST, ensure they FAIL before implementation**", ""]
        for item in data["testing"]:
            number += 1
            where = f" in {tests}" if tests else ""
            out.append(f"- [ ] T{number:03d} [US1] Test{where}: {item}")
        out.append("")
    out += ["### Implementation for User Story 1", ""]
    for step in data["steps"]:
        number += 1
        files = _step_files(step)
        line = f"- [ ] T{number:03d} [US1] {step['title']}" + (f" in {files}" if files else "")
        line += f" — {step['detail']}" if step["detail"] else ""
        if step["target"]:
            sketch = "; sketch in plan.md" if step["sketch"] else ""
            line += f" ({_change(step['target'])}{sketch})"
        out.append(line + _unsure(step))
    out += ["", "**Checkpoint**: User Story 1 works and its tests pass.", "", "---", ""]
    out += ["## Dependencies & Execution Order", ""]
    out.append(
        "- Tasks run in the order written: each step of the plan builds on the one before, "
        "so none is marked [P]."
    )
    if data["testing"]:
        out.append("- The tests come first and fail before the implementation tasks.")
    out.append("")
    return "\n".join(out)


# ------------------------------------------------------------------ Kiro


def kiro_files(data: dict[str, Any]) -> list[tuple[str, str]]:
    """`.kiro/specs/<slug>/requirements.md`, `design.md` and `tasks.md` after Kiro's spec
    format: user stories with numbered EARS criteria, the design's six sections, and a
    checkbox implementation plan whose tasks cite the criteria."""
    folder = f".kiro/specs/{data['slug']}"
    return [
        (f"{folder}/requirements.md", _kiro_requirements(data)),
        (f"{folder}/design.md", _kiro_design(data)),
        (f"{folder}/tasks.md", _kiro_tasks(data)),
    ]


def _kiro_requirements(data: dict[str, Any]) -> str:
    meta = data["plan"]
    task = _text(meta["task"])
    out = ["# Requirements Document", "", "## Introduction", ""]
    out += [data["summary"] or task, "", f"Requested: {task}", ""]
    out += _quality(data)
    out += ["## Requirements", "", "### Requirement 1", ""]
    out += [
        f"**User Story:** As a developer of {code_span(meta['codebase'])}, I want this change: "
        f"{task.rstrip('.')}, so that the codebase does what was asked without breaking what "
        "works today.",
        "",
        "#### Acceptance Criteria",
        "",
        f"1. WHEN the change is complete THE SYSTEM SHALL do what was asked: {task.rstrip('.')}",
    ]
    out += [f"{n}. {ears(item)}" for n, item in enumerate(data["testing"], 2)]
    out.append(
        f"{len(data['testing']) + 2}. WHEN the change is complete THE SYSTEM SHALL pass the "
        "existing test suite"
    )
    return "\n".join(out) + "\n"


def _kiro_design(data: dict[str, Any]) -> str:
    meta = data["plan"]
    out = ["# Design Document", "", "## Overview", "", data["summary"] or _text(meta["task"]), ""]
    out += _quality(data) + _line_note(data)
    out += ["## Architecture", ""]
    out += _files_table(data) or ["The plan names no files.", ""]
    out += _bullets("### Decisions", data["decisions"])
    out += ["## Components and Interfaces", ""]
    out += _steps_detail(data, "###") if data["steps"] else ["The plan has no steps.", ""]
    out += ["## Data Models", "", "The plan names no change to a data model of its own.", ""]
    out += _bullets("## Error Handling", data["risks"], "The plan names no risks.")
    testing = list(data["testing"])
    testing += [f"Existing tests: {code_span(t['path'])} ({t['why']})" for t in data["tests"]]
    out += _bullets("## Testing Strategy", testing, "The plan names no tests.")
    out += _citations("## Code Cited", data)
    return "\n".join(out).rstrip("\n") + "\n"


def _kiro_tasks(data: dict[str, Any]) -> str:
    out = ["# Implementation Plan", ""]
    criteria = len(data["testing"]) + 2
    for step in data["steps"]:
        out.append(f"- [ ] {step['number']}. {step['title']}")
        if step["detail"]:
            out.append(f"  - {step['detail']}")
        if step["target"]:
            sketch = " (sketch in design.md)" if step["sketch"] else ""
            out.append(f"  - This task {_change(step['target'])}{sketch}")
        files = _step_files(step)
        if files:
            out.append(f"  - Files: {files}")
        if _unsure(step):
            out.append(f"  - {_unsure(step).strip()}")
        out += ["  - _Requirements: 1.1_", ""]
    if data["testing"]:
        number = len(data["steps"]) + 1
        out.append(f"- [ ] {number}. Write the tests of the acceptance criteria")
        tests = ", ".join(code_span(t["path"]) for t in data["tests"])
        if tests:
            out.append(f"  - Tests of the changed files: {tests}")
        out += [f"  - {item}" for item in data["testing"]]
        refs = ", ".join(f"1.{n}" for n in range(2, criteria + 1))
        out += [f"  - _Requirements: {refs}_", ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ------------------------------------------------------------------ AGENTS.md


def _deeper(markdown: str) -> list[str]:
    """Every heading one level down, fenced code left alone."""
    out: list[str] = []
    fence_mark = ""
    for line in markdown.split("\n"):
        opening = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence_mark:
            if opening and opening[1][0] == fence_mark[0] and len(opening[1]) >= len(fence_mark):
                fence_mark = ""
        elif opening:
            fence_mark = opening[1]
        elif re.match(r"^#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return out


def agents_section(data: dict[str, Any]) -> str:
    """A section to add to the repository's AGENTS.md: the hand-off prompt one level down,
    the quality line under its title, and the code each step changes with its sketch."""
    body = _deeper(handoff_prompt(data, data["guide"]).rstrip("\n"))
    out = [body[0], ""]  # "## Task: …"
    out += [
        "Planned with PlanAgents; remove this section once the change is merged.",
        "",
        *_quality(data),
        *body[2:],
    ]
    coded = [s for s in data["steps"] if s["target"] or s["sketch"]]
    if coded:
        out += ["", "### Code to change", ""]
        for step in coded:
            where = f" {_change(step['target'])}" if step["target"] else ""
            out += [f"Step {step['number']}{where}.", "", *_sketch_lines(step)]
    return "\n".join(out).rstrip("\n") + "\n"


def agents_files(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [("AGENTS.md", "# AGENTS.md\n\n" + agents_section(data))]


# ------------------------------------------------------------------ serving


def entry_name(name: str) -> str:
    """`name` when it is a relative path that stays inside the export's folder; else
    UnsafeEntry (an absolute path, `..`, a backslash, a control character)."""
    parts = PurePosixPath(name).parts
    if (
        not parts
        or name.startswith("/")
        or "\\" in name
        or any(ord(c) < 32 or c == "\x7f" for c in name)
        or any(part in ("..", ".", "") for part in parts)
        or name != "/".join(parts)
    ):
        raise UnsafeEntry(f"Refused zip entry {name!r}: it would not stay inside its folder.")
    return name


def zipped(files: list[tuple[str, str]], when: tuple[int, int, int, int, int, int]) -> bytes:
    """The files as a zip, each dated `when`, so the same version gives the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files:
            info = zipfile.ZipInfo(entry_name(name), date_time=when)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text.encode("utf-8"))
    return buffer.getvalue()


def one_document(label: str, files: list[tuple[str, str]]) -> str:
    """The files as one markdown document, each under its path."""
    out = [f"# {label}", "", "The files of this export, one after another; the zip has them "]
    out[-1] += "as files, in their folders."
    for name, text in files:
        out += ["", "---", "", f"**File: {code_span(name)}**", "", text.rstrip("\n")]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Layout:
    """One spec layout: its files for a plan version, served as a zip or as one document."""

    label: str
    build: Callable[[dict[str, Any]], list[tuple[str, str]]]
    document: Callable[[dict[str, Any]], str] | None = None
    """The single-markdown form when it is not the files one after another."""

    def files(self, plan: Plan) -> list[tuple[str, str]]:
        return self.build(spec_data(plan))

    def markdown(self, plan: Plan) -> str:
        data = spec_data(plan)
        if self.document is not None:
            return self.document(data)
        shown = [(name, text) for name, text in self.build(data) if name.endswith(".md")]
        return one_document(f"{self.label}: {_title(data)}", shown)

    def archive(self, plan: Plan) -> bytes:
        made = plan.created_at
        when = (made.year, made.month, made.day, made.hour, made.minute, made.second)
        return zipped(self.files(plan), when)


LAYOUTS: dict[str, Layout] = {
    "speckit": Layout("Spec Kit", speckit_files),
    "kiro": Layout("Kiro spec", kiro_files),
    "agents": Layout("AGENTS.md section", agents_files, agents_section),
}
