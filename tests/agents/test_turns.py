"""agents.turns without a websocket: budget, retries and the fallback on a session row."""

import pytest

from agents import turns
from agents.errors import BudgetSpent
from agents.providers.base import ChatMessage, RetryableError
from agents.providers.fake import FailAfter, FakeProvider
from conversations.models import Message, PlanningSession

pytestmark = pytest.mark.django_db

PROMPT = [ChatMessage("user", "Add rate limiting to login.")]


@pytest.fixture
def session(user, codebase):
    return PlanningSession.objects.create(
        owner=user,
        codebase=codebase,
        title="t",
        task="Add rate limiting to login.",
        mode=PlanningSession.Mode.DEBATE,
        agent_a_profile="fake",
        agent_b_profile="fake",
        fallback_profile="fake-backup",
    )


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(turns, "sleep", lambda seconds, should_stop: None)


def turn(session, key="debate:0"):
    return turns.text_turn(
        session, turns.Agent("A", "fake"), turn_key=key, node="", messages=PROMPT
    )


def test_a_finished_turn_is_not_run_again(session):
    FakeProvider.script("fake", "A1: once.")
    first = turn(session)
    assert turn(session).pk == first.pk
    assert session.messages.count() == 1


def test_a_turn_the_fallback_finished_is_not_run_again_on_the_failed_profile(session):
    FakeProvider.script("fake", FailAfter("A1: cut here", 2, RetryableError("timeout")))
    FakeProvider.script("fake-backup", "A1 (backup).")
    finished = turn(session)
    assert finished.profile == "fake-backup"
    again = turn(session)
    assert again.pk == finished.pk
    assert FakeProvider.pending("fake") == 0


def test_a_run_that_crashed_while_the_fallback_wrote_resumes_on_the_fallback(session):
    # The job died while the fallback was writing: its message is still streaming.
    Message.objects.create(
        session=session, seq=1, role="agent", agent="A", turn_key="debate:0:fallback",
        state=Message.State.STREAMING, content="A1 (backup): half", profile="fake-backup",
    )  # fmt: skip
    session.last_seq = 1
    session.save()
    FakeProvider.script("fake-backup", "A1 (backup): whole.")
    FakeProvider.script("fake", "never used")
    message = turn(session)
    assert (message.profile, message.content, message.seq) == (
        "fake-backup",
        "A1 (backup): whole.",
        1,
    )
    assert FakeProvider.pending("fake") == 1


def test_a_spent_budget_stops_the_call_before_it_is_made(session):
    session.call_budget = 1
    session.calls_used = 1
    session.save()
    FakeProvider.script("fake", "never written")
    with pytest.raises(BudgetSpent, match="1 of 1 calls"):
        turn(session)
    assert FakeProvider.pending("fake") == 1
    (message,) = session.messages.all()
    assert message.state == Message.State.INTERRUPTED
