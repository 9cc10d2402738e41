"""The plan's admin page shows a reviewer the whole picture: the plan rendered and sanitised,
its decisions, the other versions, the diff to the previous one, the session's cost against
its budget, and every review change made so far."""

import pytest
from django.urls import reverse

from agents.models import LLMCall, PlanReviewEvent
from conversations.models import Message, Plan, PlanningSession

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('plan')</script>"


@pytest.fixture
def staff(client, django_user_model):
    reviewer = django_user_model.objects.create_superuser("reviewer", password="pw-long-enough-1")
    client.force_login(reviewer)
    return reviewer


@pytest.fixture
def plans(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limits", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
        calls_used=7, call_budget=200, tokens_used=1234, token_budget=500_000,
    )  # fmt: skip
    Message.objects.create(session=session, seq=1, role="agent", agent="A", cost_usd=0.0125)
    Message.objects.create(session=session, seq=2, role="agent", agent="B", cost_usd=0.0025)
    LLMCall.objects.create(session=session, profile="fake", duration_ms=1500)
    v1 = Plan.objects.create(
        session=session, version=1,
        markdown="# Plan\n\n## Summary\nCount failures in memory.\n\n## Risks\nRestarts reset counts.",
        structured={"decisions": ["Keep counts in memory: one process."]},
    )  # fmt: skip
    v2 = Plan.objects.create(
        session=session, version=2,
        markdown=f"# Plan\n\n## Summary\nCount failures in the cache. {HOSTILE}\n\n## Risks\nRestarts reset counts.",
        structured={
            "decisions": [f"Keep counts in the cache: several workers. {HOSTILE}"],
            "decision_log": [{"kind": "objection", "text": "Memory is per process.", "verdict": "kept"}],
        },
    )  # fmt: skip
    return v1, v2


def change(client, plan, **data):
    return client.post(reverse("admin:conversations_plan_change", args=[plan.pk]), data)


def test_each_review_change_is_kept_in_the_plans_history(client, staff, plans):
    _v1, v2 = plans
    change(client, v2, review_status="changes_requested", review_notes="Test the reset.")
    change(client, v2, review_status="approved", review_notes="Test the reset. Done.")
    change(client, v2, review_status="approved", review_notes="Test the reset. Done.")  # no change

    events = list(PlanReviewEvent.objects.filter(plan=v2).order_by("pk"))
    assert [(e.previous_status, e.status, e.notes, e.reviewer) for e in events] == [
        ("draft", "changes_requested", "Test the reset.", staff),
        ("changes_requested", "approved", "Test the reset. Done.", staff),
    ]
    page = client.get(reverse("admin:conversations_plan_change", args=[v2.pk])).content.decode()
    assert "Draft → <b>Changes requested</b> by reviewer: <q>Test the reset.</q>" in page
    assert "Changes requested → <b>Approved</b> by reviewer" in page


def test_the_plan_page_shows_versions_diff_decisions_and_cost(client, staff, plans):
    v1, v2 = plans
    page = client.get(reverse("admin:conversations_plan_change", args=[v2.pk])).content.decode()

    # Versions, each a link to its own review page.
    assert reverse("admin:conversations_plan_change", args=[v1.pk]) in page
    assert ">v1 (Draft)</a>" in page and ">v2 (Draft)</a>" in page
    # The diff to v1: the summary changed, the risks did not.
    assert "<del>memory.</del><ins>the cache. &lt;script&gt;" in page
    assert "Risks <small>(unchanged)</small>" in page
    # Decisions and the decision log.
    assert "Keep counts in the cache: several workers." in page
    assert "Memory is per process. — kept" in page
    # The session's usage against its budget, and its cost.
    assert "LLM calls: 7 of 200 · tokens: 1,234 of 500,000 · cost: $0.0150" in page
    assert "1 traced call(s), 1.5 s in models" in page
    # Everything the model wrote is escaped or sanitised.
    assert HOSTILE not in page


def test_the_first_version_says_there_is_nothing_to_compare(client, staff, plans):
    v1, _v2 = plans
    page = client.get(reverse("admin:conversations_plan_change", args=[v1.pk])).content.decode()
    assert "The first version: nothing to compare with." in page


def test_review_history_cannot_be_edited_in_the_admin(client, staff, plans):
    _v1, v2 = plans
    change(client, v2, review_status="rejected", review_notes="No.")
    event = PlanReviewEvent.objects.get(plan=v2)
    url = reverse("admin:agents_planreviewevent_change", args=[event.pk])
    assert client.get(url).status_code == 200
    client.post(url, {"status": "approved", "notes": "Yes."})
    event.refresh_from_db()
    assert (event.status, event.notes) == ("rejected", "No.")
    assert client.get(reverse("admin:agents_planreviewevent_add")).status_code == 403


def test_the_session_page_links_to_its_traced_calls(client, staff, plans):
    _v1, v2 = plans
    url = reverse("admin:conversations_planningsession_change", args=[v2.session_id])
    page = client.get(url).content.decode()
    trace = reverse("admin:agents_llmcall_changelist") + f"?session__id__exact={v2.session_id}"
    assert f'<a href="{trace}">1 traced call(s)</a>' in page
    listing = client.get(trace)
    assert listing.status_code == 200 and "1 LLM call" in listing.content.decode()
