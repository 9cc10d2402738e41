"""Agent B reviews with the app's checks of the proposal in its prompt, and the page shows
them as their own message before the review: a named symbol whose file the proposal leaves
alone, and the tests of a changed file when no test changes."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from conversations.models import Message
from tests.conversations.test_investigate_session import TASK, evidence_plan, investigation_on
from tests.conversations.test_investigate_session import proposal as evidence_proposal
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]
investigation_on = investigation_on  # the autouse fixture, shared


async def test_agent_b_gets_and_the_page_shows_the_apps_checks_of_the_proposal(start, user):
    # The proposal changes the API, not TokenStore's file that the task names.
    FakeProvider.script(
        "fake",
        evidence_plan(),
        "TokenStore is in `todo/auth.py:1`.",
        evidence_proposal("todo/api.py"),
        "TokenStore itself must change.",
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")

    rows = await database_sync_to_async(
        lambda: list(session.messages.filter(node="review_and_refine").order_by("seq"))
    )()
    checks, review = rows
    assert (checks.role, review.role, review.agent) == (Message.Role.SYSTEM, "agent", "B")
    points = checks.data["review_points"]
    assert points[0].startswith("[E1] finds `TokenStore` defined at `todo/auth.py:")
    assert points[-1] == (
        "No test file changes, though `todo/api.py`, which changes, has tests: `tests/test_api.py`."
    )
    assert client.texts[checks.seq] == checks.content  # shown live
    # B's prompt carries them, after the proposal and before the request.
    prompt = FakeProvider.calls("fake", text=True)[-1].messages[-1].content
    assert prompt.index("<proposal>") < prompt.index("<checks>") < prompt.index("Your review:")
    assert all(p in prompt for p in points)
    await client.close()
