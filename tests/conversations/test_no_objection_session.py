"""A planning session whose reviewer only refuses (issue 18: "I am sorry, but I do not have
enough information…" became two kept objections in the plan's Decisions): the refusal is
redone once, nothing of it is verified or reaches the plan as an objection, and both the
session page and the plan say "no objection raised"."""

import pytest
from channels.db import database_sync_to_async
from django.urls import reverse

from agents.objections import NO_OBJECTION
from agents.providers.fake import FakeProvider
from conversations.models import Message, Plan
from rag.models import CodeFile
from tests.conversations.test_planning_session import plan_draft, proposal
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

REFUSAL = (
    "I am sorry, but I do not have enough information to review this proposal. Could you "
    "please provide me with more context about the codebase and the task?"
)
AGAIN = "I apologize, but I am unable to assist with reviewing this code."


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_a_reviewer_that_only_refuses_leaves_no_objection_in_the_plan(
    start, user, codebase, client
):
    paths = CodeFile.objects.filter(codebase=codebase, role="source").values_list("path")
    path = (await database_sync_to_async(paths.first)())[0]
    FakeProvider.script(
        "fake", NO_LOOKUPS, "The login flow.", proposal(path), REFUSAL, AGAIN, plan_draft(path),
    )  # fmt: skip
    session = await start()
    ws = Client(user, session.pk)
    await ws.connect()
    await ws.until_state("awaiting_human", node="checkpoint")
    await ws.send({"type": "control", "action": "approve"})
    await ws.until_state("completed")
    await ws.close()

    review = await database_sync_to_async(
        Message.objects.get
    )(session=session, node="review_and_refine", agent="B")  # fmt: skip
    assert review.data["discarded"][0]["text"] == REFUSAL  # redone once, the reason shown
    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    rows = plan.structured["decision_log"]
    assert [(r["objection"], r["resolution"], r["by"]) for r in rows] == [
        (NO_OBJECTION, "—", "Agent B")
    ]
    assert "| no objection raised | — | Agent B |" in plan.markdown
    assert "sorry" not in plan.markdown.lower() and "apologize" not in plan.markdown.lower()

    await database_sync_to_async(client.force_login)(user)
    page = await database_sync_to_async(client.get)(
        reverse("conversations:detail", args=[session.pk])
    )
    assert f"Agent B: {NO_OBJECTION}." in page.content.decode()
