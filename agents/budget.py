"""A session's budget of LLM calls, tokens and time. Every call is charged before it is made (once
the model's line lets it in: a call still waiting has cost nothing), its tokens after; when
either runs out the agents hand the floor to the human. Time is limited twice: each call (at
least PLANAGENTS_LLM_CALL_TIME_LIMIT, longer when this machine's measured speed and the prompt's
size say it needs longer, and only once it has stalled) and each run of the agents, from the
human handing them the floor until it comes back (PLANAGENTS_SESSION_TIME_LIMIT). A call past
either is stopped like a human Stop, keeps what it wrote, and the human gets the floor."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db.models import F, Q

from agents.errors import BudgetSpent, TurnFailed
from agents.providers.base import Usage
from agents.trace import speed
from conversations.models import PlanningSession
from conversations.store import publish_state


def budget_defaults() -> tuple[int, int]:
    """(calls, tokens) a new session may spend before the human is asked; 0 means no limit."""
    return settings.PLANAGENTS_SESSION_CALL_BUDGET, settings.PLANAGENTS_SESSION_TOKEN_BUDGET


def charge_call(session_id: int) -> None:
    # One conditional UPDATE: two agents' jobs can never both take the last call.
    charged = (
        PlanningSession.objects.filter(pk=session_id)
        .filter(Q(call_budget=0) | Q(calls_used__lt=F("call_budget")))
        .filter(Q(token_budget=0) | Q(tokens_used__lt=F("token_budget")))
        .update(calls_used=F("calls_used") + 1)
    )
    if not charged:
        session = PlanningSession.objects.get(pk=session_id)
        raise BudgetSpent(budget_message(session))
    _usage_changed(session_id)


def check_budget(session_id: int) -> None:
    """Refuse a call whose session spent its budget already, before it waits in the model's
    line only to be refused there: charge_call, once the call is let in, is what counts it."""
    session = PlanningSession.objects.only(
        "calls_used", "call_budget", "tokens_used", "token_budget"
    ).get(pk=session_id)
    if budget_spent(session):
        raise BudgetSpent(budget_message(session))


def charge_tokens(session_id: int, usage: Usage) -> None:
    spent = usage.prompt_tokens + usage.completion_tokens
    if spent:
        PlanningSession.objects.filter(pk=session_id).update(tokens_used=F("tokens_used") + spent)


def _usage_changed(session_id: int) -> None:
    # The page's "N of M LLM calls" follows every call, not only reconnects.

    publish_state(session_id)


def budget_message(session: PlanningSession) -> str:
    calls = (
        f"{session.calls_used:,} of {session.call_budget:,} calls"
        if session.call_budget
        else f"{session.calls_used:,} calls"
    )
    tokens = (
        f"{session.tokens_used:,} of {session.token_budget:,} tokens"
        if session.token_budget
        else f"{session.tokens_used:,} tokens"
    )
    return (
        f"this session used its LLM budget ({calls}, {tokens}); "
        "Continue grants another budget of the same size"
    )


def budget_spent(session: PlanningSession) -> bool:
    return bool(
        (session.call_budget and session.calls_used >= session.call_budget)
        or (session.token_budget and session.tokens_used >= session.token_budget)
    )


# ---------------------------------------------------------------- time


class TimeLimitReached(TurnFailed):
    """A call, or the agents' run, took longer than its limit; what was written is kept."""


# The deadline of the run in progress, per session. A run is one job in one process (the
# in-process lock, or the Celery lease, keeps a second away), so process memory is the place.
_run_deadlines: dict[int, float] = {}
_deadlines_lock = threading.Lock()


@contextmanager
def session_clock(session_id: int) -> Iterator[None]:
    """Time one run of the agents against PLANAGENTS_SESSION_TIME_LIMIT. Continue starts a new
    run, with a new clock: the human chose to give the agents more time."""
    limit = float(settings.PLANAGENTS_SESSION_TIME_LIMIT)
    with _deadlines_lock:
        if limit > 0:
            _run_deadlines[session_id] = time.monotonic() + limit
    try:
        yield
    finally:
        with _deadlines_lock:
            _run_deadlines.pop(session_id, None)


def extend_run(session_id: int, seconds: float) -> None:
    """Give the run in progress `seconds` more: the time one of its calls waited in the model
    queue for other sessions' calls (agents.model_queue), which this run did not spend."""
    with _deadlines_lock:
        if session_id in _run_deadlines and seconds > 0:
            _run_deadlines[session_id] += seconds


def session_time_message() -> str:
    return (
        f"the agents worked for the longest one run may take "
        f"({_seconds(settings.PLANAGENTS_SESSION_TIME_LIMIT)}, PLANAGENTS_SESSION_TIME_LIMIT); "
        "what they wrote is kept, and Continue gives them another run"
    )


def call_time_message(profile: str, limit: float, estimate: float | None, stall: float) -> str:
    why = (
        f"{LIMIT_SLACK} times its estimate of {_seconds(estimate)} at this machine's measured "
        "speed; PLANAGENTS_LLM_CALL_TIME_LIMIT is the least a call is given"
        if estimate is not None and limit > settings.PLANAGENTS_LLM_CALL_TIME_LIMIT
        else "PLANAGENTS_LLM_CALL_TIME_LIMIT"
    )
    return (
        f"the model ({profile}) was past its time limit ({_seconds(limit)}: {why}) and had "
        f"read nothing and written nothing for {_seconds(stall)}; what it wrote is kept"
    )


def check_session_time(session_id: int) -> None:
    """Refuse to start a call once the run's time is up."""
    with _deadlines_lock:
        deadline = _run_deadlines.get(session_id)
    if deadline is not None and time.monotonic() >= deadline:
        raise TimeLimitReached(session_time_message())


def _seconds(value: float) -> str:
    return f"{value:,.0f} s" if value >= 1 else f"{value:g} s"


LIMIT_SLACK = 3
"""A call's limit is this many times its estimate at the machine's measured speed (when that
is more than PLANAGENTS_LLM_CALL_TIME_LIMIT): a busy machine is slower than its history."""
STALL_SECONDS = 120.0
"""How long a call past its limit may go without reading or writing anything before it is
stopped. A 256-token prompt batch of the 1.5B model takes about 4 s on a quiet 2-core machine,
under ten times that on a loaded one; a token far less."""


class CallClock:
    """The time limit of one call, polled as the call's should_stop: providers poll it between
    pieces and while they wait, so it stops a call the way the human's Stop does, whatever the
    backend. `own` is the caller's stop check, still honoured, and first: a call the human
    stopped is stopped by them, even at its limit.

    The limit follows the machine and the prompt: PLANAGENTS_LLM_CALL_TIME_LIMIT, or
    LIMIT_SLACK times the time the call should take at this profile's measured speed
    (agents.trace.speed: its prompt read, `reply_tokens` written) when that is longer. A call
    past its limit is stopped only once it has stalled: its `usage` (prompt tokens read, tokens
    written) has not moved for STALL_SECONDS (or the limit, when shorter). One still reading
    or writing is slow, not stuck, and goes on."""

    def __init__(
        self,
        session_id: int,
        profile: str,
        own: Callable[[], bool] | None,
        *,
        usage: Usage | None = None,
        prompt_tokens: int = 0,
        reply_tokens: int = 0,
    ) -> None:
        self.session_id, self.profile, self.own = session_id, profile, own
        least = float(settings.PLANAGENTS_LLM_CALL_TIME_LIMIT)
        self.estimate = speed(profile).seconds(prompt_tokens, reply_tokens) if least > 0 else None
        self.limit = max(least, LIMIT_SLACK * self.estimate) if self.estimate else least
        self.stall = min(self.limit, STALL_SECONDS)
        now = time.monotonic()
        self.deadline = now + self.limit if self.limit > 0 else None
        self.usage = usage
        self._seen = self._moved()
        self.last_progress = now
        self.hit = False
        self.by_human = False
        self.message = ""

    def _moved(self) -> tuple[int, int]:
        usage = self.usage
        return (usage.prompt_tokens, usage.completion_tokens) if usage is not None else (0, 0)

    def progressed(self) -> None:
        """A piece of the reply came: the call is not stalled."""
        self.last_progress = time.monotonic()

    def passed(self) -> bool:
        """Whether the call's own limit, or the run's (looked up afresh: a dict read), passed."""
        if self.hit:
            return True
        now = time.monotonic()
        seen = self._moved()
        if seen != self._seen:
            self._seen, self.last_progress = seen, now
        with _deadlines_lock:
            run = _run_deadlines.get(self.session_id)
        if (
            self.deadline is not None
            and now >= self.deadline
            and now - self.last_progress >= self.stall
        ):
            self.hit = True
            self.message = call_time_message(self.profile, self.limit, self.estimate, self.stall)
        elif run is not None and now >= run:
            self.hit, self.message = True, session_time_message()
        return self.hit

    def should_stop(self) -> bool:
        if self.own is not None and self.own():
            self.by_human = True
            return True
        return self.passed()
