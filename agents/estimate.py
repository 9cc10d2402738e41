"""What a session will cost before it runs: LLM calls, tokens, time on this machine and money,
read off the trace of the sessions this machine finished (agents.models.LLMCall), and the
actuals after, to check the estimate against.

History is per mode and per (node, profile): a node is a call's purpose up to its first ":"
or space ("propose:2" → "propose", "EvidencePlan (tool calls)" → "EvidencePlan"). Over the
finished (completed) sessions of the mode that ran on the profile, each session gives the node
its number of calls, their tokens and their seconds (duration_ms: the model's time, not the
human's, as agents.trace.history counts it). A step's estimate is the median over sessions,
its spread the 25th–75th percentiles; the session's is the steps' sum, and the number of past
sessions it rests on is shown with it.

No made-up figure is shown as measured. A (node, profile) with no history of its own borrows
the node's calls and tokens from another profile in the same mode and says so; its time is
then those tokens at the profile's measured speed (agents.trace.speed, the queue's
per-call estimate's speed too) or unknown. A mode with no finished session has no estimate:
"no history: the first run will measure it".

The core (`estimate`, `actual`) works on plain rows, so bench/estimate.py can replay a
database's history one session at a time; `load_history` reads them from the ORM.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from statistics import median, quantiles
from typing import Any, Protocol

HISTORY_SESSIONS = 50
"""The latest finished sessions of a mode the app estimates from."""
FINISHED = "completed"
"""Only completed sessions teach: a stopped or failed one ran an unknown part of its work."""
NO_HISTORY = "No finished {mode} session on this machine yet: the first run will measure it."
_NODE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def node_of(purpose: str) -> str:
    """The node a call was for, from its purpose: the turn key's kind or the schema's name."""
    found = _NODE.match(purpose.strip())
    return found.group(0) if found else "call"


@dataclass(frozen=True)
class Call:
    """One past LLM call, as much of it as estimating needs."""

    purpose: str
    profile: str
    prompt_tokens: int
    completion_tokens: int
    duration_ms: int
    side: str = ""  # "A" or "B" when its message says which agent wrote it, else ""


@dataclass(frozen=True)
class PastSession:
    pk: int
    mode: str
    agent_a: str
    agent_b: str
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Spread:
    """A median with its 25th and 75th percentiles, over `n` values."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        if not values:
            return cls(0.0, 0.0, 0.0, 0)
        if len(values) == 1:
            return cls(values[0], values[0], values[0], 1)
        q1, _, q3 = quantiles(values, n=4, method="inclusive")
        return cls(median(values), q1, q3, len(values))


@dataclass(frozen=True)
class NodeStats:
    """One node on one profile in one mode: per session, its calls, tokens and seconds; per
    call, its tokens and seconds."""

    node: str
    profile: str
    sessions: int
    calls: Spread
    tokens: Spread
    prompt_tokens: Spread
    completion_tokens: Spread
    seconds: Spread
    call_tokens: Spread
    call_seconds: Spread


@dataclass
class Step:
    """A node's share of a session estimate; `basis` says where its figures come from."""

    node: str
    profile: str
    calls: float
    tokens: float
    tokens_low: float
    tokens_high: float
    prompt_tokens: float
    completion_tokens: float
    seconds: float | None
    seconds_low: float | None
    seconds_high: float | None
    basis: str  # "history", "borrowed" (calls and tokens of another profile), "none"
    note: str = ""
    sessions: int = 0
    call_tokens: float = 0.0
    call_seconds: float | None = None


@dataclass
class Estimate:
    """A session's expected calls, tokens, seconds and money. Figures are None when there is no
    history to take them from; `note` then says so."""

    mode: str
    agent_a: str
    agent_b: str
    history: int  # finished sessions of the mode that ran on its profiles
    calls: float | None = None
    tokens: float | None = None
    tokens_low: float | None = None
    tokens_high: float | None = None
    seconds: float | None = None
    seconds_low: float | None = None
    seconds_high: float | None = None
    cost: dict[str, float | None] = field(default_factory=dict)  # profile → USD, None: no price
    steps: list[Step] = field(default_factory=list)
    basis: str = "none"  # "history", "partial" (some steps borrowed or untimed), "none"
    note: str = ""

    @property
    def cost_total(self) -> float | None:
        known = [v for v in self.cost.values() if v is not None]
        return sum(known) if known else None

    def as_json(self) -> dict[str, Any]:
        return {
            "steps": [vars(s) for s in self.steps],
            "cost": self.cost,
            "note": self.note,
        }


class SpeedLike(Protocol):
    def seconds(self, prompt_tokens: int, reply_tokens: int) -> float | None: ...


SpeedOf = Callable[[str], SpeedLike | None]


# ------------------------------------------------------------------ history → statistics


def node_stats(sessions: Iterable[PastSession]) -> dict[tuple[str, str, str], NodeStats]:
    """(mode, node, profile) → its statistics over the finished sessions of the mode that ran
    on the profile (as agent A or B). A session that never reached the node counts as zero."""
    per: dict[tuple[str, str], list[PastSession]] = defaultdict(list)
    nodes: dict[str, set[str]] = defaultdict(set)
    for session in sessions:
        for profile in {session.agent_a, session.agent_b}:
            per[(session.mode, profile)].append(session)
        nodes[session.mode].update(node_of(c.purpose) for c in session.calls)
    stats: dict[tuple[str, str, str], NodeStats] = {}
    for (mode, profile), runs in per.items():
        for node in nodes[mode]:
            mine = [
                [c for c in s.calls if c.profile == profile and node_of(c.purpose) == node]
                for s in runs
            ]
            # Kept when all zero: a profile that never reached the node measured that it
            # doesn't, and must not borrow another profile's calls for it.
            flat = [c for calls in mine for c in calls]
            stats[(mode, node, profile)] = NodeStats(
                node=node,
                profile=profile,
                sessions=len(runs),
                calls=Spread.of([float(len(calls)) for calls in mine]),
                tokens=Spread.of([float(_tokens(calls)) for calls in mine]),
                prompt_tokens=Spread.of([float(sum(c.prompt_tokens for c in cs)) for cs in mine]),
                completion_tokens=Spread.of(
                    [float(sum(c.completion_tokens for c in cs)) for cs in mine]
                ),
                seconds=Spread.of([sum(c.duration_ms for c in calls) / 1000 for calls in mine]),
                call_tokens=Spread.of([float(c.prompt_tokens + c.completion_tokens) for c in flat]),
                call_seconds=Spread.of([c.duration_ms / 1000 for c in flat]),
            )
    return stats


def _tokens(calls: Iterable[Call]) -> int:
    return sum(c.prompt_tokens + c.completion_tokens for c in calls)


def a_share(sessions: Iterable[PastSession]) -> dict[tuple[str, str], float]:
    """(mode, node) → the part of its calls agent A made, from calls whose message names the
    agent, or whose profile does (A and B on different profiles)."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for session in sessions:
        for call in session.calls:
            side = call.side
            if not side and session.agent_a != session.agent_b:
                side = {session.agent_a: "A", session.agent_b: "B"}.get(call.profile, "")
            if side in ("A", "B"):
                counts[(session.mode, node_of(call.purpose))][side == "B"] += 1
    return {key: a / (a + b) for key, (a, b) in counts.items()}


# ------------------------------------------------------------------ composing an estimate

Prepared = tuple[dict[tuple[str, str, str], NodeStats], dict[tuple[str, str], float]]


def prepare(sessions: list[PastSession]) -> Prepared:
    """The statistics an estimate is composed from (`node_stats`, `a_share`)."""
    return node_stats(sessions), a_share(sessions)


def estimate(
    sessions: list[PastSession],
    mode: str,
    agent_a: str,
    agent_b: str,
    *,
    speed: SpeedOf | None = None,
    prices: Callable[[str, int, int], float | None] | None = None,
    prepared: Prepared | None = None,
) -> Estimate:
    """The estimate of a `mode` session with agents on `agent_a` and `agent_b`, from
    `sessions` (past ones; only the finished ones of `mode` count). `speed` gives a profile's
    measured speed for a node it has no history of (None: such a step's time is unknown);
    `prices` a profile's cost of (prompt, completion) tokens (None: no money figures);
    `prepared` the statistics of `sessions` (`prepare`), when several estimates share them."""
    past = [s for s in sessions if s.mode == mode]
    # The history shown is the sessions that ran on these profiles (the others lend at most).
    mine = sum(1 for s in past if {s.agent_a, s.agent_b} & {agent_a, agent_b})
    result = Estimate(mode=mode, agent_a=agent_a, agent_b=agent_b, history=mine)
    if not past:
        result.note = NO_HISTORY.format(mode=mode)
        return result
    stats, shares = prepared if prepared is not None else prepare(past)
    nodes = sorted({node for (_mode, node, _profile) in stats})
    for node in nodes:
        share = 1.0 if agent_a == agent_b else shares.get((mode, node), 0.5)
        for profile, part in ((agent_a, share), (agent_b, 1.0 - share)):
            if part > 0:
                result.steps.append(_step(stats, mode, node, profile, part, speed))
    _total(result, prices)
    return result


def _step(
    stats: dict[tuple[str, str, str], NodeStats],
    mode: str,
    node: str,
    profile: str,
    part: float,
    speed: SpeedOf | None,
) -> Step:
    own = stats.get((mode, node, profile))
    if own is not None:
        return Step(
            node=node, profile=profile, basis="history", sessions=own.sessions,
            calls=part * own.calls.median, tokens=part * own.tokens.median,
            tokens_low=part * own.tokens.low, tokens_high=part * own.tokens.high,
            prompt_tokens=part * own.prompt_tokens.median,
            completion_tokens=part * own.completion_tokens.median,
            seconds=part * own.seconds.median, seconds_low=part * own.seconds.low,
            seconds_high=part * own.seconds.high, call_tokens=own.call_tokens.median,
            call_seconds=own.call_seconds.median,
        )  # fmt: skip
    others = [s for (m, n, _p), s in stats.items() if m == mode and n == node]
    if not others:
        return Step(node, profile, 0, 0, 0, 0, 0, 0, None, None, None, "none",
                    note="no history")  # fmt: skip
    # The profile with the most sessions of this node lends its calls and tokens.
    lender = max(others, key=lambda s: (s.sessions, s.profile))
    measured = speed(profile) if speed is not None else None
    prompt, reply = lender.prompt_tokens.median, lender.completion_tokens.median
    seconds = measured.seconds(int(prompt), int(reply)) if measured is not None else None
    ratio = seconds / lender.seconds.median if seconds and lender.seconds.median else None
    note = f"calls and tokens as on {lender.profile}, " + (
        f"time at {profile}'s measured speed"
        if seconds is not None
        else "time unknown until the first run measures it"
    )
    return Step(
        node=node, profile=profile, basis="borrowed", note=note, sessions=0,
        calls=part * lender.calls.median, tokens=part * lender.tokens.median,
        tokens_low=part * lender.tokens.low, tokens_high=part * lender.tokens.high,
        prompt_tokens=part * prompt, completion_tokens=part * reply,
        seconds=None if seconds is None else part * seconds,
        seconds_low=None if ratio is None else part * lender.seconds.low * ratio,
        seconds_high=None if ratio is None else part * lender.seconds.high * ratio,
        call_tokens=lender.call_tokens.median,
    )  # fmt: skip


def _total(result: Estimate, prices: Callable[[str, int, int], float | None] | None) -> None:
    steps = result.steps
    result.calls = sum(s.calls for s in steps)
    result.tokens = sum(s.tokens for s in steps)
    result.tokens_low = sum(s.tokens_low for s in steps)
    result.tokens_high = sum(s.tokens_high for s in steps)
    timed = all(s.seconds is not None for s in steps)
    if timed:
        result.seconds = sum(s.seconds or 0.0 for s in steps)
        result.seconds_low = sum(s.seconds_low or 0.0 for s in steps)
        result.seconds_high = sum(s.seconds_high or 0.0 for s in steps)
    result.basis = "history" if timed and all(s.basis == "history" for s in steps) else "partial"
    borrowed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s in steps:
        if s.note:
            borrowed[(s.profile, s.note)].append(s.node)
    result.note = " ".join(
        f"No history of {', '.join(nodes)} on {profile}: {note}."
        for (profile, note), nodes in sorted(borrowed.items())
    )
    if prices is not None:
        for profile in dict.fromkeys((result.agent_a, result.agent_b)):
            mine = [s for s in steps if s.profile == profile]
            result.cost[profile] = prices(
                profile,
                round(sum(s.prompt_tokens for s in mine)),
                round(sum(s.completion_tokens for s in mine)),
            )


# ------------------------------------------------------------------ actuals and error


@dataclass(frozen=True)
class Actual:
    calls: int
    tokens: int
    seconds: float
    cost: dict[str, float | None]

    @property
    def cost_total(self) -> float | None:
        known = [v for v in self.cost.values() if v is not None]
        return sum(known) if known else None


def actual(
    calls: Iterable[Call], prices: Callable[[str, int, int], float | None] | None = None
) -> Actual:
    """What a session's calls used: calls, tokens, the model's seconds, money per profile."""
    rows = list(calls)
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in rows:
        per[c.profile][0] += c.prompt_tokens
        per[c.profile][1] += c.completion_tokens
    cost = {p: prices(p, t[0], t[1]) for p, t in per.items()} if prices is not None else {}
    return Actual(len(rows), _tokens(rows), sum(c.duration_ms for c in rows) / 1000, cost)


def ape(estimated: float | None, measured: float | None) -> float | None:
    """Absolute percentage error of an estimate (None when either side is missing or the
    actual is zero)."""
    if estimated is None or not measured:
        return None
    return abs(estimated - measured) / measured * 100


def mdape(errors: Iterable[float | None]) -> tuple[float | None, int]:
    """Median absolute percentage error over the errors known, and how many there were."""
    known = [e for e in errors if e is not None]
    return (median(known) if known else None), len(known)


# ------------------------------------------------------------------ the app's own history


def price(profile: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD for the tokens on `profile`: its prices; 0 on this machine's own model (llama.cpp
    backends have no price); None when a remote profile declares none."""
    from agents.providers import PROFILES, estimate_cost

    cost = estimate_cost(profile, prompt_tokens, completion_tokens)
    if cost is not None:
        return cost
    row = next((p for p in PROFILES if p.name == profile), None)
    return 0.0 if row is not None and row.backend in ("llama.cpp", "scripted") else None


def calls_of(rows: Iterable[dict[str, Any]]) -> list[Call]:
    return [
        Call(
            purpose=r["purpose"],
            profile=r["profile"],
            prompt_tokens=r["prompt_tokens"],
            completion_tokens=r["completion_tokens"],
            duration_ms=r["duration_ms"],
            side=r.get("message__agent") or "",
        )
        for r in rows
    ]


_CALL_FIELDS = ("session_id", "purpose", "profile", "prompt_tokens", "completion_tokens",
                "duration_ms", "message__agent")  # fmt: skip


def load_history(mode: str | None = None, *, limit: int = HISTORY_SESSIONS) -> list[PastSession]:
    """The latest `limit` finished sessions (of `mode`, or of each mode) with their calls."""
    from agents.models import LLMCall
    from conversations.models import PlanningSession

    modes = [mode] if mode else [m for m, _label in PlanningSession.Mode.choices]
    heads: list[Any] = []
    for m in modes:
        heads += list(
            PlanningSession.objects.filter(mode=m, status=FINISHED, llm_calls__isnull=False)
            .distinct()
            .order_by("-created_at", "-pk")
            .values_list("pk", "mode", "agent_a_profile", "agent_b_profile")[:limit]
        )
    rows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in LLMCall.objects.filter(session_id__in=[h[0] for h in heads]).values(*_CALL_FIELDS):
        rows[row["session_id"]].append(row)
    return [PastSession(pk, m, a, b, tuple(calls_of(rows[pk]))) for pk, m, a, b in heads]


def for_session(
    mode: str, agent_a: str, agent_b: str, history: list[PastSession] | None = None
) -> Estimate:
    """The estimate the app shows and stores: this machine's history, measured speeds, prices."""
    from agents.trace import speed

    past = load_history(mode) if history is None else history
    return estimate(past, mode, agent_a, agent_b, speed=speed, prices=price)


def session_actual(session_id: int) -> Actual:
    from agents.models import LLMCall

    rows = LLMCall.objects.filter(session_id=session_id).values(*_CALL_FIELDS)
    return actual(calls_of(rows), prices=price)


# ------------------------------------------------------------------ stored at start, read after


def record(session: Any) -> Any:
    """Estimate `session` (just started) from the sessions before it and keep the estimate.
    An estimate that cannot be made is logged and skipped: it never stops a session."""
    import logging

    from django.db import transaction

    from agents.models import SessionEstimate

    try:
        # A savepoint: a failed read or write must not spoil a caller's transaction.
        with transaction.atomic():
            made = for_session(session.mode, session.agent_a_profile, session.agent_b_profile)
            return SessionEstimate.objects.create(
                session=session,
                mode=made.mode,
                agent_a_profile=made.agent_a,
                agent_b_profile=made.agent_b,
                history=made.history,
                basis=made.basis,
                calls=made.calls,
                tokens=made.tokens,
                tokens_low=made.tokens_low,
                tokens_high=made.tokens_high,
                seconds=made.seconds,
                seconds_low=made.seconds_low,
                seconds_high=made.seconds_high,
                cost_usd=made.cost_total,
                detail=made.as_json(),
            )
    except Exception:
        logging.getLogger(__name__).exception("could not estimate session %s", session.pk)
        return None


def versus(stored: Any) -> dict[str, Any]:
    """A stored estimate against its session's actuals, for the session page and the admin:
    {"rows": [{what, estimate, low, high, actual, error}], "actual", "estimate"}."""
    used = session_actual(stored.session_id)
    rows = [  # what, estimate, p25, p75, actual, the figures' format (floatformat)
        ("LLM calls", stored.calls, None, None, float(used.calls), "0g"),
        ("Tokens", stored.tokens, stored.tokens_low, stored.tokens_high, float(used.tokens), "0g"),
        ("Model time (s)", stored.seconds, stored.seconds_low, stored.seconds_high, used.seconds,
         "0g"),
        ("Money (USD)", stored.cost_usd, None, None, used.cost_total, "-4g"),
    ]  # fmt: skip
    return {
        "estimate": stored,
        "actual": used,
        "rows": [
            {
                "what": what,
                "estimate": est,
                "low": low,
                "high": high,
                "actual": act,
                "error": ape(est, act),
                "format": fmt,
            }
            for what, est, low, high, act, fmt in rows
        ],  # fmt: skip
    }


# ------------------------------------------------------------------ for the pages


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def money(usd: float | None) -> str:
    if usd is None:
        return "no price set"
    return "$0 (runs here)" if usd == 0 else f"${usd:.4f}" if usd < 0.01 else f"${usd:.2f}"


def summary(made: Estimate) -> dict[str, Any]:
    """An estimate in words and figures for a page: each figure with its p25–p75 range."""
    if made.basis == "none":
        return {"known": False, "note": made.note, "history": made.history}

    def span(mid: float | None, low: float | None, high: float | None, show: Any) -> str:
        if mid is None:
            return show(None)
        text = show(mid)
        if low is not None and high is not None and (low, high) != (mid, mid):
            text += f" ({show(low)}–{show(high)})"
        return text

    def count(value: float | None) -> str:
        return "unknown" if value is None else f"{value:,.0f}"

    return {
        "known": True,
        "history": made.history,
        "basis": made.basis,
        "calls": count(made.calls),
        "tokens": span(made.tokens, made.tokens_low, made.tokens_high, count),
        "time": span(made.seconds, made.seconds_low, made.seconds_high, duration),
        "cost": [(profile, money(usd)) for profile, usd in made.cost.items()],
        "note": made.note,
        "steps": made.steps,
    }


def table(
    modes: list[str], profiles: list[str], chosen: tuple[str, str, str]
) -> list[dict[str, Any]]:
    """The form's estimates: every mode with both agents on each profile, and the chosen
    (mode, A, B) when the agents differ; each {"mode", "a", "b", "chosen", **summary}."""
    from agents.trace import speed

    speeds: dict[str, Any] = {}

    def measured(profile: str) -> Any:
        if profile not in speeds:
            speeds[profile] = speed(profile)
        return speeds[profile]

    history = {mode: load_history(mode) for mode in modes}
    prepared = {mode: prepare(past) for mode, past in history.items()}
    pairs = [(mode, p, p) for mode in modes for p in profiles]
    if chosen not in pairs and chosen[0] in history:
        pairs.insert(0, chosen)
    rows = []
    for mode, a, b in pairs:
        made = estimate(
            history[mode], mode, a, b, speed=measured, prices=price, prepared=prepared[mode]
        )
        rows.append({"mode": mode, "a": a, "b": b, "chosen": (mode, a, b) == chosen,
                     **summary(made)})  # fmt: skip
    return rows
