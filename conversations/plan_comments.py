"""Comments on a plan, the use cases: write one on a step, a section or a cited line, answer
one, resolve or reopen a thread, and gather the open ones for a prompt ("regenerate with the
open comments"). Where a comment sits in a version is conversations.comments; who may comment
is `can_comment`, the one place a later reviewer role extends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone

from agents.plan_sections import SectionError, section_info, section_text, sections_of
from conversations import comments, services
from conversations.models import (
    CommentRequest,
    Message,
    Plan,
    PlanComment,
    PlanningSession,
    Reviewer,
)
from conversations.permissions import can_comment_on_plan
from conversations.reviewers import get_plan_session_for

MAX_COMMENT_CHARS = 4000
PROMPT_COMMENT_CHARS = 600
"""A comment is cut to this in a prompt: the embedded model reads about 4k tokens in all."""
PROMPT_THREADS = 12
"""At most this many threads go into one prompt, oldest first; the page says the rest waited."""


class CommentError(Exception):
    """The comment cannot be written or changed as asked; the message says why."""


def can_comment(user: AbstractBaseUser | AnonymousUser, session: PlanningSession) -> bool:
    """Who may write and answer comments on the session's plan: its owner and the reviewers
    invited as commenters or approvers (regenerating with them stays the owner's)."""
    return can_comment_on_plan(user, session)


def can_resolve(user: AbstractBaseUser | AnonymousUser, thread: PlanComment) -> bool:
    """Who may resolve or reopen a thread: a commenter who is the plan's owner or the thread's
    author."""
    return can_comment(user, thread.session) and user.pk in (
        thread.session.owner_id,
        thread.author_id,
    )


def _session(user: Any, session_id: int) -> PlanningSession:
    session = get_plan_session_for(user, session_id, Reviewer.Role.COMMENTER)
    if not can_comment(user, session):
        raise services.SessionNotFound("That session does not exist.")
    return session


def clean_text(text: Any) -> str:
    text = text.strip() if isinstance(text, str) else ""
    if not text:
        raise CommentError("Write the comment first.")
    if "\x00" in text:
        raise CommentError("A comment is text: it cannot hold a NUL character.")
    if len(text) > MAX_COMMENT_CHARS:
        raise CommentError(f"Keep a comment under {MAX_COMMENT_CHARS} characters.")
    return text


# ---------------------------------------------------------------- writing


def add_comment(user: Any, session_id: int, version: int, where: str, text: Any) -> PlanComment:
    """A new thread on version `version`: `where` is a section key (step-2, summary…) or
    "line:<path>:<line>" for a line the version cites."""
    session = _session(user, session_id)
    plan = Plan.objects.filter(session=session, version=version).first()
    if plan is None:
        raise services.SessionNotFound("That plan version does not exist.")
    latest = session.plans.order_by("-version").values_list("version", flat=True).first()
    if latest != plan.version:
        # What a comment says is read against the plan as it is now; an old version's page
        # shows its threads placed there, read-only.
        raise CommentError(f"v{version} is not the latest version (v{latest} is); comment there.")
    text = clean_text(text)
    kind, anchor = anchor_in(plan, where)
    return PlanComment.objects.create(
        session=session, plan=plan, author=user, anchor_kind=kind, anchor=anchor, text=text
    )


def anchor_in(plan: Plan, where: Any) -> tuple[str, dict[str, Any]]:
    """The anchor of a new thread on `where` of version `plan`: a section key (step-2,
    summary…) or "line:<path>:<line>" for a line the version cites."""
    where = where if isinstance(where, str) else ""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    if where.startswith("line:"):
        value = where.removeprefix("line:")
        anchor = comments.line_anchor(value)
        if anchor is None or value not in comments.cited_lines(data):
            raise CommentError("That line is not cited in this version.")
        return comments.LINE, anchor
    try:
        return comments.anchor_for(data, where)
    except SectionError:
        raise CommentError("This plan has no such section.") from None


def targets(plan: Plan) -> list[tuple[str, str]]:
    """What a new thread on version `plan` may be about, as (form value, label)."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    return [(info.key, info.label) for info in sections_of(data)] + [
        (f"line:{line}", line) for line in comments.cited_lines(data)
    ]


def _thread(session: PlanningSession, comment_id: int) -> PlanComment:
    thread = (
        PlanComment.objects.select_related("session")
        .filter(session=session, pk=comment_id, parent__isnull=True)
        .first()
    )
    if thread is None:
        raise services.SessionNotFound("That comment does not exist.")
    return thread


def reply(user: Any, session_id: int, comment_id: int, text: Any) -> PlanComment:
    """An answer in thread `comment_id`, on the same anchor and the newest version."""
    session = _session(user, session_id)
    thread = _thread(session, comment_id)
    text = clean_text(text)
    latest = session.plans.order_by("-version").first() or thread.plan
    return PlanComment.objects.create(
        session=session,
        plan=latest,
        parent=thread,
        author=user,
        anchor_kind=thread.anchor_kind,
        anchor=thread.anchor,
        text=text,
    )


def set_status(user: Any, session_id: int, comment_id: int, status: str) -> PlanComment:
    """Resolve or reopen thread `comment_id` (compare-and-swap: a second click changes
    nothing and says so)."""
    session = _session(user, session_id)
    thread = _thread(session, comment_id)
    if not can_resolve(user, thread):
        raise services.SessionNotFound("That comment does not exist.")
    # Only then the form: another user's request is a 404 whatever it holds.
    if status not in PlanComment.Status.values:
        raise CommentError("A thread is open or resolved.")
    resolved = status == PlanComment.Status.RESOLVED
    moved = (
        PlanComment.objects.filter(pk=thread.pk)
        .exclude(status=status)
        .update(
            status=status,
            resolved_by=user if resolved else None,
            resolved_at=timezone.now() if resolved else None,
        )
    )
    if not moved:
        raise CommentError(f"That thread is {status} already.")
    thread.refresh_from_db()
    return thread


# ---------------------------------------------------------------- reading


@dataclass
class Thread:
    comment: PlanComment
    placement: comments.Placement
    replies: list[PlanComment] = field(default_factory=list)
    asked: list[tuple[CommentRequest, Plan | None, str]] = field(default_factory=list)
    """The regenerations asked to address it, each with the version it wrote (None: not yet,
    or it failed) and what it regenerated ("Step 1", "the whole plan")."""

    @property
    def is_open(self) -> bool:
        return self.comment.status == PlanComment.Status.OPEN

    @property
    def where(self) -> str:
        """The anchor as it was written on, in a few words."""
        return comments.label(self.comment.anchor_kind, self.comment.anchor)


def threads(session: PlanningSession, plan: Plan) -> list[Thread]:
    """Every thread of the session's plan, placed in version `plan`, oldest first."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    rows = list(
        PlanComment.objects.filter(session=session).select_related("author", "plan", "resolved_by")
    )
    found = {
        c.pk: Thread(c, comments.place(c.anchor_kind, c.anchor, data))
        for c in rows
        if c.parent_id is None
    }
    for c in rows:
        if c.parent_id in found:
            found[c.parent_id].replies.append(c)
    plans = {p.version: p for p in session.plans.all()}
    requests = CommentRequest.objects.filter(session=session).select_related("base", "message")
    finished = finished_turns(session.pk)
    for request in requests.prefetch_related("comments"):
        result = written_by(request, plans, finished)
        what = (
            section_info(request.base.structured, request.section).label
            if request.section
            else "the whole plan"
        )
        for c in request.comments.all():
            if c.pk in found:
                found[c.pk].asked.append((request, result, what))
    return list(found.values())


@dataclass
class Addressed:
    """One comment a version was asked to address, as the compare page lists it."""

    thread: Thread
    what: str
    """What the request regenerated ("Step 1", "the whole plan")."""

    @property
    def state(self) -> str:
        """Where the comment stands in the newer version compared: open, resolved or outdated."""
        return "outdated" if self.thread.placement.outdated else str(self.thread.comment.status)


def addressed_between(
    session: PlanningSession, old: Plan, new: Plan
) -> list[tuple[Plan, list[Addressed]]]:
    """For each version after `old` up to `new` that a comment request wrote, the comments it
    was asked to address, with their state as placed in `new`; oldest version first."""
    found: dict[int, tuple[Plan, list[Addressed]]] = {}
    for thread in threads(session, new):
        for _request, result, what in thread.asked:
            if result is not None and old.version < result.version <= new.version:
                found.setdefault(result.version, (result, []))[1].append(Addressed(thread, what))
    return [found[v] for v in sorted(found)]


def written_by(
    request: CommentRequest, plans: dict[int, Plan], finished: set[str] | None = None
) -> Plan | None:
    """The version a request wrote: the first version after its base, written after the
    request, by what the request started. For a section, the base's successor if it is a
    regeneration of that section and this request's Agent A turn finished (agents.plan_writer
    writes nothing else; its turn key is "regenerate:<the request's seq>"): a request whose
    job failed before its turn is not credited with the version a second request wrote, as
    it was on the page once. For a Revise, the agents' first version after it. `finished`: the
    session's finished turn keys, when the caller has them."""
    later = sorted(
        (p for v, p in plans.items() if v > request.base.version), key=lambda p: p.version
    )
    if request.section:
        if finished is None:
            finished = finished_turns(request.session_id)
        if f"regenerate:{request.message.seq}" not in finished:
            return None
    for plan in later:
        if plan.created_at < request.message.created_at:
            continue
        if request.section:
            label = section_info(request.base.structured, request.section).label
            ok = plan.version == request.base.version + 1 and plan.note.startswith(
                f"Regenerated {label}"
            )
            return plan if ok and plan.author_kind == Plan.Author.REGENERATE else None
        if plan.author_kind == Plan.Author.AGENT:
            return plan
    return None


def finished_turns(session_id: int) -> set[str]:
    """The turn keys of the session's finished agent turns."""
    rows = Message.objects.filter(
        session_id=session_id, turn_key__isnull=False, state=Message.State.COMPLETE
    ).values_list("turn_key", flat=True)
    return {key for key in rows if key}


def open_threads(session: PlanningSession, plan: Plan, key: str | None = None) -> list[Thread]:
    """The threads a regeneration of version `plan` is asked to address: open and placed in
    it (an outdated one is about something the plan no longer has). With `key`, those on that
    section, and those on a cited line the section's text cites."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    found = [t for t in threads(session, plan) if t.is_open and not t.placement.outdated]
    if key is None:
        return found
    text = section_text(data, key)
    return [
        t
        for t in found
        if t.placement.key == key or (t.placement.line and t.placement.line in text)
    ]


def prompt_block(found: list[Thread]) -> str:
    """The open comments as a prompt gives them: each with its number and anchor, its answers
    under it. The text is the commenter's, cut to PROMPT_COMMENT_CHARS."""
    lines = ["Open review comments to address (each says what it is about):"]
    for t in found[:PROMPT_THREADS]:
        c = t.comment
        where = t.where
        if t.placement.key and t.placement.key.startswith("step-"):
            where = f"Step {t.placement.key.removeprefix('step-')}, {where}"
        lines.append(f"- Comment #{c.pk} on {where}{_through(c)}: {_cut(c.text)}")
        lines += [f"  - Answer{_through(r)}: {_cut(r.text)}" for r in t.replies]
    return "\n".join(lines)


def _through(comment: PlanComment) -> str:
    """Who wrote a comment, when it came through a share link: a name anyone could type, so
    the prompt says it is one."""
    if not comment.via_link:
        return ""
    return f" (from “{_cut(comment.guest_name)}”, a reader without an account, via a share link)"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PROMPT_COMMENT_CHARS else text[: PROMPT_COMMENT_CHARS - 1] + "…"


def record_request(
    session: PlanningSession, base: Plan, section: str, message: Message, found: list[Thread]
) -> CommentRequest:
    """Which comments a regeneration's prompt held."""
    request = CommentRequest.objects.create(
        session=session, base=base, section=section, message=message
    )
    request.comments.set([t.comment for t in found[:PROMPT_THREADS]])
    return request


# ---------------------------------------------------------------- the whole plan


def revise_with_comments(user: Any, session_id: int) -> CommentRequest:
    """Revise the latest plan with its open comments as the change request: the workflow runs
    the proposal, review and validation again on them (conversations.services.revise, then
    request_changes), and the approved result is the next version. The owner's alone."""
    session = services.get_session_for(user, session_id)
    plan = session.plans.order_by("-version").first()
    if plan is None:
        raise CommentError("This session has no plan yet.")
    found = open_threads(session, plan)
    if not found:
        raise CommentError("There are no open comments to revise with.")
    with transaction.atomic():
        notes = services.revise(user, session_id)
        text = "\n\n".join(p for p in (notes, prompt_block(found)) if p)
        message = services.request_changes(user, session_id, text)
        return record_request(session, plan, "", message, found)
