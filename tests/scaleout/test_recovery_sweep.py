"""The workers' sweep dispatches again a running session whose job died, and only that."""

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import PlanningSession, PlanningState
from conversations.services import recover_stalled_sessions
from conversations.tasks import lease_name
from planagents import leases

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user, codebase, settings):
    settings.PLANAGENTS_JOB_LEASE_SECONDS = 30
    session = PlanningSession.objects.create(
        owner=user,
        codebase=codebase,
        title="t",
        task="t",
        agent_a_profile="fake",
        agent_b_profile="fake",
        heartbeat_at=timezone.now() - timedelta(seconds=120),
    )
    PlanningState.objects.create(session=session)
    return session


def test_it_dispatches_a_running_session_with_no_heartbeat_and_no_lease(session):
    assert recover_stalled_sessions() == [session.pk]
    assert recover_stalled_sessions() == []  # its heartbeat was reset by the claim


def test_it_leaves_a_session_whose_job_still_holds_the_lease(session):
    assert leases.acquire(lease_name(session.pk), "alive", 30)
    assert recover_stalled_sessions() == []


def test_it_leaves_sessions_that_wait_for_the_human(session):
    PlanningSession.objects.filter(pk=session.pk).update(
        status=PlanningSession.Status.AWAITING_HUMAN
    )
    assert recover_stalled_sessions() == []
