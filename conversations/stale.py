"""Whether a plan still describes the code: the files it names and the lines it cites, as they
were when the plan version was written, against the codebase as it is now.

    stale.check(plan)        # StaleReport: fresh, stale (with what changed, where) or unknown

A new version of a codebase re-indexes the same Codebase row in place, so the old file hashes
are gone once it is indexed. The plan therefore keeps its own record: when a Plan row is first
saved (whoever saves it), `take_snapshot` stores under `structured["snapshot"]` the sha256 of
every file the plan names and a hash of every span of lines it cites. Exports read named keys
of `structured` (conversations.exports.plan_data), so the record never reaches them.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone

from agents.citations import extract_citations
from agents.plan import check_file, code_span, codebase_paths, unique_files
from conversations.models import Message, Plan, PlanningSession
from conversations.store import add_message
from rag import versions
from rag.chunking import split_lines
from rag.models import Codebase, CodebaseVersion, CodeFile
from rag.paths import FileSet, InvalidPath, clean, find_citations

log = logging.getLogger(__name__)

SNAPSHOT_KEY = "snapshot"
SNAPSHOT_VERSION = 1
MAX_FILES = 300
"""Files recorded per plan; a plan naming more is cut (and says so)."""
MAX_CITATIONS = 200
MAX_SPAN = 500
"""A citation over more lines than this is recorded by its file only."""
_ACTIONS = ("modify", "create", "delete")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _span_hash(lines: list[str], start: int, end: int) -> str:
    return _sha("\n".join(lines[start - 1 : end]))


def _head(line: str) -> str:
    return _sha(line)[:16]


def _key(path: str) -> str | None:
    try:
        return clean(path)
    except InvalidPath:
        return None


# Taking the snapshot -------------------------------------------------------------------------


def _dict_list(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _step_paths(step: dict[str, Any], paths: FileSet) -> list[str]:
    """The files a step names in its file list or cites in its words, codebase spelling."""
    written = [f for f in step.get("files") or [] if isinstance(f, str)]
    text = " ".join(str(step.get(k) or "") for k in ("title", "detail"))
    written += [c.path for c in find_citations(text)]
    found: dict[str, None] = {}
    for item in written:
        resolved = paths.resolve(item)
        key = resolved.path or (_key(item) if resolved.how != "invalid" else None)
        if key:
            found.setdefault(key)
    return list(found)


def take_snapshot(codebase: Codebase, structured: dict[str, Any], markdown: str) -> dict[str, Any]:
    """What the plan rests on, as the codebase is now: {version, taken_at, content_hash,
    files: {path: sha256, or None when the codebase lacks it}, citations: [{path, start, end,
    sha, head}], steps: [[paths of step 1], …], truncated}."""
    paths = codebase_paths(codebase)
    named: dict[str, None] = {}
    for entry in unique_files(_dict_list(structured, "files")):
        action = entry.get("action") if entry.get("action") in _ACTIONS else "modify"
        checked = check_file(entry["path"], str(action), paths)
        if checked.status != "invalid":
            named.setdefault(checked.path)
    steps = [_step_paths(step, paths) for step in _dict_list(structured, "steps")]
    for step_paths in steps:
        named.update(dict.fromkeys(step_paths))
    cited = [c for c in extract_citations(codebase, markdown) if c.exists][:MAX_CITATIONS]
    named.update(dict.fromkeys(c.path for c in cited))
    truncated = len(named) > MAX_FILES
    wanted = list(named)[:MAX_FILES]

    rows = CodeFile.objects.filter(codebase=codebase, path__in=wanted)
    shas = dict(rows.values_list("path", "sha256"))
    spans = [c for c in cited if c.path in shas and c.end - c.start < MAX_SPAN]
    contents = dict(rows.filter(path__in={c.path for c in spans}).values_list("path", "content"))
    citations = []
    for c in spans:
        lines = split_lines(contents.get(c.path, ""))
        end = max(c.start, c.end)
        if end > len(lines):
            continue
        citations.append(
            {
                "path": c.path,
                "start": c.start,
                "end": end,
                "sha": _span_hash(lines, c.start, end),
                "head": _head(lines[c.start - 1]),
            }
        )
    return {
        "version": SNAPSHOT_VERSION,
        "taken_at": timezone.now().isoformat(),
        # From the row, not the object: the caller's copy may predate the last indexing.
        "content_hash": Codebase.objects.filter(pk=codebase.pk)
        .values_list("content_hash", flat=True)
        .first(),
        "files": {path: shas.get(path) for path in wanted},
        "citations": citations,
        "steps": steps,
        "truncated": truncated,
    }


def carry_over(base: dict[str, Any] | None, fresh: dict[str, Any]) -> dict[str, Any]:
    """The record of a version derived from another (an edited section copies the base's data,
    record included): what it still names keeps the base's record, since copying text does
    not re-check the code; what is new to it is recorded as the code is now."""
    if not isinstance(base, dict) or base.get("version") != SNAPSHOT_VERSION:
        return fresh
    recorded = base.get("files")
    old_files: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    old_spans = {
        (c["path"], c["start"], c["end"]): c for c in base.get("citations") or [] if _is_citation(c)
    }
    return {
        **fresh,
        "taken_at": base.get("taken_at") or fresh["taken_at"],
        "content_hash": base.get("content_hash") or "",
        "files": {p: old_files.get(p, sha) for p, sha in fresh["files"].items()},
        "citations": [
            old_spans.get((c["path"], c["start"], c["end"]), c) for c in fresh["citations"]
        ],
    }


@receiver(pre_save, sender=Plan)
def snapshot_new_plan(sender: Any, instance: Plan, raw: bool = False, **kwargs: Any) -> None:
    """Every new plan version records what it rests on, however it is created."""
    if raw or not instance._state.adding:
        return
    structured = instance.structured if isinstance(instance.structured, dict) else {}
    base = structured.get(SNAPSHOT_KEY)
    data = {k: v for k, v in structured.items() if k != SNAPSHOT_KEY}
    try:
        fresh = take_snapshot(instance.session.codebase, data, instance.markdown or "")
    except Exception:
        # The plan is what the user waited for: without a record it shows "can't tell" later,
        # which is better than losing the plan to a bug here.
        log.exception("Could not record what plan v%s rests on", instance.version)
        return
    instance.structured = {**data, SNAPSHOT_KEY: carry_over(base, fresh)}


# Checking it -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One way the code a plan rests on is no longer what it was."""

    path: str
    kind: str
    """changed (the file's content), removed, appeared (it was not there, now it is),
    lines_changed (the cited lines are gone), lines_moved (the same lines, elsewhere)."""
    start: int = 0
    end: int = 0
    now_start: int = 0
    now_end: int = 0

    @property
    def lines(self) -> str:
        return _lines(self.start, self.end)

    @property
    def message(self) -> str:
        if self.kind == "removed":
            return "is no longer in the codebase."
        if self.kind == "appeared":
            return "was not in the codebase when the plan was written; it is now."
        if self.kind == "lines_moved":
            return (
                f"lines {self.lines} moved: the same lines are now at "
                f"{_lines(self.now_start, self.now_end)}."
            )
        if self.kind == "lines_changed":
            return f"lines {self.lines} no longer hold the code the plan cited."
        return "changed since the plan was written."


def _lines(start: int, end: int) -> str:
    return str(start) if start == end else f"{start}-{end}"


@dataclass(frozen=True)
class AffectedStep:
    number: int
    title: str
    paths: list[str]


@dataclass
class StaleReport:
    state: str
    """fresh (nothing it rests on changed), stale, or unknown (it cannot tell)."""
    reason: str = ""
    """Why it cannot tell, for unknown."""
    changes: list[Change] = field(default_factory=list)
    steps: list[AffectedStep] = field(default_factory=list)
    unchanged_citations: list[tuple[str, str]] = field(default_factory=list)
    """(path, lines) of citations in changed files whose lines are still there as they were."""
    files_checked: int = 0
    citations_checked: int = 0
    taken_at: str = ""
    truncated: bool = False

    @property
    def is_stale(self) -> bool:
        return self.state == "stale"

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(c.path for c in self.changes))

    @property
    def by_file(self) -> list[tuple[str, str]]:
        """(path, everything that changed in it, in one sentence) for people to read."""
        said: dict[str, list[str]] = {}
        for change in self.changes:
            said.setdefault(change.path, []).append(change.message.rstrip("."))
        return [(path, "; ".join(messages) + ".") for path, messages in said.items()]


def snapshot_of(plan: Plan) -> dict[str, Any] | None:
    structured = plan.structured if isinstance(plan.structured, dict) else {}
    snapshot = structured.get(SNAPSHOT_KEY)
    if not isinstance(snapshot, dict) or snapshot.get("version") != SNAPSHOT_VERSION:
        return None
    return snapshot


def check(plan: Plan) -> StaleReport:
    """Compare what plan `plan` rests on with the codebase as it is now."""
    codebase = plan.session.codebase
    snapshot = snapshot_of(plan)
    if snapshot is None:
        return StaleReport(
            "unknown",
            "This plan version was written before PlanAgents recorded the code a plan rests "
            "on, so it can't tell whether that code changed since. Re-validate it to check "
            "its files and citations against the codebase as it is now.",
        )
    taken_at = str(snapshot.get("taken_at") or "")
    if codebase.status != Codebase.Status.READY:
        reason = (
            "The latest version of the codebase failed to index, so the plan can't be checked "
            "against it."
            if codebase.status == Codebase.Status.FAILED
            else "A new version of the codebase is being indexed; check again when it is done."
        )
        return StaleReport("unknown", reason, taken_at=taken_at)
    recorded = snapshot.get("files")
    files: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    citations = [c for c in snapshot.get("citations") or [] if _is_citation(c)]
    report = StaleReport(
        "fresh",
        files_checked=len(files),
        citations_checked=len(citations),
        taken_at=taken_at,
        truncated=bool(snapshot.get("truncated")),
    )
    if snapshot.get("content_hash") and snapshot.get("content_hash") == codebase.content_hash:
        return report  # the very same files: nothing to compare

    rows = CodeFile.objects.filter(codebase=codebase, path__in=list(files))
    now = dict(rows.values_list("path", "sha256"))
    for path, sha in files.items():
        if sha is None and path in now:
            report.changes.append(Change(path, "appeared"))
        elif sha is not None and path not in now:
            report.changes.append(Change(path, "removed"))
        elif sha is not None and now[path] != sha:
            report.changes.append(Change(path, "changed"))
    changed = {c.path for c in report.changes if c.kind == "changed"}
    report.changes += _citation_changes(
        codebase, [c for c in citations if c["path"] in changed], report
    )
    if report.changes:
        report.state = "stale"
        report.steps = _affected_steps(plan, snapshot, {c.path for c in report.changes})
    return report


def _is_citation(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("path"), str)
        and isinstance(item.get("start"), int)
        and isinstance(item.get("end"), int)
        and isinstance(item.get("sha"), str)
        and isinstance(item.get("head"), str)
        and 1 <= item["start"] <= item["end"]
    )


def _citation_changes(
    codebase: Codebase, citations: list[dict[str, Any]], report: StaleReport
) -> list[Change]:
    if not citations:
        return []
    wanted = {c["path"] for c in citations}
    contents = dict(
        CodeFile.objects.filter(codebase=codebase, path__in=wanted).values_list("path", "content")
    )
    lines_of = {path: split_lines(text) for path, text in contents.items()}
    found: list[Change] = []
    for c in citations:
        lines = lines_of.get(c["path"], [])
        path, start, end = c["path"], c["start"], c["end"]
        if end <= len(lines) and _span_hash(lines, start, end) == c["sha"]:
            report.unchanged_citations.append((path, _lines(start, end)))
            continue
        moved = _find_span(lines, c)
        if moved:
            found.append(Change(path, "lines_moved", start, end, moved, moved + end - start))
        else:
            found.append(Change(path, "lines_changed", start, end))
    return found


def _find_span(lines: list[str], citation: dict[str, Any]) -> int:
    """The first line of the same cited lines elsewhere in the file, nearest the old place;
    0 when they are nowhere."""
    size = citation["end"] - citation["start"] + 1
    starts = [
        n
        for n in range(1, len(lines) - size + 2)
        if _head(lines[n - 1]) == citation["head"]
        and _span_hash(lines, n, n + size - 1) == citation["sha"]
    ]
    return min(starts, key=lambda n: abs(n - citation["start"]), default=0)


def _affected_steps(plan: Plan, snapshot: dict[str, Any], paths: set[str]) -> list[AffectedStep]:
    structured = plan.structured if isinstance(plan.structured, dict) else {}
    steps = _dict_list(structured, "steps")
    kept = snapshot.get("steps")
    recorded: list[Any] = kept if isinstance(kept, list) else []
    affected = []
    for number, (step, step_paths) in enumerate(zip(steps, recorded, strict=False), start=1):
        hit = [p for p in _strings(step_paths) if p in paths]
        if hit:
            title = " ".join(str(step.get("title") or "").split()) or f"Step {number}"
            affected.append(AffectedStep(number, title, hit))
    return affected


def _strings(items: Any) -> Iterable[str]:
    return (i for i in items if isinstance(i, str)) if isinstance(items, list) else ()


# A session and the versions of its codebase -------------------------------------------------


@dataclass(frozen=True)
class VersionUnder:
    """A version of the codebase indexed after the session started."""

    version: CodebaseVersion
    cited: list[str]
    """Files it added, removed or changed that the session had cited before it was indexed
    (its messages' citations, its plans' records); in the version's lists, so in full unless
    `version.cut`."""
    first_seq: int | None
    """The first message written after it was indexed; None when none was."""
    open_session: bool = False
    """Whether the session is still going (running or waiting for the human)."""

    @property
    def under(self) -> bool:
        """Whether it changed the code while the session went on, rather than after its end."""
        return self.first_seq is not None or self.open_session


@dataclass
class SessionCode:
    """Which version of the code a session started on and what changed since."""

    started_on: CodebaseVersion | None
    """The version indexed when the session started; None when that predates the history."""
    later: list[VersionUnder] = field(default_factory=list)
    plan: StaleReport | None = None
    """The latest plan's stale check, when the code changed after the session started."""

    @property
    def changed(self) -> list[VersionUnder]:
        """The later versions that changed at least one file."""
        return [v for v in self.later if v.version.touched_count]


def session_code(session: PlanningSession) -> SessionCode:
    """The version `session` started on and every version indexed since, each with the files
    it touched that the session cites. The index holds only the latest version, so a session
    that was running reads the new code from the moment it was indexed."""
    codebase = session.codebase
    report = SessionCode(started_on=versions.in_use_at(codebase, session.created_at))
    later = versions.indexed_since(codebase, session.created_at)
    if not later:
        return report
    messages = list(
        session.messages.exclude(node=NOTICE_NODE)
        .order_by("seq")
        .values_list("seq", "created_at", "citations")
    )
    plans = list(session.plans.order_by("version"))
    going = session.status in (
        PlanningSession.Status.RUNNING,
        PlanningSession.Status.AWAITING_HUMAN,
    )
    for version in later:
        before = version.indexed_at
        cited: dict[str, None] = {}
        for _, created_at, citations in messages:
            if created_at < before:
                cited.update(dict.fromkeys(_cited_paths(citations)))
        for plan in plans:
            snapshot = snapshot_of(plan)
            if plan.created_at < before and snapshot and isinstance(snapshot.get("files"), dict):
                cited.update(dict.fromkeys(p for p in snapshot["files"] if isinstance(p, str)))
        touched = set(version.added) | set(version.removed) | set(version.changed)
        first_seq = next((seq for seq, created_at, _ in messages if created_at >= before), None)
        report.later.append(
            VersionUnder(version, sorted(p for p in cited if p in touched), first_seq, going)
        )
    if plans and report.changed:
        report.plan = check(plans[-1])
    return report


NOTICE_NODE = "code_version"
"""The node of the system message telling an open session that the code changed under it."""
NOTICE_FILES = 10


@receiver(post_save, sender=CodebaseVersion)
def notice_new_version(
    sender: Any, instance: CodebaseVersion, created: bool = False, raw: bool = False, **kwargs: Any
) -> None:
    """A version that changed files, indexed while sessions on its codebase are still going:
    once it is committed, each of them is told in the conversation, live."""
    if raw or not created or not instance.compared or not instance.touched_count:
        return
    version_id = instance.pk
    transaction.on_commit(lambda: tell_open_sessions(version_id))


def tell_open_sessions(version_id: int) -> list[int]:
    """Add the notice of version `version_id` to every session on its codebase started before
    it and still going (running or waiting for the human); their ids."""
    version = CodebaseVersion.objects.filter(pk=version_id).first()
    if version is None:
        return []
    going = PlanningSession.objects.filter(
        codebase_id=version.codebase_id,
        created_at__lt=version.indexed_at,
        status__in=(PlanningSession.Status.RUNNING, PlanningSession.Status.AWAITING_HUMAN),
    )
    already = set(
        Message.objects.filter(
            session__codebase_id=version.codebase_id,
            node=NOTICE_NODE,
            data__version=version.number,
        ).values_list("session_id", flat=True)
    )
    told = []
    for session_id in going.exclude(pk__in=already).values_list("pk", flat=True):
        add_message(
            session_id,
            role=Message.Role.SYSTEM,
            node=NOTICE_NODE,
            content=notice_text(version),
            data={"version": version.number},
        )
        told.append(session_id)
    return told


def notice_text(version: CodebaseVersion) -> str:
    uploaded = (
        f"uploaded {timezone.localtime(version.uploaded_at):%Y-%m-%d %H:%M}, "
        if version.uploaded_at
        else ""
    )
    indexed = f"{timezone.localtime(version.indexed_at):%Y-%m-%d %H:%M}"
    paths = [*version.changed, *version.added, *version.removed][:NOTICE_FILES]
    more = version.touched_count - len(paths)
    listed = ", ".join(code_span(p) for p in paths) + (f" and {more} more" if more > 0 else "")
    count = version.touched_count
    return (
        f"**The code changed under this session:** version {version.number} of the codebase "
        f"({uploaded}indexed {indexed}) changed {count} file{'' if count == 1 else 's'} "
        f"({version.change_summary}): {listed}. The index holds only the latest version, so "
        "from here on the agents read the new code; earlier messages cite the code as it was."
    )


def _cited_paths(citations: Any) -> Iterable[str]:
    if not isinstance(citations, list):
        return ()
    return (
        c["path"]
        for c in citations
        if isinstance(c, dict) and isinstance(c.get("path"), str) and c.get("exists") is not False
    )


# Re-planning -----------------------------------------------------------------------------------


def seed_task(plan: Plan, report: StaleReport, limit: int) -> str:
    """The task of a new session that re-plans `plan` on the code as it is now: the old task,
    where it comes from, the old plan's goal and steps, and what changed (markdown, at most
    `limit` characters; the steps are cut first)."""
    session = plan.session
    data = plan.structured if isinstance(plan.structured, dict) else {}
    summary = " ".join(str(data.get("summary") or "").split())
    head = [
        session.task.strip(),
        f"Seeded from plan v{plan.version} of session #{session.pk}, written before the code "
        "changed. Check each of its steps against the code as it is now and revise what no "
        "longer fits.",
    ]
    if summary:
        head.append(f"Goal of that plan: {summary}")
    tail = []
    if report.changes:
        changed = [f"- {code_span(path)} {said}" for path, said in report.by_file[:20]]
        tail.append("What changed since:\n\n" + "\n".join(changed))
    steps = []
    for number, step in enumerate(_dict_list(data, "steps"), start=1):
        title = " ".join(str(step.get("title") or "").split()) or f"Step {number}"
        detail = " ".join(str(step.get("detail") or "").split())
        steps.append(f"{number}. {title}" + (f" — {detail}" if detail else ""))

    def text(shown: list[str]) -> str:
        more = ["…"] if len(shown) < len(steps) else []
        listed = ["Its steps:\n\n" + "\n".join(shown + more)] if shown else []
        return "\n\n".join(head + listed + tail)

    shown = steps
    while shown and len(text(shown)) > limit:
        shown = shown[:-1]
    return text(shown)[:limit]
