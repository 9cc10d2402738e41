"""A human's chat messages are limited per session and per user, with a message that says how
long to wait: each one is stored, prompted and, at a checkpoint, restarts the agents."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.workflow import CHECKPOINT
from conversations import services
from conversations.models import Message, PlanningSession, PlanningState

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _small_limits(settings):
    settings.PLANAGENTS_SESSION_MESSAGES_PER_MINUTE = 3
    settings.PLANAGENTS_USER_MESSAGES_PER_MINUTE = 5


@pytest.fixture
def running(user, codebase, monkeypatch):
    """A session start_session made, its run not dispatched (the agents play no part here)."""

    def _running() -> PlanningSession:
        monkeypatch.setattr(services, "_dispatch_run", lambda session_id: None)
        return services.start_session(
            user, codebase=codebase, task="Add rate limiting to login", mode="planning",
            agent_a_profile="fake", agent_b_profile="fake",
        )  # fmt: skip

    return _running


def typed(session: PlanningSession) -> int:
    """The messages the human typed: the task, the session's first message, is not one."""
    return Message.objects.filter(session=session, role=Message.Role.USER, seq__gt=1).count()


def test_a_session_takes_the_limit_of_messages_in_a_minute_and_refuses_the_next(user, running):
    session = running()
    # The task is the session's first message, from the form: all three are the human's own.
    for n in range(3):
        services.post_user_message(user, session.pk, f"note {n}")

    with pytest.raises(services.TooManyMessages, match=r"3 messages in this session .* wait \d+ s"):
        services.post_user_message(user, session.pk, "one more")
    assert typed(session) == 3


def test_messages_older_than_a_minute_no_longer_count(user, running):
    session = running()
    for n in range(3):
        services.post_user_message(user, session.pk, f"note {n}")
    Message.objects.filter(session=session).update(
        created_at=timezone.now() - timedelta(seconds=61)
    )

    services.post_user_message(user, session.pk, "a minute later")


def test_a_user_spreading_messages_over_sessions_meets_the_per_user_limit(user, running):
    first, second = running(), running()
    for n in range(3):
        services.post_user_message(user, first.pk, f"note {n}")
    # Sessions' tasks are not typed messages: two more make the five.
    for n in range(2):
        services.post_user_message(user, second.pk, f"other {n}")

    with pytest.raises(services.TooManyMessages, match="across your sessions"):
        services.post_user_message(user, second.pk, "and another")


def test_change_requests_at_a_checkpoint_are_limited_too(user, running):
    session = running()
    for n in range(3):
        PlanningSession.objects.filter(pk=session.pk).update(
            status=PlanningSession.Status.AWAITING_HUMAN
        )
        PlanningState.objects.filter(session=session).update(current_node=CHECKPOINT)
        services.post_user_message(user, session.pk, f"change {n}")
    PlanningSession.objects.filter(pk=session.pk).update(
        status=PlanningSession.Status.AWAITING_HUMAN
    )
    PlanningState.objects.filter(session=session).update(current_node=CHECKPOINT)

    with pytest.raises(services.TooManyMessages):
        services.request_changes(user, session.pk, "and yet another change")
    assert PlanningState.objects.get(session=session).current_node == CHECKPOINT
