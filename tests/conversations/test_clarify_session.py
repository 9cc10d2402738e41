"""Clarify: after its evidence plan Agent A asks the human one question. The page shows it with
an answer box, the session waits for the human (and still does after a reload), and the answer
reaches the next evidence plan's prompt."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from django.test import Client as PageClient

from agents.investigation.clarify import HEAD, pending_question
from agents.providers.fake import FakeProvider, Hold
from conversations.models import Message, PlanningSession
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

TASK = "Make TokenStore drop old tokens"
QUESTION = "Should an expired token be deleted, or only refused at login?"
ANSWER = "Delete it, and refuse it at login too."


@pytest.fixture(autouse=True)
def investigation_on(settings):
    settings.PLANAGENTS_EVIDENCE_STEPS = 6
    settings.PLANAGENTS_EVIDENCE_ROUNDS = 2


def evidence_plan(next_action, question="", tool="find_symbol", argument="TokenStore"):
    return {
        "steps": [{"id": "E1", "tool": tool, "argument": argument, "why": "where tokens live",
                   "depends_on": [], "kind": "independent"}],
        "next_action": next_action,
        "question": question,
    }  # fmt: skip


def proposal():
    return {
        "summary": "Expire tokens after a day [E1].",
        "steps": [{"title": "Expire", "symbol": "none", "detail": "In `todo/auth.py:1` [E1].",
                   "files": ["todo/auth.py"]}],
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "TokenStore"}],
        "new_files": [],
    }  # fmt: skip


def page(user, session_id):
    browser = PageClient()
    browser.force_login(user)
    return browser.get(f"/sessions/{session_id}/").content.decode()


async def test_a_question_waits_for_the_human_and_the_answer_reaches_the_replan(start, user):
    held = Hold("TokenStore is in `todo/auth.py:1`.", pieces=1)  # until the page listens
    FakeProvider.script("fake", held, evidence_plan("clarify", QUESTION))
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    held.release.set()
    state = await client.until_state("awaiting_human")
    assert [e["text"] for e in client.of_type("question")] == [QUESTION]
    assert state["node"] == "investigate"
    await client.close()

    # A reload finds the session still waiting on the question, shown with its answer box.
    reloaded = await database_sync_to_async(PlanningSession.objects.get)(pk=session.pk)
    assert reloaded.status == PlanningSession.Status.AWAITING_HUMAN
    assert reloaded.error == ""  # a question is the human's turn, not a failure
    assert not any("The agents paused" in t for t in client.texts.values())
    assert await database_sync_to_async(pending_question)(session.pk) == QUESTION
    html = await database_sync_to_async(page)(user, session.pk)
    assert 'id="clarify"' in html and "Should an expired token be deleted" in html
    again = Client(user, session.pk)
    await again.connect()
    await again.until_state("awaiting_human")
    shown = [t for t in again.texts.values() if t.startswith(HEAD)]
    assert shown == [f"{HEAD} {QUESTION}"]

    # The answer (an ordinary message from the human) hands the floor back; the next evidence
    # plan is written knowing the question and the answer.
    FakeProvider.script(
        "fake",
        evidence_plan("synthesize", tool="search", argument="token expiry"),
        proposal(),
        "Add a test for expiry.",
    )
    calls_before = len(FakeProvider.calls("fake"))
    await again.send({"type": "user.message", "text": ANSWER})
    await again.until_state("awaiting_human", node="checkpoint")
    replan = FakeProvider.calls("fake")[calls_before].prompt
    assert f"You asked the human: {QUESTION}" in replan
    assert f"The human answered: {ANSWER}" in replan
    questions = await database_sync_to_async(
        lambda: Message.objects.filter(session=session, content__startswith=HEAD).count()
    )()
    assert questions == 1  # asked once, not again on the re-run
    await again.close()


async def test_a_question_copied_from_the_prompt_is_not_asked(start, user):
    copied = "the task can mean two different changes and the code cannot tell which?"
    FakeProvider.script(
        "fake",
        "TokenStore is in `todo/auth.py:1`.",
        evidence_plan("clarify", copied),
        proposal(),
        "Add a test for expiry.",
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    assert not client.of_type("question")
    assert await database_sync_to_async(pending_question)(session.pk) == ""
    await client.close()
