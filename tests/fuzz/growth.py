"""How the work a function does grows with its input: compare n with 4n, not a wall clock.

A linear function does about 4× the work on an input 4× longer; the backtracking regexes this
guards against did 16× (quadratic) or 64× (cubic). CPU time of this process is what is
compared, the best of a few runs each, so other processes on the machine barely matter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

LINEAR_LIMIT = 8.0
"""Growth over 4× input that still counts as linear (quadratic is 16×)."""


def cpu_cost(run: Callable[[Any], object], arg: Any, repeats: int = 5) -> float:
    """Seconds of CPU per call, the best of `repeats` batches of calls lasting ≥ 20 ms."""
    calls = 1
    while True:  # find a batch size that the clock can measure well
        start = time.process_time()
        for _ in range(calls):
            run(arg)
        spent = time.process_time() - start
        if spent >= 0.02:
            break
        calls *= 4
    best = spent / calls
    for _ in range(repeats - 1):
        start = time.process_time()
        for _ in range(calls):
            run(arg)
        best = min(best, (time.process_time() - start) / calls)
    return best


def growth(run: Callable[[Any], object], make: Callable[[int], Any], n: int) -> float:
    """How many times more work `run` does on `make(4 * n)` than on `make(n)`."""
    small = cpu_cost(run, make(n))
    large = cpu_cost(run, make(4 * n))
    return large / small
