"""Who may do what. The default for everything is: the owner, and nobody else.

A session's whole record (its transcript, trace, controls) is the owner's alone
(`can_view_session`, `can_act_in_session`). Its plan is also readable by the reviewers the owner
invited (conversations.models.Reviewer), each as far as their role goes: a viewer reads the
plan, its versions, diffs and exports; a commenter also comments; an approver also signs off.
Running, revising, editing, sharing and inviting stay the owner's."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q

from conversations.models import PlanningSession, Reviewer

User = AbstractBaseUser | AnonymousUser

OWNER = "owner"
"""The role `plan_role` names for the session's owner."""
RANKS = {Reviewer.Role.VIEWER: 1, Reviewer.Role.COMMENTER: 2, Reviewer.Role.APPROVER: 3, OWNER: 4}
"""Each role may do what every lower one may."""


def can_view_session(user: User, session: PlanningSession) -> bool:
    return bool(user.is_authenticated and session.owner_id == user.pk)


def can_act_in_session(user: User, session: PlanningSession) -> bool:
    return can_view_session(user, session)


def reviews_of(user: User, session: PlanningSession) -> list[Reviewer]:
    """The invitations that reach `session` for `user`: to it, or to its owner's codebase."""
    if not user.is_authenticated:
        return []
    return list(
        Reviewer.objects.filter(user_id=user.pk, user__is_active=True).filter(
            Q(session_id=session.pk)
            | Q(codebase_id=session.codebase_id, codebase__owner_id=session.owner_id)
        )
    )


def plan_role(user: User, session: PlanningSession) -> str | None:
    """The owner, the highest role an invitation gives `user` on the session's plan, or None."""
    if can_view_session(user, session):
        return OWNER
    roles = [str(r.role) for r in reviews_of(user, session)]
    return max(roles, key=RANKS.__getitem__, default=None)


def has_plan_role(user: User, session: PlanningSession, role: str) -> bool:
    """Whether `user` may do on the plan what `role` may (the owner may do everything)."""
    found = plan_role(user, session)
    return found is not None and RANKS[found] >= RANKS[role]


def can_read_plan(user: User, session: PlanningSession) -> bool:
    return has_plan_role(user, session, Reviewer.Role.VIEWER)


def can_comment_on_plan(user: User, session: PlanningSession) -> bool:
    return has_plan_role(user, session, Reviewer.Role.COMMENTER)


def can_sign_off(user: User, session: PlanningSession) -> bool:
    """Only an invited approver signs off; the owner approves through plan_approval."""
    return plan_role(user, session) == Reviewer.Role.APPROVER
