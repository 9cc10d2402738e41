"""Who may do what. The default for everything is: the owner, and nobody else."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from conversations.models import PlanningSession


def can_view_session(user: AbstractBaseUser | AnonymousUser, session: PlanningSession) -> bool:
    return bool(user.is_authenticated and session.owner_id == user.pk)


def can_act_in_session(user: AbstractBaseUser | AnonymousUser, session: PlanningSession) -> bool:
    return can_view_session(user, session)
