"""Telling a reply from a copy of the message it answers, and from a prompt's placeholder."""

import pytest

from agents.echoes import ECHO_SHARE, MAX_CHARS, check_reply, copied_share, placeholders

PROPOSAL = (
    "Add a limiter to the login view in app/api.py:10-42: count failed attempts per user in "
    "the cache, refuse the sixth within a minute with HTTP 429, and reset the count after a "
    "successful login. Test it in tests/test_api.py."
)


def test_a_verbatim_copy_is_an_echo():
    assert copied_share(PROPOSAL, PROPOSAL) == 1.0
    problem = check_reply(PROPOSAL, PROPOSAL, "Agent A's proposal")
    assert problem is not None and problem.kind == "echo"
    assert "Agent A's proposal" in problem.correction


def test_a_copied_excerpt_with_a_new_opening_is_an_echo():
    reply = "I agree. " + PROPOSAL.split(". Test it")[0]
    assert copied_share(reply, PROPOSAL) >= ECHO_SHARE


def test_case_and_punctuation_do_not_hide_a_copy():
    assert copied_share(PROPOSAL.upper().replace(",", ";"), PROPOSAL) == 1.0


def test_a_review_that_quotes_a_little_is_not_an_echo():
    review = (
        "The limiter in app/api.py:10-42 keeps its counts in the per-process cache, so behind "
        "two workers an attacker gets twice the attempts. Store them in the database, and the "
        "reset after a successful login needs its own test."
    )
    assert copied_share(review, PROPOSAL) < 0.3
    assert check_reply(review, PROPOSAL) is None


def test_a_short_agreement_is_too_short_to_call_a_copy():
    assert copied_share("Agreed, ship it.", "Agreed, ship it.") == 0.0


def test_only_the_first_max_chars_are_compared():
    own = " ".join(f"word{i}" for i in range(MAX_CHARS // 6))
    assert len(own) > MAX_CHARS
    assert copied_share(own + " " + PROPOSAL * 50, PROPOSAL) == 0.0


def test_literal_placeholders_are_found_once_each_in_order():
    reply = "Cite path:line. Review: see <path> and `path:line`; TODO: fill in [insert file here]"
    assert placeholders(reply) == ["path:line", "<path>", "TODO: fill", "[insert file here]"]
    problem = check_reply(reply)
    assert problem is not None and problem.kind == "placeholder"
    assert "`path:line`, `<path>`" in problem.note


def test_real_citations_and_code_are_not_placeholders():
    reply = (
        "See app/path.py:12 and the `path` argument of `open(path: str, line: int)`; "
        "`List<Path>` in Java and rag/path:line_no are fine too."
    )
    assert placeholders(reply) == []
    assert check_reply(reply, PROPOSAL) is None


@pytest.mark.parametrize(
    "reply",
    [
        "I'm sorry, but I cannot assist with that request.",
        "Sorry, I can't help with that.",
        "I am unable to provide a review of this code.",
        "Unfortunately, I cannot complete this task.",
        # Seen on real projects as the reviewer's whole reply (issue 18):
        "I am sorry, but I do not have enough information to review this proposal. Could you "
        "please provide me with more context about the codebase?",
        "I apologize, but I am unable to assist with reviewing this code.",
        "Could you please provide me with more context about the changes you want?",
    ],
)
def test_a_stock_refusal_is_a_problem(reply):
    problem = check_reply(reply)
    assert problem is not None and problem.kind == "refusal"


@pytest.mark.parametrize(
    "reply",
    [
        "The proposal misses the reset path. I can't see a test for the 429 branch either, so "
        "add one in tests/test_api.py.",
        "Sorry for the delay. The limiter needs a lock around the counter.",
        "I cannot find `rate_limit` in app/api.py:10-20; the proposal names a function that "
        "does not exist, so step 2 must create it. " + "Otherwise it is sound. " * 10,
    ],
)
def test_a_review_that_declines_one_point_is_not_a_refusal(reply):
    assert check_reply(reply) is None
