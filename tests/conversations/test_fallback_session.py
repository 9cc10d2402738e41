"""Provider failures through a websocket session: retries before the first token, and a reply
cut off mid-stream that the session's fallback profile finishes."""

import pytest
from channels.db import database_sync_to_async

from agents import call_policy
from agents.providers.base import ProviderError, RetryableError
from agents.providers.fake import FailAfter, FakeProvider
from conversations.models import Message, PlanningSession
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

HANDOVER = {"signal": "HANDOVER", "reason": "The human must pick a storage backend."}


@pytest.fixture
def slept(monkeypatch):
    delays: list[float] = []
    monkeypatch.setattr(call_policy, "sleep", lambda seconds, should_stop: delays.append(seconds))
    return delays


def messages_of(session):
    """The session's messages after Agent A's investigation (its evidence plan and results)."""
    return list(session.messages.exclude(node="investigate").order_by("seq"))


async def test_a_reply_cut_off_mid_stream_is_kept_and_the_fallback_finishes_the_turn(
    start, user, slept
):
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # Agent A's evidence plan, before its first turn
        FailAfter(
            "A1: put a limiter in the middleware and test it",
            pieces=3,
            error=RetryableError("Gemini did not answer in time (timeout)"),
        ),
    )
    FakeProvider.script("fake-backup", "A1 (backup): a limiter in the middleware.", HANDOVER)
    session = await start(mode="debate", max_exchanges=2, fallback_profile="fake-backup")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    rows = await database_sync_to_async(messages_of)(session)
    agent_rows = [m for m in rows if m.role == Message.Role.AGENT]
    cut, finished = agent_rows
    assert cut.state == Message.State.INTERRUPTED
    assert cut.profile == "fake"
    assert cut.content.startswith("A1: put a")
    assert "Interrupted: Gemini did not answer in time (timeout)" in cut.content
    assert finished.state == Message.State.COMPLETE
    assert (finished.agent, finished.profile) == ("A", "fake-backup")
    assert finished.content == "A1 (backup): a limiter in the middleware."
    assert finished.signal == "HANDOVER"

    # The note sits between the two, and reached the browser as it happened.
    note = next(m for m in rows if m.role == Message.Role.SYSTEM)
    assert cut.seq < note.seq < finished.seq
    assert "fallback profile `fake-backup`" in note.content
    assert "did not answer in time" in note.content
    ended = [e["message"] for e in client.of_type("message.end")]
    assert any("fallback profile" in m["content"] for m in ended)
    assert any(m["state"] == "interrupted" and m["seq"] == cut.seq for m in ended)
    assert slept == []  # text had been streamed: no retry, straight to the fallback
    await client.close()


async def test_failures_before_the_first_token_are_retried_respecting_retry_after(
    start, user, slept
):
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,
        RetryableError("Gemini is rate limiting requests (HTTP 429)", retry_after=3),
        RetryableError("Gemini had a server error (HTTP 503)"),
        "A1: add a limiter.",
        HANDOVER,
    )
    session = await start(mode="debate", fallback_profile="fake-backup")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    assert slept[0] == 3.0
    assert 1.0 <= slept[1] <= 2.0  # second retry: 2 × 1s base, with jitter
    rows = await database_sync_to_async(messages_of)(session)
    agent_rows = [m for m in rows if m.role == Message.Role.AGENT]
    assert [(m.content, m.state, m.profile) for m in agent_rows] == [
        ("A1: add a limiter.", "complete", "fake")
    ]
    used = await database_sync_to_async(
        lambda: PlanningSession.objects.get(pk=session.pk).calls_used
    )()
    assert used == 5  # the evidence plan, three tries at the reply, one signal
    await client.close()


async def test_a_retry_after_longer_than_the_cap_is_capped(settings):
    settings.PLANAGENTS_RETRY_AFTER_CAP = 10
    assert call_policy.backoff_delay(0, retry_after=3600) == 10
    assert call_policy.backoff_delay(0, retry_after=2) == 2
    for attempt in range(6):
        assert 0 < call_policy.backoff_delay(attempt, None) <= 10


async def test_a_provider_that_stays_down_hands_the_turn_to_the_fallback(start, user, slept):
    down = RetryableError("GLM had a server error (HTTP 500)")
    FakeProvider.script("fake", NO_LOOKUPS, down, down, down)
    FakeProvider.script("fake-backup", "A1 (backup): a limiter.", HANDOVER)
    session = await start(mode="debate", fallback_profile="fake-backup")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    assert len(slept) == 2  # PLANAGENTS_LLM_RETRIES
    rows = await database_sync_to_async(messages_of)(session)
    finished = [m for m in rows if m.state == "complete" and m.role == "agent"]
    assert [(m.profile, m.content) for m in finished] == [
        ("fake-backup", "A1 (backup): a limiter.")
    ]
    await client.close()


async def test_an_error_no_retry_can_fix_pauses_instead_of_falling_back(start, user, slept):
    # A's first turn is refused (its evidence plan was written).
    FakeProvider.script("fake", NO_LOOKUPS, ProviderError("Gemini rejected the API key (HTTP 401)"))
    session = await start(mode="debate", fallback_profile="fake-backup")
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")
    assert "rejected the API key" in state["error"]
    assert slept == []
    assert FakeProvider.pending("fake-backup") == 0
    await client.close()


async def test_the_fallback_finishes_a_planning_proposal_cut_off_mid_json(start, user, slept):
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # investigate
        "The login view is in app/api.py.",  # analyze_codebase
        FailAfter('{"summary": "Add a limiter", "steps": []}', pieces=2, error=RetryableError("x")),
    )
    session = await start(mode="planning", fallback_profile="fake-backup")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    rows = await database_sync_to_async(messages_of)(session)
    proposals = [m for m in rows if m.node == "propose_changes" and m.role == "agent"]
    assert [m.state for m in proposals] == ["interrupted", "complete"]
    assert proposals[1].profile == "fake-backup"
    assert proposals[1].data  # the structured proposal came from the fallback
    await client.close()
