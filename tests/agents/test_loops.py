"""The loop detector: each kind of loop fires on its own pattern and not on a discussion that
moves on."""

from agents.loops import (
    alternation,
    find_loop,
    repeated_reply,
    repeated_tool,
    repeated_validation,
    similarity,
)

PROPOSAL = (
    "Add a rate limiter to the login view in todo/api.py that counts failed attempts per user "
    "and refuses the sixth one within a minute."
)
CRITIQUE = (
    "The limiter lives in a per-process cache, so two workers double the limit; store the "
    "counter in the database and test the reset path."
)


def test_the_same_reply_again_is_a_repeat():
    replies = [("A", PROPOSAL), ("B", CRITIQUE), ("A", PROPOSAL)]
    loop = repeated_reply(replies)
    assert loop is not None and loop.kind == "repeat"
    assert "Agent A repeated its previous reply" in loop.message


def test_a_near_identical_reply_is_a_repeat():
    tweaked = PROPOSAL.replace("sixth one", "sixth attempt")
    assert similarity(tweaked, PROPOSAL) >= 0.8
    assert repeated_reply([("A", PROPOSAL), ("B", CRITIQUE), ("A", tweaked)]) is not None


def test_short_identical_replies_count_too():
    assert repeated_reply([("A", "Agreed."), ("B", "Fine."), ("A", "Agreed.")]) is not None


def test_a_reply_that_moves_on_is_not_a_repeat():
    revised = (
        "Keep the counter in the database as the reviewer asked, reset it on a successful "
        "login, and add tests for the reset and for two workers."
    )
    assert repeated_reply([("A", PROPOSAL), ("B", CRITIQUE), ("A", revised)]) is None
    # The other agent's reply is not "its previous reply".
    assert repeated_reply([("A", PROPOSAL), ("B", PROPOSAL)]) is None


def test_both_agents_restating_their_positions_is_an_alternation():
    a2 = (
        "As I said, add a rate limiter to the login view in todo/api.py that counts failed "
        "attempts per user; the sixth is refused."
    )
    b2 = (
        "Again: the limiter lives in a per-process cache, so two workers double the limit; use "
        "the database for the counter."
    )
    assert 0.5 <= similarity(a2, PROPOSAL) < 0.8 > similarity(b2, CRITIQUE) >= 0.5
    replies = [("A", PROPOSAL), ("B", CRITIQUE), ("A", a2), ("B", b2)]
    assert repeated_reply(replies) is None  # not near-identical: only the pattern shows it
    loop = find_loop(replies)
    assert loop is not None and loop.kind == "alternation"
    assert "Agents A and B keep restating the same two positions" in loop.note


def test_only_one_agent_repeating_its_position_is_no_alternation():
    b2 = "The database counter is fine now; add a test for two workers and for the reset."
    assert (
        alternation([("A", PROPOSAL), ("B", CRITIQUE), ("A", PROPOSAL + " Sure."), ("B", b2)])
        is None
    )
    assert alternation([("A", PROPOSAL), ("B", CRITIQUE), ("A", PROPOSAL)]) is None


def test_the_same_tool_and_argument_three_times_is_a_loop():
    calls = [("find_symbol", "TokenStore"), ("search", "tokens"), ("find_symbol", " tokenstore"),
             ("find_symbol", "TokenStore")]  # fmt: skip
    loop = repeated_tool(calls)
    assert loop is not None and loop.kind == "tool"
    assert "find_symbol(tokenstore) 3 times" in loop.note
    assert repeated_tool(calls[:3]) is None
    assert repeated_tool([("search", "x"), ("outline", "x"), ("read_file", "x")]) is None


def test_the_same_validation_error_twice_is_a_loop():
    missing = "`todo/limits.py` does not exist in the codebase (action: modify)."
    loop = repeated_validation([missing], ["The proposal names no files.", missing])
    assert loop is not None and loop.kind == "validation" and missing in loop.note
    assert repeated_validation([missing], ["The proposal names no files."]) is None
    assert repeated_validation([missing], []) is None


def test_nothing_fires_on_a_discussion_that_moves_on():
    replies = [("A", PROPOSAL), ("B", CRITIQUE)]
    assert find_loop(replies, [("search", "login")], ["x"], ["y"]) is None
