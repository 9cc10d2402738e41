"""Revise: a completed plan is reopened at the checkpoint with the reviewer's notes as the
suggested change request, and the revision loop writes the next plan version."""

import pytest
from channels.db import database_sync_to_async
from django.urls import reverse

from agents.providers.fake import FakeProvider
from conversations.models import Message, Plan, PlanningSession, PlanningState
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

NOTES = "Cover the lockout reset after a successful login, with a test for it."


def request_review(session, status=Plan.Review.CHANGES_REQUESTED, notes=NOTES):
    Plan.objects.filter(session=session).update(review_status=status, review_notes=notes)


async def completed_session(start, user):
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    return session, client


async def test_a_revised_session_writes_plan_v2_from_the_reviewers_notes(start, user):
    session, client = await completed_session(start, user)
    await database_sync_to_async(request_review)(session)

    await client.send({"type": "control", "action": "revise"})
    state = await client.until_state("awaiting_human", node="checkpoint")
    assert state["options"] == ["approve", "modify", "stop"]
    note = await database_sync_to_async(lambda: session.messages.order_by("seq").last())()
    assert note.role == Message.Role.SYSTEM and note.data["revise"] == {"plan": 1, "notes": NOTES}
    assert "Plan v1 reopened for revision" in note.content and NOTES in note.content

    proposals_before = len(FakeProvider.prompts(schema="Proposal"))
    # What the page sends: the change request it prefilled with the notes.
    await client.send({"type": "control", "action": "modify", "text": NOTES})
    await client.until_state("running")
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")

    versions = await database_sync_to_async(
        lambda: list(Plan.objects.filter(session=session).order_by("version").values_list("version", flat=True))
    )()  # fmt: skip
    assert versions == [1, 2]
    assert client.of_type("plan.updated")[-1]["version"] == 2
    proposal_prompt = FakeProvider.prompts(schema="Proposal")[proposals_before]
    assert f"The human asked for these changes:\n{NOTES}" in proposal_prompt
    final_prompt = FakeProvider.prompt(schema="PlanDraft")
    assert NOTES in final_prompt  # the final plan is written knowing what was asked
    await client.close()


async def test_revise_is_refused_until_the_session_is_completed(start, user):
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "revise"})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["message"] == "Only a completed session with a plan can be revised."
    node = await database_sync_to_async(
        lambda: PlanningState.objects.get(session=session).current_node
    )()
    assert node == "checkpoint"
    await client.close()


def completed_rows(user, codebase, *, status=Plan.Review.CHANGES_REQUESTED):
    """A completed planning session with plan v1, as the workflow leaves it."""
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limits", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
        status=PlanningSession.Status.COMPLETED,
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed", iteration=1)
    Plan.objects.create(
        session=session, version=1, markdown="# Plan\n\n## Summary\nCount failures.",
        review_status=status, review_notes=NOTES,
    )  # fmt: skip
    return session


def test_the_page_offers_revise_and_prefills_the_reviewers_notes(client, user, codebase):
    session = completed_rows(user, codebase)
    client.force_login(user)
    detail = reverse("conversations:detail", args=[session.pk])
    page = client.get(detail).content.decode()
    assert reverse("conversations:revise", args=[session.pk]) in page
    assert "The reviewer asked for changes to plan v1" in page

    response = client.post(reverse("conversations:revise", args=[session.pk]))
    assert response.status_code == 302
    page = client.get(detail).content.decode()
    assert f'placeholder="What should change in the proposal?">{NOTES}</textarea>' in page
    assert '<div id="modify-box" >' in page  # shown, not hidden
    session.refresh_from_db()
    assert session.status == PlanningSession.Status.AWAITING_HUMAN


def test_the_owner_may_revise_a_plan_nobody_reviewed_with_nothing_prefilled(client, user, codebase):
    session = completed_rows(user, codebase, status=Plan.Review.DRAFT)
    client.force_login(user)
    client.post(reverse("conversations:revise", args=[session.pk]))
    page = client.get(reverse("conversations:detail", args=[session.pk])).content.decode()
    assert 'placeholder="What should change in the proposal?"></textarea>' in page
    assert NOTES not in page  # draft notes are not a change request
    assert PlanningState.objects.get(session=session).current_node == "checkpoint"


def test_someone_else_cannot_revise_a_session(client, user, other_user, codebase):
    session = completed_rows(user, codebase)
    client.force_login(other_user)
    response = client.post(reverse("conversations:revise", args=[session.pk]))
    assert response.status_code == 404
    session.refresh_from_db()
    assert session.status == PlanningSession.Status.COMPLETED
    assert client.get(reverse("conversations:revise", args=[session.pk])).status_code in (404, 405)


def test_the_plan_page_offers_revise_on_the_latest_version_only(client, user, codebase):
    session = completed_rows(user, codebase)
    Plan.objects.create(session=session, version=2, markdown="# Plan\n\n## Summary\nCount more.")
    client.force_login(user)
    revise = reverse("conversations:revise", args=[session.pk])
    plan = reverse("conversations:plan", args=[session.pk])
    assert revise in client.get(plan).content.decode()
    assert revise not in client.get(f"{plan}?version=1").content.decode()
    PlanningSession.objects.filter(pk=session.pk).update(status=PlanningSession.Status.RUNNING)
    assert revise not in client.get(plan).content.decode()
