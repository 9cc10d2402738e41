"""agents.turns without a websocket: budget, retries, the fallback, redone echoes and the
structured-output repair, on a session row."""

import json

import pytest

from agents import call_policy, turns
from agents.errors import BudgetSpent
from agents.models import LLMCall
from agents.providers.base import CallOptions, ChatMessage, ProviderError, RetryableError
from agents.providers.fake import FailAfter, FakeProvider
from agents.schemas import Proposal, TurnSignal
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
    monkeypatch.setattr(call_policy, "sleep", lambda seconds, should_stop: None)


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


# ---------------------------------------------------------------- echoes and placeholders

PROPOSAL = (
    "Add a limiter to the login view in app/api.py:10-42: count failed attempts per user "
    "in the cache, refuse the sixth within a minute with HTTP 429, and reset the count after "
    "a successful login."
)
ASK_REVIEW = [
    ChatMessage("system", "You are Agent B, a demanding code reviewer."),
    ChatMessage("user", f"<proposal>\n{PROPOSAL}\n</proposal>\n\nCritique it. Your critique:"),
]
REVIEW = "The cache is per process: behind two workers the count halves. Use the database."


def review(session, key="review:1"):
    return turns.text_turn(
        session,
        turns.Agent("B", "fake"),
        turn_key=key,
        node="review_and_refine",
        messages=ASK_REVIEW,
        answering=PROPOSAL,
        answering_label="Agent A's proposal",
    )


def test_a_review_that_echoes_the_proposal_is_redone_with_a_correction(session):
    FakeProvider.script("fake", "Sure. " + PROPOSAL, REVIEW)
    message = review(session)

    first, second = FakeProvider.calls("fake")
    assert first.messages == tuple(ASK_REVIEW)
    # The first prompt unchanged (a prompt cache keeps it), the bad reply as the model's own
    # turn, the correction after it.
    assert second.messages[: len(ASK_REVIEW)] == tuple(ASK_REVIEW)
    assert second.messages[-2].role == "assistant"
    assert second.messages[-2].content == "Sure. " + PROPOSAL
    assert "copied Agent A's proposal" in second.messages[-1].content
    assert (message.content, message.state) == (REVIEW, "complete")
    # The page keeps the discarded attempt, folded, with why it was redone.
    assert message.data == {
        "discarded": [{"reason": "it copied Agent A's proposal", "text": "Sure. " + PROPOSAL}]
    }
    assert session.messages.count() == 1
    assert PlanningSession.objects.get(pk=session.pk).calls_used == 2


def test_a_literal_placeholder_is_redone(session):
    FakeProvider.script("fake", "It forgets the reset path. Cite path:line. Review:", REVIEW)
    message = review(session)
    correction = FakeProvider.calls("fake")[1].messages[-1].content
    assert "`path:line`" in correction and "real file paths" in correction
    assert message.content == REVIEW


def test_a_redo_that_is_still_an_echo_is_kept_and_flagged_not_looped(session):
    FakeProvider.script("fake", PROPOSAL, "As proposed: " + PROPOSAL, "never asked")
    message = review(session)
    assert len(FakeProvider.calls("fake")) == 2
    assert FakeProvider.pending("fake") == 1
    assert message.content.startswith("As proposed: " + PROPOSAL)
    assert "_Flagged: this reply repeats Agent A's proposal almost word for word" in message.content
    assert message.data == {
        "flags": ["echo"],
        "discarded": [{"reason": "it copied Agent A's proposal", "text": PROPOSAL}],
    }


def test_a_stock_refusal_is_redone_as_the_review_it_was_asked_for(session):
    FakeProvider.script("fake", "I'm sorry, but I cannot assist with that request.", REVIEW)
    message = review(session)
    correction = FakeProvider.calls("fake")[1].messages[-1].content
    assert "ordinary software engineering request" in correction
    assert message.content == REVIEW


def test_a_reply_in_its_own_words_is_taken_at_once(session):
    FakeProvider.script("fake", REVIEW, "never asked")
    assert review(session).content == REVIEW
    assert len(FakeProvider.calls("fake")) == 1


# ---------------------------------------------------------------- structured output repair

GOOD_PROPOSAL = {
    "summary": "Throttle failed logins.",
    "steps": [{"title": "Count", "detail": "In app/api.py:10.", "files": ["app/api.py"]}],
    "files": [{"path": "app/api.py", "action": "modify", "reason": "the login view"}],
}


def propose(session):
    return turns.structured_turn(
        session,
        turns.Agent("A", "fake"),
        turn_key="propose:1",
        node="propose_changes",
        messages=PROMPT,
        schema=Proposal,
        render=lambda data, complete: f"**Proposal.** {data.get('summary', '')}",
    )


def test_a_structured_turn_shows_the_model_its_invalid_json_once_then_keeps_the_valid_one(
    session,
):
    FakeProvider.script("fake", '{"summary": 1}', GOOD_PROPOSAL)
    message, proposal = propose(session)

    first, second = FakeProvider.calls("fake", text=False)
    assert first.messages == tuple(PROMPT)
    assert second.messages[: len(PROMPT)] == tuple(PROMPT)
    assert second.messages[-2] == ChatMessage("assistant", '{"summary": 1}')
    assert "That JSON is not valid" in second.messages[-1].content
    assert proposal == Proposal.model_validate(GOOD_PROPOSAL)
    assert message.data == GOOD_PROPOSAL
    assert message.content == "**Proposal.** Throttle failed logins."


def test_a_reply_cut_off_in_its_last_list_keeps_its_finished_items_without_another_call(
    session,
):
    two_files = {
        **GOOD_PROPOSAL,
        "files": [*GOOD_PROPOSAL["files"], {"path": "app/limits.py", "action": "create",
                                             "reason": "the counter"}],
    }  # fmt: skip
    text = json.dumps(two_files)
    cut = text[: text.index('"action": "create"') + len('"action": "cre')]
    FakeProvider.script("fake", cut, GOOD_PROPOSAL)
    message, proposal = propose(session)

    assert proposal == Proposal.model_validate(GOOD_PROPOSAL)  # the unfinished file left out
    assert FakeProvider.pending("fake") == 1  # no repair call
    (call,) = LLMCall.objects.filter(session=session)
    assert call.outcome == LLMCall.Outcome.CUT_OFF
    assert call.note == "unfinished item dropped: files[1]"


def test_a_reply_cut_off_in_its_first_item_is_asked_again_shorter(session):
    cut = json.dumps(GOOD_PROPOSAL)[:60]  # inside the first step
    FakeProvider.script("fake", cut, GOOD_PROPOSAL)
    message, proposal = propose(session)

    first, second = FakeProvider.calls("fake", text=False)
    assert second.messages[-2] == ChatMessage("assistant", cut)
    assert "stops before the object ends" in second.messages[-1].content
    assert "shorter" in second.messages[-1].content
    assert proposal == Proposal.model_validate(GOOD_PROPOSAL)
    outcomes = list(LLMCall.objects.filter(session=session).order_by("pk").values_list(
        "outcome", flat=True))  # fmt: skip
    assert outcomes == ["repaired", "ok"]


def test_a_structured_turn_invalid_twice_fails_the_turn_without_a_third_call(session):
    session.fallback_profile = "fake"  # no other profile to fall back on
    session.save()
    FakeProvider.script("fake", '{"summary": 1}', "not json", GOOD_PROPOSAL)
    with pytest.raises(turns.TurnFailed, match="did not match Proposal"):
        propose(session)
    assert FakeProvider.pending("fake") == 1
    assert session.messages.get().state == Message.State.INTERRUPTED


def test_a_debate_signal_is_repaired_through_the_same_path(session):
    FakeProvider.script("fake", '{"signal": "MAYBE"}', {"signal": "STOP", "reason": "Settled."})
    signal = turns.structured_call(session, FakeProvider("fake"), PROMPT, TurnSignal, CallOptions())
    assert signal == TurnSignal(signal="STOP", reason="Settled.")
    repair = FakeProvider.calls("fake")[1].messages
    assert repair[: len(PROMPT)] == tuple(PROMPT)
    assert repair[-2].content == '{"signal": "MAYBE"}'
    assert "signal" in repair[-1].content and "not valid" in repair[-1].content
    assert PlanningSession.objects.get(pk=session.pk).calls_used == 2


def test_a_debate_signal_invalid_twice_is_an_error_not_a_guess(session):
    FakeProvider.script("fake", "CONTINUE", "{}")
    with pytest.raises(ProviderError, match="did not match TurnSignal"):
        turns.structured_call(session, FakeProvider("fake"), PROMPT, TurnSignal, CallOptions())
