"""?version= on the plan pages: a crafted value is a missing plan or the latest, never a 500."""

import pytest
from django.urls import reverse

from conversations.models import Plan, PlanningSession, PlanningState

pytestmark = pytest.mark.django_db


@pytest.fixture
def session_with_plan(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Add rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    Plan.objects.create(session=session, version=1, markdown="# Plan\n\nDo it.\n")
    return session


@pytest.mark.parametrize("page", ["conversations:plan", "conversations:plan_download"])
@pytest.mark.parametrize("version", ["²", "٣", "9" * 5000, "-1", "1.0"])
def test_a_crafted_version_shows_the_latest_plan(client, user, session_with_plan, page, version):
    client.force_login(user)
    response = client.get(reverse(page, args=[session_with_plan.pk]), {"version": version})
    assert response.status_code == 200


def test_a_version_that_does_not_exist_is_not_found(client, user, session_with_plan):
    client.force_login(user)
    url = reverse("conversations:plan", args=[session_with_plan.pk])
    assert client.get(url, {"version": "2"}).status_code == 404
    assert client.get(url, {"version": "1"}).status_code == 200
