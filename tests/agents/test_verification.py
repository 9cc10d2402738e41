"""Claims are checked: citations of evidence or lines that do not exist are flagged and
counted, and Agent B's objections are cut into a numbered list by code."""

import pytest

from agents.investigation.evidence import Evidence
from agents.objections import NO_OBJECTION
from agents.providers.fake import FakeProvider
from agents.turns import Agent
from agents.verification import (
    NO_OBJECTION_NOTE,
    Checked,
    cited_evidence,
    flag_citations,
    kept,
    objections,
    render,
    verify_objections,
)
from conversations.models import Message, PlanningSession
from rag.models import Codebase, CodeFile


def item(number):
    return Evidence(number, "find_symbol", "TokenStore", "", True, "found", "todo/auth.py", 1, 9)


@pytest.fixture
def session(user):
    codebase = Codebase.objects.create(owner=user, name="small", status="ready")
    CodeFile.objects.create(
        codebase=codebase, path="todo/auth.py", line_count=30, content="x\n" * 30
    )
    return PlanningSession.objects.create(owner=user, codebase=codebase, task="Expire tokens")


def test_evidence_labels_are_read_once_each_in_order():
    assert cited_evidence("See [E2] and [E1, E3]; [E2] again, not E4 or [e5].") == [2, 1, 3]


@pytest.mark.django_db
def test_a_message_citing_evidence_that_does_not_exist_is_flagged_and_counted(session):
    message = Message.objects.create(
        session=session, seq=2, role="agent", agent="B",
        content="TokenStore never expires [E1]; the login view ignores it [E9].",
    )  # fmt: skip
    assert flag_citations(session, message, [item(1), item(2)]) == 1
    message.refresh_from_db()
    assert message.data["citation_problems"] == 1
    assert message.content.endswith("_Flagged citations: [E9] does not exist (evidence: E1–E2)._")
    # Checked once: a re-run does not flag it twice.
    assert flag_citations(session, message, [item(1), item(2)]) == 1
    message.refresh_from_db()
    assert message.content.count("_Flagged citations") == 1


@pytest.mark.django_db
def test_a_line_past_the_end_of_the_file_and_a_missing_file_are_flagged(session):
    message = Message.objects.create(
        session=session, seq=2, role="agent", agent="A",
        content="Change `todo/auth.py:12` and `todo/auth.py:400`, and `todo/nowhere.py:3`.",
    )  # fmt: skip
    assert flag_citations(session, message, []) == 2
    message.refresh_from_db()
    assert "`todo/auth.py:400` is past the end of the file (30 lines)" in message.content
    assert "`todo/nowhere.py` is not in the codebase" in message.content
    assert "todo/auth.py:12`" not in message.content.split("_Flagged")[1]


@pytest.mark.django_db
def test_a_message_whose_citations_hold_is_left_alone(session):
    message = Message.objects.create(
        session=session, seq=2, role="agent", agent="A", content="See `todo/auth.py:3` [E1]."
    )
    assert flag_citations(session, message, [item(1)]) == 0
    message.refresh_from_db()
    assert (
        message.content == "See `todo/auth.py:3` [E1]." and "citation_problems" not in message.data
    )


def test_objections_are_the_bullet_and_numbered_lines():
    review = (
        "Two problems:\n"
        "1. TokenStore has no issue time, so nothing can expire [E1].\n"
        "- The login view caches tokens in memory\n"
        "  and never rereads them.\n"
        "* ok\n"
        "\n_Flagged citations: [E9] does not exist._"
    )
    assert objections(review) == [
        "TokenStore has no issue time, so nothing can expire [E1].",
        "The login view caches tokens in memory and never rereads them.",
    ]


def test_without_bullets_objections_are_the_sentences():
    review = "TokenStore keeps tokens forever. The proposal forgets the tests! Fine."
    assert objections(review) == [
        "TokenStore keeps tokens forever.",
        "The proposal forgets the tests!",
    ]


def test_a_review_that_repeats_its_list_has_each_objection_once():
    """pylint-5859's 0.5B review wrote its two points three times over."""
    once = "1. `pylint/testutils/decorator.py` is in Files, but no step changes it.\n2. No test.\n"
    review = "**Review:**\n" + "\n".join([once, "**Review:**", once, once])
    assert objections(review) == [
        "`pylint/testutils/decorator.py` is in Files, but no step changes it."
    ]  # "No test." is under three words: not an objection


def test_only_kept_and_updated_objections_reach_agent_a():
    checked = [
        Checked("Tokens never expire.", "keep", reason="[E1]"),
        Checked("Redis stores the tokens.", "discard", reason="E1 shows a dict"),
        Checked("Tests are missing.", "update", "Tests exist but skip expiry.", "[E2]"),
    ]
    assert kept(checked) == "1. Tokens never expire.\n2. Tests exist but skip expiry."
    shown = render(checked)
    assert "2. discarded — Redis stores the tokens. (E1 shows a dict)" in shown
    assert "3. updated — Tests are missing. → Tests exist but skip expiry." in shown


REFUSAL = (
    "I am sorry, but I do not have enough information to review this proposal. "
    "Could you please provide me with more context about the codebase?"
)


def test_an_apology_or_a_question_back_is_never_an_objection():
    review = f"{REFUSAL}\nI apologize, but I am unable to assist. TokenStore never expires [E1]."
    assert objections(review) == ["TokenStore never expires [E1]."]


@pytest.mark.django_db
def test_a_review_with_no_real_objection_reaches_no_check_and_the_page_says_so(session):
    checked = verify_objections(
        session, Agent("A", "fake"), REFUSAL, [item(1)], turn_key="verify:1"
    )
    assert checked == []
    assert FakeProvider.calls() == []  # nothing was sent to the model to judge
    (shown,) = session.messages.filter(node="verify")
    assert f"Agent B: {NO_OBJECTION}." in shown.content
    assert shown.data == {"verdicts": [], "no_objection": True}
    # What reaches Agent A says so, instead of the refusal or "every objection was discarded".
    assert kept(checked) == NO_OBJECTION_NOTE
    again = verify_objections(session, Agent("A", "fake"), REFUSAL, [], turn_key="verify:1")
    assert again == [] and session.messages.filter(node="verify").count() == 1


# The requests walk's verification (local-1.5b), verbatim: each reason is the other objection.
SAME_ORIGIN = (
    "**The check does not consider the case where the same host and port are used for "
    "different redirects** — This is a critical issue because it allows credentials to be lost "
    "when redirecting between the same origin."
)
NEW_TEST = (
    "**The new test should be added to ensure that the check works correctly** — While the new "
    "test is necessary, it does not address the core issue of the check itself."
)


@pytest.mark.django_db
def test_an_objection_discarded_with_no_reason_of_its_own_is_kept_and_the_page_says_so(session):
    FakeProvider.script("fake", {"verdicts": [
        {"objection": 1, "verdict": "discard", "reason": "[E6] The new test should be added to "
         "ensure that the check works correctly. While the new test is necessary, it does not"},
        {"objection": 2, "verdict": "discard", "reason": ""},
        {"objection": 3, "verdict": "discard", "reason": "[E1]"},
        {"objection": 4, "verdict": "discard", "reason": "[E1] shows a dict, not Redis."},
    ]})  # fmt: skip
    review = (
        f"1. {SAME_ORIGIN}\n2. {NEW_TEST}\n3. The proposal forgets the tokens issued before "
        "the upgrade, which have no issue time.\n4. The proposal must move the tokens to Redis."
    )
    checked = verify_objections(session, Agent("A", "fake"), review, [item(1)], turn_key="v:1")
    assert [c.verdict for c in checked] == ["keep", "keep", "discard", "discard"]
    assert checked[0].reason == checked[1].reason == "discarded with no reason of its own, so kept"
    assert kept(checked) == f"1. {SAME_ORIGIN}\n2. {NEW_TEST}"
    (shown,) = session.messages.filter(node="verify")
    assert (
        f"1. kept — {SAME_ORIGIN} (discarded with no reason of its own, so kept)" in shown.content
    )
