"""The model queue: one line for the local model on this machine, whichever process calls it.

The machine has a few cores and one model server (or one per process in the embedded
default); llama.cpp alone would take every request in arrival order and run as many at once
as it has slots, so a long background call could hold up a person watching a live turn, and
a call's time limit would run while it only waited. Here every local-model call first takes
a ticket (agents.models.ModelTicket, in the database every process shares) and starts
generating only when fewer than `width()` calls generate and no ticket of a higher priority
(a live turn, then a section regeneration, then background work), or of the same priority
and older, waits before it. While it waits, the page is told where it stands: how many calls
are ahead and, from each one's estimate at this machine's measured speed, about how long
(`Place`). The call's own clock (agents.budget.CallClock, the trace) starts when it is let
in; the wait is added to its session's run time, since another session spent it.

Each process checks its tickets in every few seconds (a daemon thread); a ticket not seen
for PLANAGENTS_LLM_QUEUE_STALE seconds belongs to a dead process and is ignored, then
removed. A call is let in under a lock on the live tickets, so two processes asking at the
same instant cannot both take the last place.
"""

from __future__ import annotations

import contextvars
import heapq
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from agents.models import ModelTicket
from agents.providers.base import GenerationCancelled

log = logging.getLogger(__name__)

LIVE, REGENERATION, BACKGROUND = 0, 1, 2
PRIORITY_NAMES = {LIVE: "a live turn", REGENERATION: "a section regeneration",
                  BACKGROUND: "background work"}  # fmt: skip

POLL_SECONDS = 0.5
"""How often a waiting call asks whether it may start (and whether it was stopped)."""
TELL_SECONDS = 5.0
"""A waiting call tells the page where it stands at least this often, and whenever that
changes."""

_priority: contextvars.ContextVar[int] = contextvars.ContextVar("model_priority", default=LIVE)


@contextmanager
def priority(level: int) -> Iterator[None]:
    """Calls made inside this block queue at `level` (default: LIVE)."""
    token = _priority.set(level)
    try:
        yield
    finally:
        _priority.reset(token)


def width() -> int:
    """How many local-model calls may generate at once on this machine."""
    return int(settings.PLANAGENTS_LLM_QUEUE_WIDTH or settings.PLANAGENTS_LLM_SLOTS)


@dataclass(frozen=True)
class Place:
    """Where a waiting call stands: `ahead` calls before it (generating or waiting), and
    about `wait_s` seconds until it starts (None while a call ahead has no measured
    estimate)."""

    ahead: int
    generating: int
    wait_s: float | None

    def as_event(self) -> dict[str, object]:
        return {"ahead": self.ahead, "generating": self.generating,
                "wait_s": None if self.wait_s is None else round(self.wait_s, 1)}  # fmt: skip


def holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# ------------------------------------------------------------------ checking in


_held: set[int] = set()
_held_lock = threading.Lock()
_keeper: threading.Thread | None = None


def _keep_checking_in() -> None:
    """The process's tickets stay alive while their calls wait or generate: checked in three
    times per PLANAGENTS_LLM_QUEUE_STALE (read afresh each round, so a changed setting holds
    from the next second, not after a sleep the old one chose)."""
    last = 0.0
    while True:
        time.sleep(1.0)
        if time.monotonic() - last < max(1.0, settings.PLANAGENTS_LLM_QUEUE_STALE / 3):
            continue
        last = time.monotonic()
        with _held_lock:
            ids = list(_held)
        if not ids:
            continue
        try:
            close_old_connections()
            ModelTicket.objects.filter(pk__in=ids).update(seen_at=timezone.now())
        except Exception:  # the database is away for a moment: the next round tries again
            log.warning("could not check the model queue's tickets in", exc_info=True)


def _hold(ticket_id: int) -> None:
    global _keeper
    with _held_lock:
        _held.add(ticket_id)
        if _keeper is None or not _keeper.is_alive():
            _keeper = threading.Thread(target=_keep_checking_in, daemon=True,
                                       name="model-queue-check-in")  # fmt: skip
            _keeper.start()


def _release(ticket_id: int) -> None:
    with _held_lock:
        _held.discard(ticket_id)
    ModelTicket.objects.filter(pk=ticket_id).delete()


# ------------------------------------------------------------------ the line


def _alive() -> Q:
    return Q(seen_at__gte=timezone.now() - timedelta(seconds=settings.PLANAGENTS_LLM_QUEUE_STALE))


def people_waiting() -> bool:
    """Whether a person waits on the local model: a live turn's or a section regeneration's
    call is in line or generating, in any process. A codebase's index gives way to it
    (planagents.nice.yield_to_people)."""
    return ModelTicket.objects.filter(_alive(), priority__lt=BACKGROUND).exists()


def _before(ticket: ModelTicket) -> Q:
    return Q(priority__lt=ticket.priority) | Q(priority=ticket.priority, pk__lt=ticket.pk)


def try_admit(ticket: ModelTicket) -> bool:
    """Let `ticket` in if a place is free for it: fewer than `width()` calls generate, and
    the calls waiting before it fill none of the free places. The line is read and the
    ticket let in under a lock on the live tickets (a row lock on PostgreSQL, the write lock
    on SQLite), so two processes asking at once cannot both take the last place."""
    with transaction.atomic():
        live = list(
            ModelTicket.objects.select_for_update()
            .filter(_alive())
            .values_list("pk", "priority", "admitted_at")
        )
        generating = sum(1 for _pk, _priority, admitted in live if admitted is not None)
        before = sum(
            1
            for pk, priority, admitted in live
            if admitted is None
            and (priority < ticket.priority or (priority == ticket.priority and pk < ticket.pk))
        )
        if generating + before >= width():
            return False
        now = timezone.now()
        admitted = ModelTicket.objects.filter(pk=ticket.pk, admitted_at__isnull=True).update(
            admitted_at=now, seen_at=now
        )
    ticket.admitted_at = now
    return admitted == 1


def place(ticket: ModelTicket) -> Place:
    """Where `ticket` stands now. The wait is simulated: each place frees when the call in it
    is expected to end (its estimate less the time it has run), and each call waiting before
    this one takes the first place that frees."""
    live = list(
        ModelTicket.objects.filter(_alive())
        .filter(Q(admitted_at__isnull=False) | _before(ticket))
        .exclude(pk=ticket.pk)
        .values_list("admitted_at", "estimate_s")
    )
    generating = [(a, e) for a, e in live if a is not None]
    waiting = [e for a, e in live if a is None]
    known = all(e is not None for _, e in live)
    wait: float | None = None
    if known:
        now = timezone.now()
        frees = [max(0.0, float(e or 0) - (now - a).total_seconds()) for a, e in generating]
        frees += [0.0] * max(0, width() - len(frees))
        heapq.heapify(frees)
        # Only the earliest `width()` places matter; more generating than that (an overrun
        # admission) just frees later.
        for estimate in waiting:
            heapq.heappush(frees, heapq.heappop(frees) + float(estimate or 0))
        wait = frees[0]
    return Place(ahead=len(live), generating=len(generating), wait_s=wait)


@contextmanager
def in_line(
    *,
    session_id: int | None,
    profile: str,
    purpose: str,
    estimate_s: float | None,
    should_stop: Callable[[], bool],
    tell: Callable[[Place], None],
    keep_alive: Callable[[], None] = lambda: None,
) -> Iterator[float]:
    """Wait for the model's turn, then hold a place while the block runs; yields the seconds
    waited. `tell` hears where the call stands while it waits (at once when it must wait, when
    that changes, and every TELL_SECONDS); `keep_alive` is called on every poll (the session's
    heartbeat). Raises GenerationCancelled when `should_stop` says so while waiting."""
    now = timezone.now()
    # Dead processes' tickets go first, so the table stays small.
    ModelTicket.objects.filter(seen_at__lt=now - timedelta(
        seconds=settings.PLANAGENTS_LLM_QUEUE_STALE * 4)).delete()  # fmt: skip
    ticket = ModelTicket.objects.create(
        priority=_priority.get(),
        session_id=session_id,
        profile=profile,
        purpose=purpose[:80],
        estimate_s=estimate_s,
        holder=holder()[:120],
        seen_at=now,
    )
    _hold(ticket.pk)
    started = time.monotonic()
    try:
        told: tuple[int, int] | None = None
        told_at = 0.0
        while not try_admit(ticket):
            if should_stop():
                raise GenerationCancelled("Stopped while waiting for the model.")
            where = place(ticket)
            key = (where.ahead, where.generating)
            if key != told or time.monotonic() - told_at >= TELL_SECONDS:
                tell(where)
                told, told_at = key, time.monotonic()
            keep_alive()
            time.sleep(POLL_SECONDS)
        waited = time.monotonic() - started
        if told is not None:
            log.info("%s waited %.1f s for the model (%s)", purpose, waited,
                     PRIORITY_NAMES.get(ticket.priority, ticket.priority))  # fmt: skip
        yield waited
    finally:
        _release(ticket.pk)
