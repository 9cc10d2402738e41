"""Approving a plan as a whole, on its page: the last step from first draft to approved.

The approval is of one version: it sets that version's review status (the field staff set in
the admin), names who approved it and when, and leaves a PlanReviewEvent in the plan's history,
as an admin review does. A later version starts as a draft, so an edit after approval is never
approved by accident.

Approving does not require every section to be approved first. Section approvals are a
reviewer's checklist, not a gate: requiring each one would turn the decision into a dozen
clicks, and a reviewer who read the plan as a whole is entitled to approve it. What the product
owes is honesty about it, so the page says how many sections were not approved one by one, and
which. Two things do block: approving any version but the latest (the page showed something
that is no longer the plan), and an owner approving over a staff reviewer who asked for changes
or rejected the version (staff may; the owner makes a new version instead)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.plan_sections import SectionInfo, sections_of
from conversations import services
from conversations.admin_review import record_review
from conversations.models import Plan, PlanningSession
from conversations.permissions import can_act_in_session
from conversations.reviewers import approvers_of, sign_offs

HELD_BY_STAFF = (Plan.Review.CHANGES_REQUESTED, Plan.Review.REJECTED)
"""Review outcomes only staff may turn into an approval of the same version."""


class ApprovalError(Exception):
    """The plan cannot be approved as asked; the message says why and what to do."""


def unapproved_sections(plan: Plan) -> list[SectionInfo]:
    """The sections of `plan` nobody approved individually, in document order."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    approved = set(plan.approved_sections or [])
    return [info for info in sections_of(data) if info.key not in approved]


def can_approve(user: Any, plan: Plan) -> bool:
    """Whether `user` (who may see the plan) may approve it now, latest version aside."""
    if plan.review_status == Plan.Review.APPROVED:
        return False
    return plan.review_status not in HELD_BY_STAFF or bool(getattr(user, "is_staff", False))


def approve_plan(user: Any, session_id: int, version: int) -> Plan:
    """Approve version `version` of the session's plan for its owner; idempotent (approving an
    approved version changes nothing and records nothing)."""
    session: PlanningSession = services.get_session_for(user, session_id)
    with transaction.atomic():
        plan = Plan.objects.filter(session=session, version=version).first()
        if plan is None:
            raise services.SessionNotFound("That plan version does not exist.")
        latest = (
            Plan.objects.filter(session=session)
            .order_by("-version")
            .values_list("version", flat=True)
            .first()
        )
        if latest != plan.version:
            raise ApprovalError(
                f"v{plan.version} is not the latest version (v{latest} is); "
                "read the latest one and approve that."
            )
        previous = plan.review_status
        if previous == Plan.Review.APPROVED:
            return plan
        if approvers_of(session):
            raise ApprovalError(
                "This plan has approvers: it is approved when their sign-offs meet your rule "
                "(any or all of them). Remove the approvers to approve it yourself."
            )
        if not can_approve(user, plan):
            raise ApprovalError(
                f"A reviewer marked v{plan.version} “{plan.get_review_status_display()}”; "
                "change the plan (edit or regenerate a section) and approve the new version."
            )
        # Compare-and-swap on the status the decision was made from: a staff review landing
        # meanwhile is not silently overwritten.
        moved = Plan.objects.filter(pk=plan.pk, review_status=previous).update(
            review_status=Plan.Review.APPROVED, reviewer=user, reviewed_at=timezone.now()
        )
        if not moved:
            raise ApprovalError("The review status changed meanwhile; reload the page.")
        plan.refresh_from_db()
        record_review(plan, user, previous=previous)
    from planagents.streaming import publish

    publish(session.pk, {"type": "plan.updated", "version": plan.version})
    return plan


def approval_context(plan: Plan, latest: int | None, viewer: Any = None) -> dict[str, Any]:
    """What the plan page says about the version's approval, and whether it offers Approve:
    to the owner (`viewer`, by default), when no approver was invited (else their sign-offs
    and the owner's rule decide, conversations.reviewers)."""
    unapproved = unapproved_sections(plan)
    session = plan.session
    viewer = session.owner if viewer is None else viewer
    signed = sign_offs(session)
    return {
        "unapproved": unapproved,
        "unapproved_labels": ", ".join(info.label for info in unapproved),
        "latest_version": latest,
        "can_approve_plan": latest == plan.version
        and can_act_in_session(viewer, session)
        and not signed.verdicts
        and can_approve(viewer, plan),
        "held_by_staff": plan.review_status in HELD_BY_STAFF,
        "sign_offs": signed,
    }
