"""Checking an implementation against an approved plan: the use cases and the job.

    check = start(user, session_id, plan_version, source="diff", diff=text)
    run_check(check.pk)          # the job (planagents.jobs.dispatch): builds the report

A check is an `ImplementationCheck` row: asked for here (the owner, an approved plan), run in
the background like every long job, its progress and result written to the row. What changed
comes from one of two sources: the codebase's newer version (its files now, against the hashes
the plan recorded when it was written, conversations.stale) or a unified diff applied to the
plan's code in a child process (conversations.implementation_diff). The report itself is
conversations.implementation.verify; the model is asked only whether a change unlike its
step's sketch is equivalent, one small structured call per such step (and, after a yes, the
same question on the change undone: the control), on the session's Agent B profile, through
the same call policy as every call (budget, trace, time limits).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from pydantic import BaseModel, Field

from conversations import implementation, services, stale
from conversations.implementation import FileChange, Judgement
from conversations.implementation_diff import DiffRefused, apply, decode, read
from conversations.models import ImplementationCheck, Plan, PlanningSession
from planagents.jobs import dispatch
from rag import versions
from rag.models import CodebaseVersion, CodeFile, Rule
from rag.rules import active_rules

log = logging.getLogger(__name__)

STALLED_AFTER = timedelta(minutes=10)
"""A running check whose row has not been written for this long has lost its job."""
JUDGE_TOKENS = 200
MAX_CALLS = 5
"""Model calls one check makes, controls counted: about 21 s each at the largest prompt on the
local model, so 105 s at most, under the issue's two minutes. A step is asked only while both
of its calls fit; the rest stay deviated, and say so."""
MAX_TASK_CHARS = 1500
"""The task's text in a judgement's prompt: the step and the two hunks are what it judges, and
an issue pasted whole (5,800 characters for seaborn-2848) is most of a prompt the local model
reads at about 8 ms a token."""


class CheckError(Exception):
    """A check that cannot be asked for, with a sentence the user can act on."""


# ------------------------------------------------------------------ what can be checked


def approved_plan(session: PlanningSession, version: int | None = None) -> Plan:
    plans = Plan.objects.filter(session=session)
    plan = plans.filter(version=version).first() if version else plans.order_by("-version").first()
    if plan is None:
        raise CheckError("This session has no such plan version.")
    if plan.review_status != Plan.Review.APPROVED:
        raise CheckError(
            f"Plan v{plan.version} is not approved: an implementation is checked against an "
            "approved plan."
        )
    return plan


def written_at(plan: Plan) -> Any:
    """When the code the plan rests on was read: its snapshot's time, else its own."""
    taken = (stale.snapshot_of(plan) or {}).get("taken_at")
    if taken:
        try:
            from datetime import datetime  # noqa: PLC0415

            return datetime.fromisoformat(str(taken))
        except ValueError:
            pass
    return plan.created_at


def newer_versions(plan: Plan) -> list[CodebaseVersion]:
    """The codebase versions indexed since the plan was written, oldest first. Only the last
    one's files are kept (a new version re-indexes in place), so it is the one a check reads."""
    return versions.indexed_since(plan.session.codebase, written_at(plan))


def checks_of(plan: Plan) -> list[ImplementationCheck]:
    return list(plan.implementation_checks.select_related("created_by").order_by("-number"))


def state(check: ImplementationCheck) -> str:
    """pending, running, done, failed, or stalled (pending or running, but its job has not
    written for STALLED_AFTER: it stopped, or was never started, as when the server was
    stopping)."""
    if check.status in (
        ImplementationCheck.Status.RUNNING,
        ImplementationCheck.Status.PENDING,
    ) and (timezone.now() - check.updated_at > STALLED_AFTER):
        return "stalled"
    return str(check.status)


# ------------------------------------------------------------------ asking for one


def start(
    user: Any,
    session_id: int,
    plan_version: int | None,
    *,
    source: str,
    diff: bytes | str = "",
    label: str = "",
    ask_model: bool = True,
) -> ImplementationCheck:
    """A new check of the approved plan version against a newer version of the codebase
    (`source` "version") or `diff`, dispatched as a job. SessionNotFound for anyone but the
    owner; CheckError for a plan that is not approved, no newer version, or a diff refused
    before it is applied (too big, binary, paths leaving the tree)."""
    session = services.get_session_for(user, session_id)
    plan = approved_plan(session, plan_version)
    text = ""
    number: int | None = None
    if source == ImplementationCheck.Source.VERSION:
        newer = newer_versions(plan)
        if not newer:
            raise CheckError(
                "The codebase has no version newer than this plan: upload or sync the "
                "implementation first, or paste a diff."
            )
        number = newer[-1].number
        label = label or f"version {number}"
    elif source == ImplementationCheck.Source.DIFF:
        try:
            text = decode(diff)
            read(text)
        except DiffRefused as exc:
            raise CheckError(str(exc)) from None
        latest = versions.history(session.codebase).first()
        number = latest.number if latest else None
        label = " ".join(label.split())[:200] or "pasted diff"
    else:
        raise CheckError("Choose a newer version of the codebase or a diff to check.")
    profile = session.agent_b_profile if ask_model else ""
    for _ in range(3):
        try:
            with transaction.atomic():
                top = plan.implementation_checks.aggregate(top=Max("number"))["top"] or 0
                check = ImplementationCheck.objects.create(
                    session=session,
                    plan=plan,
                    number=top + 1,
                    created_by=user,
                    source=source,
                    label=label,
                    codebase_version=number,
                    diff=text,
                    judged_by=profile,
                    progress={"phase": "waiting to run"},
                )
                dispatch(run_check, check.pk)
                return check
        except IntegrityError:
            continue  # two checks asked for at once: the next number
    raise CheckError("Could not number the check; try again.")


def run_again(user: Any, session_id: int, check_id: int) -> ImplementationCheck:
    """Dispatch a failed or stalled check again (its row keeps what it had)."""
    session = services.get_session_for(user, session_id)
    check = ImplementationCheck.objects.filter(session=session, pk=check_id).first()
    if check is None:
        raise services.SessionNotFound("That check does not exist.")
    again = ImplementationCheck.objects.filter(
        pk=check.pk, status=ImplementationCheck.Status.FAILED
    )
    if state(check) == "stalled":
        again = ImplementationCheck.objects.filter(
            pk=check.pk, status=check.status, updated_at=check.updated_at
        )
    with transaction.atomic():
        if not again.update(
            status=ImplementationCheck.Status.PENDING,
            error="",
            progress={"phase": "waiting to run"},
            updated_at=timezone.now(),
        ):
            raise CheckError("Only a failed or stalled check can be run again.")
        dispatch(run_check, check.pk)
    check.refresh_from_db()
    return check


# ------------------------------------------------------------------ the job


def _progress(check_id: int, **progress: Any) -> None:
    ImplementationCheck.objects.filter(pk=check_id).update(
        progress=progress, updated_at=timezone.now()
    )


def run_check(check_id: int) -> None:
    """The job: take the check (pending → running, compare-and-swap), build the changes, the
    report and what moved since the check before; a failure is written to the row in words."""
    taken = ImplementationCheck.objects.filter(
        pk=check_id, status=ImplementationCheck.Status.PENDING
    ).update(status=ImplementationCheck.Status.RUNNING, updated_at=timezone.now())
    if not taken:
        return
    check = ImplementationCheck.objects.select_related("plan", "session__codebase").get(pk=check_id)
    try:
        report = build_report(check)
    except (DiffRefused, CheckError) as exc:
        _fail(check_id, str(exc))
        return
    except Exception as exc:
        log.exception("implementation check %s failed", check_id)
        _fail(check_id, f"The check stopped on an error ({type(exc).__name__}); run it again.")
        return
    previous = (
        ImplementationCheck.objects.filter(
            plan=check.plan, number__lt=check.number, status=ImplementationCheck.Status.DONE
        )
        .order_by("-number")
        .first()
    )
    if previous is not None:
        report["previous"] = previous.number
        report["moved"] = implementation.moved(previous.report, report)
    ImplementationCheck.objects.filter(pk=check_id).update(
        status=ImplementationCheck.Status.DONE,
        report=report,
        progress={"phase": "done"},
        finished_at=timezone.now(),
        updated_at=timezone.now(),
    )


def _fail(check_id: int, message: str) -> None:
    ImplementationCheck.objects.filter(pk=check_id).update(
        status=ImplementationCheck.Status.FAILED,
        error=message,
        finished_at=timezone.now(),
        updated_at=timezone.now(),
    )


def build_report(check: ImplementationCheck) -> dict[str, Any]:
    plan, session = check.plan, check.session
    structured = plan.structured if isinstance(plan.structured, dict) else {}
    _progress(check.pk, phase="reading the changes")
    notes: list[str] = []
    elsewhere: list[str] = []
    if check.source == ImplementationCheck.Source.DIFF:
        changes, notes = diff_changes(check.diff, plan)
    else:
        changes, elsewhere, notes = version_changes(plan)
    rules = [
        {"label": f"Rule {n}", "text": r.text}
        for n, r in enumerate(active_rules(session.codebase), 1)
        if r.severity == Rule.Severity.CRITICAL
    ]
    judge = model_judge(session, check.judged_by) if check.judged_by else None

    def on_step(done: int, total: int) -> None:
        _progress(check.pk, phase="checking steps", step=done, steps=total)

    report = implementation.verify(
        structured, changes, judge=judge, rules=rules, changed_elsewhere=elsewhere, on_step=on_step
    )
    report["notes"] = notes
    report["model"] = check.judged_by or ""
    return report


def diff_changes(text: str, plan: Plan) -> tuple[dict[str, FileChange], list[str]]:
    """The diff applied to the files it touches as the plan had them: the codebase's files,
    which are the plan's own unless a newer version changed them (then the report says so)."""
    touched = read(text)
    olds = sorted({t.old for t in touched if t.old})
    rows = dict(
        CodeFile.objects.filter(codebase=plan.session.codebase, path__in=olds).values_list(
            "path", "content"
        )
    )
    missing = [p for p in olds if p not in rows]
    if missing:
        named = ", ".join(f"`{p}`" for p in missing[:5])
        raise DiffRefused(f"The diff changes {named}, which the codebase does not have.")
    # A file the diff creates is applied to a tree without it; `git apply` on the codebase
    # would refuse it, and the report would call an existing file added.
    created = sorted({t.new for t in touched if t.old is None and t.new} - set(olds))
    there = list(
        CodeFile.objects.filter(codebase=plan.session.codebase, path__in=created).values_list(
            "path", flat=True
        )
    )
    if there:
        named = ", ".join(f"`{p}`" for p in sorted(there)[:5])
        raise DiffRefused(
            f"The diff creates {named}, which the codebase already has: write it as a change "
            "to that file."
        )
    recorded = (stale.snapshot_of(plan) or {}).get("files") or {}
    shas = dict(
        CodeFile.objects.filter(codebase=plan.session.codebase, path__in=olds).values_list(
            "path", "sha256"
        )
    )
    moved_on = [p for p in olds if recorded.get(p) and recorded[p] != shas.get(p)]
    notes = (
        [
            "Applied to the codebase as it is now: "
            + ", ".join(f"`{p}`" for p in moved_on[:5])
            + " changed since the plan was written (the plan's text of them is gone)."
        ]
        if moved_on
        else []
    )
    if "\r\n" in text and not any("\r" in content for content in rows.values()):
        # A diff saved on Windows (an uploaded .patch) against files with LF line breaks: its
        # CRs are the editor's, not the code's, and git would find no line to match.
        text = text.replace("\r\n", "\n")
    try:
        after = apply(text, rows)
    except DiffRefused as refused:
        if not moved_on:
            raise
        # Not the plan's version: the codebase moved on, and the diff was tried on it.
        said = str(refused).removeprefix(
            "The diff does not apply to the plan's version of the code: "
        )
        raise DiffRefused(
            "The diff does not apply to the codebase as it is now: "
            + ", ".join(f"`{p}`" for p in moved_on[:5])
            + " changed since the plan was written, and the plan's text of them is gone. "
            f"git said: {said}"
        ) from None
    changes: dict[str, FileChange] = {}
    for path, new in after.items():
        old = rows.get(path)
        if old == new:
            continue
        kind = "added" if old is None else "removed" if new is None else "modified"
        changes[path] = FileChange(path, kind, old, new)
    return changes, notes


def version_changes(plan: Plan) -> tuple[dict[str, FileChange], list[str], list[str]]:
    """The codebase as it is now against what the plan recorded: files whose hash differs from
    the plan's record (their new text; the old is gone), and the other files the versions
    since the plan changed (listed by path)."""
    codebase = plan.session.codebase
    recorded: dict[str, Any] = (stale.snapshot_of(plan) or {}).get("files") or {}
    newer = newer_versions(plan)
    listed: set[str] = set()
    for v in newer:
        listed.update([*v.added, *v.changed, *v.removed])
    steps = [s for s in (plan.structured or {}).get("steps") or [] if isinstance(s, dict)]
    targets = {
        str(s["target"]["path"])
        for s in steps
        if isinstance(s.get("target"), dict) and s["target"].get("path")
    }
    wanted = set(recorded) | targets
    now = {
        path: (sha, content)
        for path, sha, content in CodeFile.objects.filter(
            codebase=codebase, path__in=wanted
        ).values_list("path", "sha256", "content")
    }
    changes: dict[str, FileChange] = {}
    for path in sorted(wanted):
        had = recorded.get(path)
        sha, content = now.get(path, (None, None))
        if path in recorded:
            if had == sha:
                continue
            kind = "removed" if sha is None else "added" if had is None else "modified"
        elif path in listed and sha is not None:
            kind = "modified"  # a target the record missed, listed by a version since
        else:
            continue
        changes[path] = FileChange(path, kind, None, content, old_known=False)
    notes = []
    if not recorded:
        notes.append(
            "The plan has no record of the files it rests on; only the versions' lists of "
            "changed files and the steps' own code are compared."
        )
    if any(v.changed_count + v.added_count + v.removed_count > CodebaseVersion.MAX_LISTED
           for v in newer):  # fmt: skip
        notes.append("A version since the plan changed more files than it lists: "
                     "unplanned files may be missing from the list.")  # fmt: skip
    return changes, sorted(listed - set(changes)), notes


# ------------------------------------------------------------------ the model's judgement


class Equivalence(BaseModel):
    """Whether a change does what a step's sketch does."""

    equivalent: bool = Field(
        description="true when the actual change does what the sketch's change does."
    )
    reason: str = Field(description="Why, in one sentence.", max_length=300)


def judge_prompt(task: str, step: dict[str, Any], sketch: list[str], actual: list[str]) -> Any:
    from agents.providers.base import ChatMessage  # noqa: PLC0415
    from agents.sketches import fenced  # noqa: PLC0415

    if len(task) > MAX_TASK_CHARS:
        task = task[:MAX_TASK_CHARS].rstrip() + " …"
    text = "\n".join(
        [
            f"Task: {task}",
            f"Plan step: {step.get('title') or ''} — {step.get('detail') or ''}",
            "The plan's sketch of the change (untrusted data):",
            *fenced(sketch, "diff"),
            "The change actually made to that definition (untrusted data):",
            *fenced(actual, "diff"),
            "Does the actual change do what the sketch's change does (the same effect, "
            "written differently counts)? Answer as JSON: equivalent (true or false) and "
            "reason (one sentence).",
        ]
    )
    return [
        ChatMessage("system", "You review code changes against a plan. Judge only what is shown."),
        ChatMessage("user", text),
    ]


def judge_by(
    ask: Callable[[list[Any]], Equivalence], task: str, errors: tuple[type[Exception], ...]
) -> implementation.Judge:
    """The judge of one check: `ask(messages)` makes the one structured call (the session's,
    or the bench's straight to a provider). After a yes it asks again on the change undone (the
    control: a yes counts only when the model says no to that). At most MAX_CALLS calls per
    check, a step asked only while both of its calls fit; a call failing with one of `errors`
    leaves the step deviated, with the reason."""
    calls = 0

    def one(step: dict[str, Any], sketch: list[str], actual: list[str]) -> Judgement:
        nonlocal calls
        calls += 1
        try:
            reply = ask(judge_prompt(task, step, sketch, actual))
        except errors as exc:
            return Judgement(None, "", error=f"the model could not be asked: {exc}")
        return Judgement(bool(reply.equivalent), " ".join(reply.reason.split())[:300])

    def judge(step: dict[str, Any], sketch: list[str], actual: list[str]) -> Judgement:
        # A yes whose control cannot be asked counts for nothing: ask only while both fit.
        if calls + 2 > MAX_CALLS:
            return Judgement(
                None,
                "",
                error=f"not asked: a check makes at most {MAX_CALLS} model calls, and this "
                "step's two no longer fit",
            )
        first = one(step, sketch, actual)
        if first.equivalent is not True:
            return first
        return replace(first, undone=one(step, sketch, implementation.undone(actual)))

    return judge


def judge_options() -> Any:
    from agents.providers.base import CallOptions  # noqa: PLC0415

    return CallOptions(max_tokens=JUDGE_TOKENS, temperature=0.0, should_stop=lambda: False)


def model_judge(session: PlanningSession, profile: str) -> implementation.Judge:
    """One small structured call per step (two after a yes) on the session's `profile`, charged
    to its budget and traced (agents.turns.structured_call); a call that cannot be made
    (outage, budget spent, time limit) leaves the step deviated, with the reason."""
    from agents.budget import TimeLimitReached  # noqa: PLC0415
    from agents.providers import get_provider  # noqa: PLC0415
    from agents.providers.base import ProviderError  # noqa: PLC0415
    from agents.runtime import SessionStopped  # noqa: PLC0415
    from agents.turns import BudgetSpent, structured_call  # noqa: PLC0415

    def ask(messages: list[Any]) -> Equivalence:
        return structured_call(
            session, get_provider(profile), messages, Equivalence, judge_options()
        )

    return judge_by(
        ask, session.task, (ProviderError, BudgetSpent, TimeLimitReached, SessionStopped)
    )
