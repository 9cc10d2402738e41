"""Render proposals and plans as markdown, marking every file path against the codebase.

Renderers take plain dicts (possibly partial, while the model is still writing the JSON) so the
same function serves the live stream and the final document."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from agents import plan_rules
from agents.citations import extract_citations, line_note
from agents.decision_log import evidence_in
from agents.plan_quality import Quality, as_dict, judge, unquoted
from agents.sketches import diff_lines, fenced, shown_code
from conversations.models import Plan, PlanningSession
from rag import index as rag_index
from rag.models import Codebase, CodeFile
from rag.navigation import Navigator
from rag.paths import FileSet, InvalidPath, clean, escape, tidy


def codebase_paths(codebase: Codebase) -> FileSet:
    """The codebase's files, to check a plan's paths against, and what its line numbers mean."""
    paths = CodeFile.objects.filter(codebase=codebase).values_list("path", flat=True)
    return FileSet(paths, line_note=line_note(codebase))


@dataclass(frozen=True)
class FileCheck:
    """What one file entry of a plan amounts to in the codebase."""

    path: str
    """The codebase's spelling when the file is there; else the path as written, cleaned
    (escaped when it is invalid, so it never holds a line break or a control character)."""
    status: str
    """exists, new (to be created), missing, or invalid (no file can have that path)."""
    written: str = ""
    """The path as the model wrote it when it was found under another spelling (letter case,
    leading folders left out), for the reader to see what was matched."""
    reason: str = ""
    """Why an invalid path is invalid."""


def check_file(path: str, action: str, paths: FileSet) -> FileCheck:
    """Resolve a model-written path (rag.paths: exact, letter case, unique tail) and say what
    the entry amounts to. A file to create is "exists" only when that very path is taken."""
    found = paths.resolve(path)
    if found.how == "invalid":
        return FileCheck(found.written, "invalid", reason=found.reason)
    if action == "create":
        if found.how in ("exact", "case"):
            return FileCheck(found.path or found.written, "exists")
        return FileCheck(found.written, "new")
    if found.path is None:
        return FileCheck(found.written, "missing")
    return FileCheck(found.path, "exists", found.written if found.how != "exact" else "")


_STATUS_LABEL = {
    "exists": "exists",
    "new": "new file",
    "missing": "**NOT IN THE CODEBASE**",
    "invalid": "**INVALID PATH**",
}


def _items(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    """A model-written string on one line: a line break in it could start a block of its own
    (a heading, a table row) in the document we are rendering."""
    return " ".join(value.split()) if isinstance(value, str) else ""


def _closed(text: str) -> str:
    """`text` with a code span it opens and never closes closed at its end. The requests walk's
    step title was cut after "in `requests/structures", and its backtick paired with the next
    one, in the detail, so the rest of the step showed its code as prose and its prose as code.
    Only for whole text: closing a span still streaming would redraw the live plan each token."""
    opened = 0
    for run in _BACKTICKS.findall(text):
        if not opened:
            opened = len(run)
        elif len(run) == opened:
            opened = 0
    return text + "`" * opened


_BACKTICKS = re.compile(r"`+")


def code_span(text: str) -> str:
    """`text` as an inline code span, whatever backticks it holds."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    """Text for one cell of a table row: one line, and no pipe that could end the cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _key(path: str) -> str:
    try:
        return clean(path)
    except InvalidPath:
        return escape(tidy(path))


def unique_files(files: list[Any]) -> list[dict[str, Any]]:
    """File entries with a path, one per cleaned path (models like to repeat themselves)."""
    seen: set[str] = set()
    unique: list[dict[str, Any]] = []
    for entry in files:
        if not isinstance(entry, dict) or not _text(entry.get("path")):
            continue
        key = _key(entry["path"])
        if key not in seen:
            seen.add(key)
            unique.append(entry)
    return unique


def with_step_files(data: dict[str, Any], paths: FileSet) -> dict[str, Any]:
    """`data` (a proposal or plan) whose Files table lists every existing file its steps say
    they touch: a small model names `plot.py` in a step and leaves it out of Files, where the
    reviewer, the path check, the impact map and the exports look."""
    files = [f for f in data.get("files") or [] if isinstance(f, dict)]
    listed = {paths.resolve(str(f.get("path", ""))).path or str(f.get("path", "")) for f in files}
    added = []
    for number, step in enumerate(data.get("steps") or [], start=1):
        if not isinstance(step, dict):
            continue
        for written in step.get("files") or []:
            path = paths.resolve(str(written)).path if isinstance(written, str) else None
            if path and path not in listed:
                listed.add(path)
                title = _text(step.get("title")) or "its change"
                added.append(
                    {"path": path, "action": "modify", "reason": f"Step {number}: {title}"}
                )
    return {**data, "files": [*files, *added]} if added else data


def _files_table(files: list[Any], paths: FileSet, *, complete: bool) -> list[str]:
    # No trailing pipes (GFM does not need them), so a row only ever grows at its end while
    # the model is still writing its reason: the live stream can append instead of redraw.
    # Every cell is escaped: a path or reason holding "|", "`" or a line break must not be
    # able to end its cell or its row (and so forge a row saying some file exists).
    rows = ["| File | Change | Status | Why", "|---|---|---|---"]
    for entry in unique_files(files):
        if not complete and "reason" not in entry:
            continue  # the path or action may still be growing
        action = _text(entry.get("action")) or "modify"
        checked = check_file(entry["path"], action, paths)
        status = _STATUS_LABEL[checked.status]
        # A stored version's paths are the codebase's spelling already: it kept what was written.
        written = checked.written or _text(entry.get("written"))
        if written and written != checked.path:
            status += f" (written {code_span(written)})"
        cells = [code_span(checked.path), action, status, _text(entry.get("reason"))]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells))
    return rows if len(rows) > 2 else []


def _steps(steps: list[Any], paths: FileSet, *, complete: bool) -> list[str]:
    lines: list[str] = []
    for number, step in enumerate(steps, 1):
        if not isinstance(step, dict) or (not complete and "detail" not in step):
            continue  # wait until the title is whole
        last = number == len(steps)
        title = _closed(_text(step.get("title"))) or f"Step {number}"  # whole once "detail" is
        detail = _text(step.get("detail"))
        detail = _closed(detail) if complete or not last else detail
        lines.append(f"{number}. **{title}**" + (f" — {detail}" if detail else ""))
        files = _step_files(_items(step, "files"), paths)
        if files and (complete or not last):
            lines.append("   Files: " + ", ".join(code_span(f) for f in files))
        if complete or not last:
            lines += _step_code(step)
    return lines


def _step_code(step: dict[str, Any]) -> list[str]:
    """Under a step: the definition it changes, as the code is now (its real line numbers),
    and its change sketch, said to match that code or not; or the file a new definition
    goes in. Indented to stay inside the step's list item."""
    target = as_dict(step.get("target"))
    if target.get("kind") == "new":
        return [f"   New definition in {code_span(_text(target.get('path')))}."]
    code = step.get("code") if isinstance(step.get("code"), dict) else None
    same = step.get("same_code_as")
    if not code and isinstance(same, int) and target.get("name"):
        name = code_span(_text(target.get("name")))
        return ["", f"   Changes {name}, whose code and sketch are under step {same}.", ""]
    if not code:
        return []
    sketch = step.get("sketch") if isinstance(step.get("sketch"), dict) else None
    shown = shown_code(code, sketch)
    first = int(code.get("start") or 1)
    where = f"{_text(code.get('path'))}:{first}-{first + len(code.get('lines') or []) - 1}"
    name = _text(target.get("name"))
    out = ["", f"   Current code of {code_span(name)}, {code_span(where)}:", ""]
    out += [f"   {line}" for line in fenced(shown, "text")]
    missing = unquoted(step)
    if missing:
        quotes = ", ".join(code_span(q) for q in missing)
        out += ["", f"   **Not in this code:** the step changes {quotes}, which it does not hold."]
    if sketch and diff_lines(sketch):
        verdict = (
            "its lines match the code above"
            if sketch.get("checked")
            else "**fails the check**: " + _text(sketch.get("problem"))
        )
        out += ["", f"   Change sketch ({verdict}):", ""]
        out += [f"   {line}" for line in fenced(diff_lines(sketch), "diff")]
    return [*out, ""]


def _step_files(written: list[Any], paths: FileSet) -> list[str]:
    """A step's paths as the codebase spells them; invalid ones are left out (a step's list is
    a pointer, the Files table is where every path is judged)."""
    shown: list[str] = []
    for value in written:
        # Small models sometimes write the word "path" where a path belongs.
        if isinstance(value, str) and ("/" in value or "." in value) and " " not in value.strip():
            found = paths.resolve(value)
            if found.how != "invalid":
                shown.append(found.path or found.written)
    return list(dict.fromkeys(shown))


def _bullets(data: dict[str, Any], key: str, heading: str) -> list[str]:
    # dict.fromkeys: drop the exact repeats small models produce, keep the order.
    items = [f"- {item}" for item in dict.fromkeys(_text(i) for i in _items(data, key)) if item]
    return [f"## {heading}", "", *items, ""] if items else []


DECISION_HEAD = [
    "| Decision | Agent A proposed | Agent B objected | Resolved | By | Evidence",
    "|---|---|---|---|---|---",
]


def _evidence_cell(labels: list[Any]) -> str:
    shown = [
        label if label.startswith("[") else code_span(label)
        for label in labels
        if isinstance(label, str) and label
    ]
    return ", ".join(shown) or "—"


def _decisions(data: dict[str, Any], *, complete: bool) -> list[str]:
    """The Decisions table: the plan's decisions (Agent A's, or a human's where they edited
    them), then the disagreement behind the plan (agents.decision_log: objections with their
    verdicts, the human's change requests). While the JSON streams, a decision is shown once
    the next one has started, so the table only grows by whole rows."""
    texts = [t for t in dict.fromkeys(_text(i) for i in _items(data, "decisions")) if t]
    if not complete:
        texts = texts[:-1]
    authors = data.get("decision_authors")
    authors = authors if isinstance(authors, dict) else {}
    rows: list[list[str]] = []
    for text in texts:
        by = _text(authors.get(text)) or "Agent A"
        # A decision of the plan's own is not an objection that was settled: nobody objected
        # to it, so the objection and resolution cells stay empty rather than say "kept".
        rows.append([text, "—", "—", "—", by, _evidence_cell(evidence_in(text))])
    for row in _items(data, "decision_log"):
        if not isinstance(row, dict):
            continue
        evidence = row.get("evidence")
        rows.append(
            [
                _text(row.get(key)) or "—"
                for key in ("decision", "proposed", "objection", "resolution", "by")
            ]
            + [_evidence_cell(evidence if isinstance(evidence, list) else [])]
        )
    if not rows:
        return []
    return [*DECISION_HEAD, *("| " + " | ".join(_cell(c) for c in row) for row in rows)]


def _file_set(paths: Collection[str]) -> FileSet:
    return paths if isinstance(paths, FileSet) else FileSet(paths)


def render_proposal(data: dict[str, Any], paths: Collection[str], *, complete: bool = True) -> str:
    """Sections in the order the JSON is written, so the live rendering only grows."""
    files = _file_set(paths)
    out: list[str] = []
    if _text(data.get("summary")):
        out += ["**Proposal.** " + _text(data["summary"]), ""]
    steps = _steps(_items(data, "steps"), files, complete=complete or "files" in data)
    if steps:
        out += ["**Steps**", "", *steps, ""]
    table = _files_table(_items(data, "files"), files, complete=complete)
    if table:
        out += ["**Files**", "", *table]
    return "\n".join(out).strip()


def render_plan(
    data: dict[str, Any], paths: Collection[str], *, title: str = "", complete: bool = True
) -> str:
    """The plan document; sections in the order the JSON is written (see render_proposal).

    When the codebase's line numbers are not the repository's (a compressed pack), the plan
    says so under its title, where every reader of its `path:line` citations passes."""
    files = _file_set(paths)
    out: list[str] = [f"# Plan: {_text(title)}" if _text(title) else "# Plan", ""]
    if files.line_note:
        out += [f"> **Line numbers.** {files.line_note}", ""]
    quality = data.get("quality")
    if complete and isinstance(quality, dict):
        out += [f"> **Checked by the app.** {Quality.from_dict(quality).line()}", ""]
    if _text(data.get("summary")):
        out += ["## Summary", "", _text(data["summary"]), ""]
    decisions = _decisions(data, complete=complete or "steps" in data)
    if decisions:
        out += ["## Decisions", "", *decisions, ""]
    steps = _steps(_items(data, "steps"), files, complete=complete or "files" in data)
    if steps:
        out += ["## Steps", "", *steps, ""]
    table = _files_table(_items(data, "files"), files, complete=complete or "testing" in data)
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
    rules = plan_rules.markdown(data)  # kept by every later version of the plan
    if rules:
        out += [rules, ""]
    text = "\n".join(out).strip()
    return text + "\n" if complete else text  # no trailing newline while growing


def annotate_files(data: dict[str, Any], paths: Collection[str]) -> dict[str, Any]:
    """The plan's data with each file entry's path as the codebase spells it (or cleaned, or
    escaped when invalid), its status, and the path as written when it was matched otherwise."""
    files = _file_set(paths)
    annotated = []
    for entry in unique_files(_items(data, "files")):
        checked = check_file(entry["path"], _text(entry.get("action")) or "modify", files)
        extra = {"written": checked.written} if checked.written else {}
        annotated.append({**entry, "path": checked.path, "status": checked.status, **extra})
    return {**data, "files": annotated}


def build_version(
    data: dict[str, Any], codebase: Codebase, *, title: str, task: str = ""
) -> tuple[str, dict[str, Any]]:
    """A plan version from its data: the markdown rendered from it and the data with every
    file path checked, its quality judged (agents.plan_quality: the line under its title) and
    the citations of the document re-checked. Every version goes through here (the agents'
    finalize, a human's edit, a regenerated section), so no version keeps a path status,
    quality line or citation judged against another text."""
    paths = codebase_paths(codebase)
    folder = rag_index.index_dir(codebase.pk)
    quality = judge(
        data,
        paths,
        task=task,
        index_folder=folder,
        codebase_id=codebase.pk,
        related=Navigator(folder).related,
    )
    data = {**data, "quality": quality.as_dict()}
    markdown = render_plan(data, paths, title=title)
    structured = annotate_files(data, paths)
    structured["citations"] = [c.as_dict() for c in extract_citations(codebase, markdown)]
    return markdown, structured


def append_version(
    session: PlanningSession,
    markdown: str,
    structured: dict[str, Any],
    *,
    note: str,
    kind: str = Plan.Author.AGENT,
    author: Any = None,
    after: int | None = None,
    approved: list[str] | None = None,
) -> Plan:
    """Save the session's next plan version. With `after`, the version must follow that one
    (an edit of the latest version): when another version got there first, IntegrityError.
    Without it (the agents' plans), the next free number, however many human edits or
    regenerations came before."""
    for _ in range(5):
        latest = Plan.objects.filter(session=session).order_by("-version").first()
        number = (after if after is not None else latest.version if latest else 0) + 1
        try:
            with transaction.atomic():
                return Plan.objects.create(
                    session=session,
                    version=number,
                    markdown=markdown,
                    structured=structured,
                    author_kind=kind,
                    author=author,
                    note=note[:1000],
                    approved_sections=approved or [],
                )
        except IntegrityError:
            if after is not None:
                raise
    raise IntegrityError(f"no free plan version for session {session.pk}")
