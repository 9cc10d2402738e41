"""Approving a plan as a whole on its page: the owner takes the latest version from draft to
approved, the approval is recorded in the review history, a later version starts as a draft,
and the page says how many sections nobody approved one by one."""

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import PlanReviewEvent
from agents.plan import build_version
from agents.plan_sections import sections_of
from conversations.models import Plan, PlanningSession, PlanningState
from tests.conversations.test_plan_sections import edit, plan_data, real_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def planned(user, codebase):
    """A completed session with plan v1 (seven sections: one step), a draft."""
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    data = plan_data(real_path(codebase))
    markdown, structured = build_version(data, codebase, title=session.title)
    Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)
    return session


def approve(client, session, version=1):
    url = reverse("conversations:plan_approve", args=[session.pk])
    return client.post(url, {"version": version}, follow=True)


def page(client, session, version=None):
    url = reverse("conversations:plan", args=[session.pk])
    return client.get(url, {"version": version} if version else {}).content.decode()


def test_the_owner_approves_the_plan_and_the_approval_is_recorded(client, user, planned):
    client.force_login(user)
    before = page(client, planned)
    assert "Plan v1 is not approved." in before
    assert ">Approve plan v1</button>" in before
    assert "7 of 7 sections are not individually approved: Summary, Decisions, Step 1" in before

    response = approve(client, planned)
    assert response.status_code == 200
    plan = Plan.objects.get(session=planned, version=1)
    assert (plan.review_status, plan.reviewer) == ("approved", user)
    assert plan.reviewed_at is not None
    event = PlanReviewEvent.objects.get(plan=plan)
    assert (event.previous_status, event.status, event.reviewer) == ("draft", "approved", user)
    shown = response.content.decode()
    assert "Plan v1 approved. 7 sections not approved one by one." in shown
    assert "<strong>Plan v1 is approved</strong> by alice on" in shown
    assert "7 of 7 sections were not individually approved" in shown
    assert ">Approve plan v1</button>" not in shown
    assert 'class="muted approved-by">by alice</span>' in shown  # in the versions list


def test_a_plan_whose_sections_were_all_approved_says_so(client, user, planned):
    client.force_login(user)
    plan = Plan.objects.get(session=planned)
    plan.approved_sections = [s.key for s in sections_of(plan.structured)]
    plan.save()
    assert "Every section is approved." in page(client, planned)
    assert "Every section was approved individually." in approve(client, planned).content.decode()


def test_approving_twice_records_one_approval(client, user, planned):
    client.force_login(user)
    approve(client, planned)
    approve(client, planned)
    assert PlanReviewEvent.objects.filter(plan__session=planned).count() == 1


def test_a_later_version_starts_unapproved(client, user, planned):
    client.force_login(user)
    approve(client, planned)
    edit(client, planned, "summary", "Count failed logins per user and per address.")
    v1, v2 = Plan.objects.filter(session=planned).order_by("version")
    assert (v1.review_status, v2.review_status, v2.reviewer) == ("approved", "draft", None)
    latest = page(client, planned)
    assert "Plan v2 is not approved." in latest and ">Approve plan v2</button>" in latest
    older = page(client, planned, 1)
    assert "Plan v1 is approved" in older


def test_only_the_latest_version_can_be_approved(client, user, planned):
    client.force_login(user)
    edit(client, planned, "summary", "Count failed logins per user and per address.")
    assert "Only the latest version can be approved" in page(client, planned, 1)
    response = approve(client, planned, version=1)
    assert "v1 is not the latest version (v2 is)" in response.content.decode()
    assert set(Plan.objects.values_list("review_status", flat=True)) == {"draft"}
    assert not PlanReviewEvent.objects.exists()


def test_the_owner_does_not_approve_over_a_reviewer_who_asked_for_changes(client, user, planned):
    Plan.objects.filter(session=planned).update(review_status="changes_requested")
    client.force_login(user)
    assert ">Approve plan v1</button>" not in page(client, planned)
    response = approve(client, planned)
    assert "change the plan (edit or regenerate a section)" in response.content.decode()
    assert Plan.objects.get(session=planned).review_status == "changes_requested"

    user.is_staff = True  # a staff reviewer may overrule the earlier review
    user.save()
    approve(client, planned)
    event = PlanReviewEvent.objects.get(plan__session=planned)
    assert (event.previous_status, event.status) == ("changes_requested", "approved")


def test_another_user_gets_404_and_nothing_changes(client, other_user, planned):
    client.force_login(other_user)
    url = reverse("conversations:plan_approve", args=[planned.pk])
    assert client.post(url, {"version": 1}).status_code == 404
    assert Plan.objects.get(session=planned).review_status == "draft"
    assert not PlanReviewEvent.objects.exists()


def test_approving_needs_a_post_with_the_csrf_token_and_a_login(user, planned):
    url = reverse("conversations:plan_approve", args=[planned.pk])
    anonymous = Client()
    assert anonymous.post(url, {"version": 1})["Location"].startswith("/accounts/login/")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.get(url).status_code == 405
    assert strict.post(url, {"version": 1}).status_code == 403
    assert Plan.objects.get(session=planned).review_status == "draft"
