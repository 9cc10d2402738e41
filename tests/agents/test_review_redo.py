"""A review that raises no real objection (an apology, a question back, praise) is redone once,
with the reason on the page; a redo that still raises none is kept and says "no objection
raised". Only turns that are reviews (`reviewing`: what they review) are held to it."""

import pytest

from agents import call_policy, turns
from agents.providers.base import ChatMessage
from agents.providers.fake import FakeProvider
from conversations.models import PlanningSession

pytestmark = pytest.mark.django_db

PROPOSAL = "**Proposal.** Throttle failed logins in `app/auth.py` with an in-memory counter."
ASK = [ChatMessage("user", f"<proposal>\n{PROPOSAL}\n</proposal>\n\nYour review:")]
QUESTION_BACK = (
    "Thank you for the proposal. To review it properly, could you please share more details "
    "about how the app is deployed?"
)  # not a stock refusal (agents.echoes): only the objection check catches it
REVIEW = "The counter lives in memory, so it does not hold across two worker processes."


@pytest.fixture
def session(user, codebase):
    return PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="Add rate limiting to login.",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(call_policy, "sleep", lambda seconds, should_stop: None)


def review(session, *, reviewing=f"{PROPOSAL}\nAdd rate limiting to login."):
    return turns.text_turn(
        session, turns.Agent("B", "fake"), turn_key="review:1", node="review_and_refine",
        messages=ASK, answering=PROPOSAL, answering_label="Agent A's proposal",
        reviewing=reviewing,
    )  # fmt: skip


def test_a_review_that_only_asks_for_more_context_is_redone_with_the_reason_shown(session):
    FakeProvider.script("fake", QUESTION_BACK, REVIEW)
    message = review(session)
    correction = FakeProvider.calls("fake")[1].messages[-1].content
    assert "raised no objection to the proposal" in correction
    assert message.content == REVIEW
    assert message.data == {
        "discarded": [{"reason": "it raised no objection to the proposal", "text": QUESTION_BACK}]
    }


def test_a_redo_that_still_objects_to_nothing_is_kept_and_says_no_objection_raised(session):
    FakeProvider.script("fake", "The proposal looks good.", "I agree with the proposal.", "never")
    message = review(session)
    assert FakeProvider.pending("fake") == 1  # redone once, not looped
    assert message.content.startswith("I agree with the proposal.")
    assert "_No objection raised: asked once for a concrete objection" in message.content
    assert message.data["flags"] == ["no_objection"]


def test_the_requests_own_words_do_not_make_a_review_say_nothing_new(session):
    # The request asks "which files or tests it forgets"; "Add a test." asks for one the
    # proposal lacks, and must not be redone as if it restated what it reviews (CI: a planning
    # session's scripted review was redone and the session ran out of script).
    FakeProvider.script("fake", "Add a test.", "never")
    assert review(session).content == "Add a test."
    assert FakeProvider.pending("fake") == 1


def test_a_turn_that_is_not_a_review_is_not_held_to_objecting(session):
    FakeProvider.script("fake", "The proposal looks good and addresses the task.", "never")
    assert review(session, reviewing="").content == (
        "The proposal looks good and addresses the task."
    )
    assert FakeProvider.pending("fake") == 1
