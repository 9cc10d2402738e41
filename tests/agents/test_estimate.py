"""The cost and time estimate of a session (agents.estimate) from synthetic history: medians
and spreads per mode and per (node, profile), composed into a session's figures, with a stated
fallback when there is no history, and the actuals to set it against."""

from __future__ import annotations

import pytest

from agents import estimate
from agents.estimate import Call, PastSession


def run(pk, calls, mode="planning", a="local-1.5b", b="local-1.5b"):
    return PastSession(pk, mode, a, b, tuple(calls))


def call(purpose, profile="local-1.5b", prompt=1000, completion=100, ms=10_000, side=""):
    return Call(purpose, profile, prompt, completion, ms, side)


def three_planning_runs():
    """Three sessions: analyze once each (10, 20, 30 s); propose once, twice, three times."""
    return [
        run(1, [call("analyze:0", ms=10_000), call("propose:1", ms=5_000)]),
        run(2, [call("analyze:0", ms=20_000)] + [call(f"propose:{i}", ms=5_000) for i in (1, 2)]),
        run(3, [call("analyze:0", ms=30_000)] + [call(f"propose:{i}", ms=5_000) for i in (1, 2, 3)]),
    ]  # fmt: skip


def test_it_names_the_node_from_the_purpose():
    assert estimate.node_of("propose:2") == "propose"
    assert estimate.node_of("sketch:1:2:redo") == "sketch"
    assert estimate.node_of("EvidencePlan (tool calls)") == "EvidencePlan"
    assert estimate.node_of("") == "call"


def test_it_takes_the_median_and_quartiles_per_node_and_profile():
    stats = estimate.node_stats(three_planning_runs())
    analyze = stats[("planning", "analyze", "local-1.5b")]
    assert analyze.sessions == 3
    assert analyze.seconds.median == 20.0
    assert (analyze.seconds.low, analyze.seconds.high) == (15.0, 25.0)
    assert analyze.call_tokens.median == 1100
    propose = stats[("planning", "propose", "local-1.5b")]
    assert propose.calls.median == 2.0
    assert (propose.calls.low, propose.calls.high) == (1.5, 2.5)
    assert propose.call_seconds.median == 5.0


def test_it_composes_a_session_from_its_steps():
    made = estimate.estimate(three_planning_runs(), "planning", "local-1.5b", "local-1.5b")
    assert made.basis == "history" and made.history == 3
    assert made.calls == 3.0  # 1 analyze + 2 propose
    assert made.tokens == 3 * 1100
    assert made.seconds == 20.0 + 10.0
    assert (made.seconds_low, made.seconds_high) == (15.0 + 7.5, 25.0 + 12.5)
    assert made.note == ""


def test_it_counts_a_session_that_skipped_a_node_as_zero():
    runs = [*three_planning_runs(), run(4, [call("analyze:0")]), run(5, [call("analyze:0")])]
    stats = estimate.node_stats(runs)
    assert stats[("planning", "propose", "local-1.5b")].calls.median == 1.0  # 0,0,1,2,3


def test_it_keeps_modes_and_profiles_apart():
    runs = [
        *three_planning_runs(),
        run(7, [call("debate:0", ms=60_000)] * 4, mode="debate"),
        run(8, [call("analyze:0", "gemini", ms=2_000)], a="gemini", b="gemini"),
    ]
    debate = estimate.estimate(runs, "debate", "local-1.5b", "local-1.5b")
    assert (debate.calls, debate.seconds, debate.history) == (4.0, 240.0, 1)
    planning = estimate.estimate(runs, "planning", "local-1.5b", "local-1.5b")
    assert planning.seconds == 30.0 and planning.history == 3  # gemini's session is not theirs
    remote = estimate.estimate(runs, "planning", "gemini", "gemini")
    analyze = next(s for s in remote.steps if s.node == "analyze")
    assert (analyze.seconds, analyze.basis) == (2.0, "history")


def test_it_says_there_is_no_history_instead_of_a_number():
    made = estimate.estimate(three_planning_runs(), "debate", "local-1.5b", "local-1.5b")
    assert made.basis == "none" and made.history == 0
    assert made.calls is None and made.tokens is None and made.seconds is None
    assert made.note == estimate.NO_HISTORY.format(mode="debate")
    assert estimate.summary(made) == {"known": False, "note": made.note, "history": 0}


class Speed:
    def __init__(self, per_token):
        self.per_token = per_token

    def seconds(self, prompt_tokens, reply_tokens):
        return (prompt_tokens + reply_tokens) * self.per_token


def test_a_profile_without_history_borrows_calls_and_tokens_and_says_so():
    runs = three_planning_runs()
    unmeasured = estimate.estimate(runs, "planning", "gemini", "gemini")
    assert unmeasured.tokens == 3 * 1100  # as on local-1.5b
    assert unmeasured.seconds is None and unmeasured.basis == "partial"
    assert unmeasured.history == 0
    assert unmeasured.note == (
        "No history of analyze, propose on gemini: calls and tokens as on local-1.5b, "
        "time unknown until the first run measures it."
    )

    measured = estimate.estimate(runs, "planning", "gemini", "gemini",
                                 speed=lambda p: Speed(0.001))  # fmt: skip
    assert measured.seconds == pytest.approx(3 * 1100 * 0.001)
    assert measured.note == (
        "No history of analyze, propose on gemini: calls and tokens as on local-1.5b, "
        "time at gemini's measured speed."
    )
    assert measured.basis == "partial"


def test_a_profile_that_never_reached_a_node_estimates_none_of_it():
    runs = [*three_planning_runs(), run(9, [call("analyze:0", "gemini")], a="gemini", b="gemini")]
    made = estimate.estimate(runs, "planning", "gemini", "gemini", speed=lambda p: Speed(1.0))
    propose = next(s for s in made.steps if s.node == "propose")
    assert (propose.basis, propose.calls, propose.seconds) == ("history", 0.0, 0.0)
    assert made.basis == "history" and made.note == ""
    assert made.calls == 1.0


def test_mixed_agents_split_each_node_by_who_made_its_calls():
    runs = [
        run(1, [call("propose:1", "local", side="A", ms=4_000),
                call("review:1", "local-1.5b", side="B", ms=40_000)],
            a="local", b="local-1.5b"),
    ]  # fmt: skip
    made = estimate.estimate(runs, "planning", "local", "local-1.5b")
    assert [(s.node, s.profile) for s in made.steps] == [
        ("propose", "local"),
        ("review", "local-1.5b"),
    ]
    assert made.seconds == 44.0


def test_money_is_per_profile_from_its_prices():
    def prices(profile, prompt, completion):
        return {"local-1.5b": 0.0, "gemini": (prompt * 0.3 + completion * 2.5) / 1e6}[profile]

    runs = [
        run(1, [call("propose:1", "gemini", side="A"), call("review:1", side="B")],
            a="gemini", b="local-1.5b"),
    ]  # fmt: skip
    made = estimate.estimate(runs, "planning", "gemini", "local-1.5b", prices=prices)
    assert made.cost == {"gemini": pytest.approx((1000 * 0.3 + 100 * 2.5) / 1e6),
                         "local-1.5b": 0.0}  # fmt: skip


def test_actuals_and_the_error():
    used = estimate.actual([call("a", ms=1500), call("b", prompt=10, completion=5, ms=500)])
    assert (used.calls, used.tokens, used.seconds) == (2, 1115, 2.0)
    assert estimate.ape(150, 100) == 50.0 and estimate.ape(50, 100) == 50.0
    assert estimate.ape(None, 100) is None and estimate.ape(5, 0) is None
    assert estimate.mdape([10.0, None, 30.0, 20.0]) == (20.0, 3)
