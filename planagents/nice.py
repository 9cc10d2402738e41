"""Work below the web server's priority: a function run on a fresh thread whose nice value is
raised first. Linux threads inherit the nice value of the thread that creates them, so a
server started there (llama.cpp's loop and its workers) stays below too; the thread ends with
the function, so no pooled thread keeps a lowered priority into later work."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)

R = TypeVar("R")


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
