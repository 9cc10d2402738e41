"""The per-session budget of LLM calls and tokens: when it is spent the human gets the floor."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from conversations.models import Message, PlanningSession
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS, kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

CONTINUE = {"signal": "CONTINUE", "reason": "The critic should answer."}


def get(session):
    return PlanningSession.objects.get(pk=session.pk)


async def test_a_spent_call_budget_hands_over_with_a_clear_message(start, user, settings):
    # Five calls: Agent A's evidence plan, A1 and its signal, B1 and its signal.
    settings.PLANAGENTS_SESSION_CALL_BUDGET = 5
    FakeProvider.script(
        "fake", NO_LOOKUPS, "A1: add a limiter.", CONTINUE, "B1: test the reset.", CONTINUE
    )
    session = await start(mode="debate", max_exchanges=5)
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")

    assert "LLM budget" in state["error"]
    assert state["usage"]["calls"] == 5 and state["usage"]["call_budget"] == 5
    assert state["options"] == ["continue", "stop"]
    note = await database_sync_to_async(
        lambda: session.messages.filter(role=Message.Role.SYSTEM).last()
    )()
    assert "this session used its LLM budget (5 of 5 calls" in note.content
    assert "Continue grants another budget" in note.content
    # Agent B's reply was written before the budget ran out and is kept.
    agents = await database_sync_to_async(
        lambda: list(session.messages.filter(role="agent", node="").values_list("content", "state"))
    )()
    assert agents == [("A1: add a limiter.", "complete"), ("B1: test the reset.", "complete")]

    # Continue grants another budget of the same size; the debate picks up where it stopped.
    FakeProvider.script("fake", kept(1), "A2: covered.", CONTINUE)  # B1's objection checked first
    await client.send({"type": "control", "action": "continue"})
    await client.until_state("running")
    await client.until_state("awaiting_human")
    fresh = await database_sync_to_async(get)(session)
    assert fresh.call_budget == 10
    agents = await database_sync_to_async(
        lambda: list(
            session.messages.filter(role="agent", node="").values_list("content", flat=True)
        )
    )()
    assert agents[:3] == ["A1: add a limiter.", "B1: test the reset.", "A2: covered."]
    await client.close()


async def test_a_spent_token_budget_hands_over_before_the_next_call(start, user, settings):
    # The first call, Agent A's evidence plan, reads more than 10 tokens: A1 is never asked for.
    settings.PLANAGENTS_SESSION_TOKEN_BUDGET = 10
    FakeProvider.script("fake", NO_LOOKUPS, "A1: add a limiter.", CONTINUE)
    session = await start(mode="debate", max_exchanges=5)
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")
    assert "LLM budget" in state["error"]
    fresh = await database_sync_to_async(get)(session)
    assert fresh.tokens_used >= 10
    assert fresh.calls_used == 1
    assert FakeProvider.pending("fake") == 2  # A1 and its signal: never asked for
    assert fresh.status == PlanningSession.Status.AWAITING_HUMAN
    await client.close()
