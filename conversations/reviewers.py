"""Reviewers, the use cases: the owner invites a user by name to one session's plan or to every
plan of a codebase (viewer, commenter or approver), removes them, and sets the approval rule;
an approver signs a version off (Approve or Request changes); everyone who may read the plan
sees the sign-offs. Who may do what is conversations.permissions.

A sign-off names the version it applies to and counts only while that version is the latest:
a new version resets every sign-off, and the page says which version reset it. The plan is
approved when the owner's rule is met on the latest version (any approver approves, or all of
them do, with none asking for changes); the version's review status then becomes Approved, as
an owner's or a staff review makes it, with a PlanReviewEvent in its history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from conversations import services
from conversations.admin_review import record_review
from conversations.models import (
    ApprovalRule,
    Plan,
    PlanningSession,
    Reviewer,
    SignOff,
)
from conversations.permissions import can_sign_off, has_plan_role

MAX_NOTE_CHARS = 2000
SCOPES = ("plan", "codebase")
"""What an invitation reaches: this session's plan, or every plan of its codebase."""
SETTLED = (Plan.Review.APPROVED, Plan.Review.CHANGES_REQUESTED, Plan.Review.REJECTED)
"""Review statuses sign-offs leave alone: approved already, or held by a staff review."""


class ReviewerError(Exception):
    """The invitation, rule or sign-off cannot be made as asked; the message says why."""


# ---------------------------------------------------------------- lookups


def get_plan_session_for(user: Any, session_id: int, role: str) -> PlanningSession:
    """The session whose plan `user` may use as `role` allows (viewer: read, commenter:
    comment, approver: sign off; the owner: all). Anyone else: SessionNotFound, as for a
    session that does not exist."""
    session = PlanningSession.objects.select_related("codebase").filter(pk=session_id).first()
    if session is None or not has_plan_role(user, session, role):
        raise services.SessionNotFound("That session does not exist.")
    return session


def reviewers_of(session: PlanningSession) -> QuerySet[Reviewer]:
    """Everyone invited to the session's plan, directly or through its codebase."""
    return (
        Reviewer.objects.filter(
            Q(session=session)
            | Q(codebase_id=session.codebase_id, codebase__owner_id=session.owner_id)
        )
        .filter(user__is_active=True)
        .select_related("user", "session", "codebase")
    )


def approvers_of(session: PlanningSession) -> list[Any]:
    """The users whose sign-off counts, in the order they were invited (a user invited twice,
    to the plan and to its codebase, once)."""
    found: dict[int, Any] = {}
    for invitation in reviewers_of(session).filter(role=Reviewer.Role.APPROVER):
        found.setdefault(invitation.user_id, invitation.user)
    return list(found.values())


def shared_with(user: Any) -> list[tuple[PlanningSession, Reviewer]]:
    """The sessions of other users whose plans `user` was invited to, newest first, each with
    the invitation that reaches it (the one with the highest role, when two do)."""
    from conversations.permissions import RANKS

    invitations = Reviewer.objects.filter(user_id=user.pk).exclude(
        Q(session__owner_id=user.pk) | Q(codebase__owner_id=user.pk)
    )
    best: dict[int, Reviewer] = {}
    sessions: dict[int, PlanningSession] = {}
    for invitation in invitations.select_related("session__codebase", "session__owner", "codebase"):
        if invitation.session is not None:
            found = [invitation.session]
        elif invitation.codebase is not None:
            found = list(
                PlanningSession.objects.filter(
                    codebase_id=invitation.codebase.pk, owner_id=invitation.codebase.owner_id
                ).select_related("codebase", "owner")
            )
        else:
            continue
        for session in found:
            held = best.get(session.pk)
            if held is None or RANKS[invitation.role] > RANKS[held.role]:
                best[session.pk] = invitation
                sessions[session.pk] = session
    ordered = sorted(sessions.values(), key=lambda s: s.created_at, reverse=True)
    return [(s, best[s.pk]) for s in ordered if s.plans.exists()]


# ---------------------------------------------------------------- the owner


def invite(owner: Any, session_id: int, username: Any, role: Any, scope: Any) -> Reviewer:
    """Invite the user named `username` to the session's plan (`scope` "plan") or to every plan
    of its codebase ("codebase") as `role`; inviting someone already invited there changes
    their role."""
    session = services.get_session_for(owner, session_id)
    if role not in Reviewer.Role.values:
        raise ReviewerError("Choose a role: viewer, commenter or approver.")
    if scope not in SCOPES:
        raise ReviewerError("Choose whether they review this plan or the whole codebase.")
    name = username.strip() if isinstance(username, str) else ""
    if not name:
        raise ReviewerError("Write the user name of the person to invite.")
    invitee = get_user_model().objects.filter(username=name, is_active=True).first()
    if invitee is None:
        raise ReviewerError(f"There is no user named “{name[:150]}”.")
    if invitee.pk == session.owner_id:
        raise ReviewerError("You own this plan already.")
    where: dict[str, Any] = (
        {"session": session} if scope == "plan" else {"codebase_id": session.codebase_id}
    )
    try:
        with transaction.atomic():
            invitation, _ = Reviewer.objects.update_or_create(
                user=invitee, **where, defaults={"role": role, "invited_by": owner}
            )
    except IntegrityError:
        raise ReviewerError("That invitation changed meanwhile; reload the page.") from None
    settle(session)
    return invitation


def remove(owner: Any, session_id: int, reviewer_id: int) -> Reviewer:
    """Take back an invitation that reaches the session's plan (their sign-offs stay in the
    history; they no longer count)."""
    session = services.get_session_for(owner, session_id)
    invitation = reviewers_of(session).filter(pk=reviewer_id).first()
    if invitation is None:
        raise services.SessionNotFound("That reviewer does not exist.")
    invitation.delete()
    settle(session)
    return invitation


def set_rule(owner: Any, session_id: int, rule: Any) -> PlanningSession:
    """Any approver's approval makes the plan approved, or only all of theirs."""
    session = services.get_session_for(owner, session_id)
    if rule not in ApprovalRule.values:
        raise ReviewerError("Choose any approver or all approvers.")
    PlanningSession.objects.filter(pk=session.pk).update(approval_rule=rule)
    session.approval_rule = rule
    settle(session)
    return session


# ---------------------------------------------------------------- approvers


def sign_off(user: Any, session_id: int, version: int, verdict: Any, note: Any = "") -> SignOff:
    """Record `user`'s verdict (approve, or changes) on version `version`, the latest; the plan
    becomes approved when that meets the rule."""
    session = get_plan_session_for(user, session_id, Reviewer.Role.APPROVER)
    if not can_sign_off(user, session):
        raise services.SessionNotFound("That session does not exist.")
    plan = Plan.objects.filter(session=session, version=version).first()
    if plan is None:
        raise services.SessionNotFound("That plan version does not exist.")
    if verdict not in SignOff.Verdict.values:
        raise ReviewerError("Approve or request changes.")
    note = note.strip() if isinstance(note, str) else ""
    if len(note) > MAX_NOTE_CHARS:
        raise ReviewerError(f"Keep the note under {MAX_NOTE_CHARS} characters.")
    if verdict == SignOff.Verdict.CHANGES and not note:
        raise ReviewerError("Say what should change.")
    with transaction.atomic():
        latest = session.plans.order_by("-version").values_list("version", flat=True).first()
        if latest != plan.version:
            raise ReviewerError(
                f"v{plan.version} is not the latest version (v{latest} is); sign that one off."
            )
        if plan.review_status == Plan.Review.APPROVED:
            raise ReviewerError(
                f"v{plan.version} is approved already; a new version asks for sign-offs again."
            )
        made = SignOff.objects.create(
            session=session, plan=plan, reviewer=user, verdict=verdict, note=note
        )
    settle(session, by=user)
    return made


@dataclass
class Verdict:
    """One approver's line in the sign-off panel."""

    user: Any
    sign_off: SignOff | None
    """Their newest sign-off on any version; None: they have not signed off yet."""
    latest: int | None

    @property
    def current(self) -> bool:
        """Whether it applies to the latest version (else a newer version reset it)."""
        return self.sign_off is not None and self.sign_off.plan.version == self.latest

    @property
    def approves(self) -> bool:
        return self.current and self.sign_off is not None and self.sign_off.verdict == "approve"

    @property
    def asks_changes(self) -> bool:
        return self.current and self.sign_off is not None and self.sign_off.verdict == "changes"


@dataclass
class SignOffs:
    rule: str
    verdicts: list[Verdict]
    latest: int | None

    @property
    def approved_count(self) -> int:
        return sum(v.approves for v in self.verdicts)

    @property
    def met(self) -> bool:
        """The owner's rule on the latest version: any approver approves, or every approver
        approves (so none asks for changes)."""
        if not self.verdicts or self.latest is None:
            return False
        if self.rule == ApprovalRule.ALL:
            return all(v.approves for v in self.verdicts)
        return any(v.approves for v in self.verdicts)


def sign_offs(session: PlanningSession) -> SignOffs:
    """Every approver's current verdict on the session's plan, and whether the rule is met."""
    latest = session.plans.order_by("-version").values_list("version", flat=True).first()
    newest: dict[int, SignOff] = {}
    for made in SignOff.objects.filter(session=session).select_related("plan"):
        newest[made.reviewer_id] = made  # ordered oldest first: the last one wins
    verdicts = [Verdict(user, newest.get(user.pk), latest) for user in approvers_of(session)]
    return SignOffs(rule=session.approval_rule, verdicts=verdicts, latest=latest)


def settle(session: PlanningSession, by: Any = None) -> bool:
    """Make the latest version Approved when the rule is met (compare-and-swap on its review
    status, which a staff review may change meanwhile); True when it did."""
    state = sign_offs(session)
    if not state.met or state.latest is None:
        return False
    plan = Plan.objects.filter(session=session, version=state.latest).first()
    if plan is None or plan.review_status in SETTLED:
        return False
    if by is None:
        approving = [v for v in state.verdicts if v.approves and v.sign_off is not None]
        by = max(approving, key=lambda v: v.sign_off.created_at if v.sign_off else 0).user
    previous = plan.review_status
    with transaction.atomic():
        moved = Plan.objects.filter(pk=plan.pk, review_status=previous).update(
            review_status=Plan.Review.APPROVED, reviewer=by, reviewed_at=timezone.now()
        )
        if not moved:
            return False
        plan.refresh_from_db()
        record_review(plan, by, previous=previous)
    from planagents.streaming import publish

    publish(session.pk, {"type": "plan.updated", "version": plan.version})
    return True
