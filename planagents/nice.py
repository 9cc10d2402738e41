"""Work below the web server's priority: a function run on a fresh thread whose nice value is
raised first. Linux threads inherit the nice value of the thread that creates them, so a
server started there (llama.cpp's loop and its workers) stays below too; the thread ends with
the function, so no pooled thread keeps a lowered priority into later work."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)

R = TypeVar("R")

_people_busy: Callable[[], bool] | None = None


def people_busy_when(check: Callable[[], bool] | None) -> None:
    """Say how to tell that people's work holds the CPU (agents registers whether a local-model
    call of a live turn or a regeneration is in line or generating); None: never."""
    global _people_busy
    _people_busy = check


def yield_to_people(longest: float, poll: float = 0.5) -> float:
    """Wait while people's work holds the CPU, at most `longest` seconds; the seconds waited.
    On two cores a nice value is not enough: llama.cpp's threads wait on each other, and
    any other thread on a core slows both (docs/decisions.md, "Indexing waits its turn")."""
    check = _people_busy
    started = time.monotonic()
    while check is not None and time.monotonic() - started < longest:
        try:
            if not check():
                break
        except Exception:  # a check that fails (the database away) holds nothing up
            log.warning("could not tell whether people's work is running", exc_info=True)
            break
        time.sleep(poll)
    return time.monotonic() - started


def in_niced_thread(work: Callable[[], R], nice: int, name: str = "niced") -> R:
    """`work()` on a fresh thread at `nice` (0: as is); its result, or its exception
    re-raised on the caller's thread."""
    result: dict[str, object] = {}

    def run() -> None:
        try:
            if nice and sys.platform == "linux":
                try:
                    # With a thread id, PRIO_PROCESS renices that one thread (Linux semantics).
                    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
                except OSError:
                    log.warning("could not lower the priority of %s", name, exc_info=True)
            result["value"] = work()
        except BaseException as exc:  # re-raised on the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["value"]  # type: ignore[return-value]
