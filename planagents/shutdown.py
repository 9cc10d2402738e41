"""Clean shutdown: on SIGTERM the process stops taking work, parks what runs, and exits.

One process-wide event, set by SIGTERM (`install` puts the handler in front of the one the
server installed: daphne's reactor then stops listening as it always did). Once it is set,
`planagents.jobs.dispatch` starts nothing more, a running session job sees it at its next
piece of text (`check`, from `agents.runtime.TurnStream`) and parks: its turn is left as it
was, its lease released, so the next start resumes the turn in the same message. A job still
running after PLANAGENTS_SHUTDOWN_GRACE seconds is parked from here (`on_leftovers`) and the
process exits: nothing would otherwise stop the interpreter from waiting for the worker
threads of jobs that never look up (a long prompt read by the local model, an indexing job).

This module imports nothing of the project but settings: the jobs seam and the agents read it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from django.conf import settings

log = logging.getLogger(__name__)

EXIT_MARGIN = 2.0
"""Seconds the server gets, once its jobs are parked, to stop on its own before it is exited."""


class ShuttingDown(BaseException):
    """The process is stopping: the job unwinds and parks. A BaseException, like SystemExit,
    so no `except Exception` on the way mistakes it for a turn's failure."""


_stopping = threading.Event()
_lock = threading.Condition()
_jobs: dict[int, str] = {}  # running jobs of this process: id → label for the log
_next_id = 0


def stopping() -> bool:
    """True once this process was asked to stop."""
    return _stopping.is_set()


def check() -> None:
    """Raise ShuttingDown once this process was asked to stop."""
    if _stopping.is_set():
        raise ShuttingDown("the server is stopping")


@contextmanager
def running(label: str) -> Iterator[None]:
    """Count a job as running for as long as the block lasts (the exit waits for it)."""
    global _next_id
    with _lock:
        _next_id += 1
        key = _next_id
        _jobs[key] = label
    try:
        yield
    finally:
        with _lock:
            del _jobs[key]
            _lock.notify_all()


def wait_for_running(timeout: float) -> list[str]:
    """Wait up to `timeout` seconds for the running jobs to end; the labels of those left."""
    deadline = time.monotonic() + timeout
    with _lock:
        while _jobs and (left := deadline - time.monotonic()) > 0:
            _lock.wait(left)
        return list(_jobs.values())


def install(
    on_leftovers: Callable[[list[str]], None], *, exit_process: bool = True, chain: bool = True
) -> None:
    """Handle SIGTERM in this process: begin the shutdown, then (with `chain`) call the
    handler that was in place (the server's own, which stops it listening). A default or
    ignored handler is never called; a Celery pool child calls none (billiard's would exit
    mid-turn instead of parking it)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handle(signum: int, frame: FrameType | None) -> None:
        begin(on_leftovers, exit_process=exit_process)
        if chain and callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, handle)


def begin(on_leftovers: Callable[[list[str]], None], *, exit_process: bool = True) -> None:
    """Set the event and watch the exit from a thread (a signal handler must return)."""
    if _stopping.is_set():
        return
    _stopping.set()
    with _lock:
        count = len(_jobs)
    log.warning(
        "stopping: no new jobs; %d running job(s) get %.1f s to park",
        count,
        settings.PLANAGENTS_SHUTDOWN_GRACE,
    )
    threading.Thread(
        target=_watch, args=(on_leftovers, exit_process), daemon=True, name="shutdown"
    ).start()


def _watch(on_leftovers: Callable[[list[str]], None], exit_process: bool) -> None:
    leftovers = wait_for_running(float(settings.PLANAGENTS_SHUTDOWN_GRACE))
    if leftovers:
        try:
            on_leftovers(leftovers)
        except Exception:
            log.exception("could not park the jobs still running: %s", ", ".join(leftovers))
    if not exit_process:
        return
    # Parked jobs' threads may still be inside a call that never looks up; the interpreter
    # would wait for them at exit. Give the server its own stop first.
    time.sleep(EXIT_MARGIN)
    log.warning("exiting now (%d job(s) were still running)", len(leftovers))
    _flush_logs()
    os._exit(0)


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):  # exiting anyway: a broken handler must not stop it
            handler.flush()
