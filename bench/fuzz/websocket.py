"""Fuzz the session websocket with 10,000+ malformed frames over connect/disconnect churn.

    .venv/bin/python bench/fuzz/websocket.py [--frames 10000] [--seed 8]

Frames are drawn by a seeded random.Random from the generators the fuzz test uses
(tests/fuzz/frames.py): valid frames with a field swapped for a hostile value, dropped or
wrapped, cut and spliced JSON, nesting thousands deep, text around the 64 KB cap and 1 MB,
binary frames. Each socket gets 1 to 8 of them, then a valid resume, and is closed; all run on
one event loop against a temporary SQLite database, as in one server process. A crash is a
frame that went unanswered, closed the socket, or raised in the consumer (caught there: the
generic server error). Memory is traced from the 10th percent of the run to its end.
Exit status 1 when any crashed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    os.environ["PLANAGENTS_SQLITE_PATH"] = str(Path(tempfile.mkdtemp()) / "fuzz.sqlite3")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def kind_of(crash: str) -> str:
    """What went wrong, in a line: the exception raised, or how the frame went unanswered."""
    lines = [line for line in crash.strip().splitlines() if line and not line[0].isspace()]
    last = lines[-1] if lines else crash
    return last.split(": ", 1)[0] if "Error" in last or "Exception" in last else last[:60]


def kept_bytes() -> int:
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
            tracemalloc.Filter(False, tracemalloc.__file__),
        ]
    )
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def run(frames: int, seed: int) -> int:
    from channels.db import database_sync_to_async
    from django.contrib.auth import get_user_model

    from tests.fuzz.frames import Crash, build, draw_recipe, ended_session_harness

    user = await database_sync_to_async(get_user_model().objects.create_user)("fuzz")
    harness = await database_sync_to_async(ended_session_harness)(user)
    rng = random.Random(seed)
    crashes: list[str] = []
    slowest = 0.0
    warm = None
    tracemalloc.start()
    started = time.perf_counter()
    while harness.tried < frames:
        if warm is None and harness.tried >= frames // 10:
            warm = kept_bytes()
        batch = [build(draw_recipe(rng)) for _ in range(rng.randint(1, 8))]
        began = time.perf_counter()
        try:
            await harness.connection(batch)
        except Crash as exc:
            crashes.append(f"socket {harness.connections}: {exc}")
        slowest = max(slowest, (time.perf_counter() - began) / len(batch))
    elapsed = time.perf_counter() - started
    grown = kept_bytes() - (warm or 0)
    tracemalloc.stop()
    answers = ", ".join(f"{kind} {count}" for kind, count in sorted(harness.answers.items()))
    print(f"frames tried: {harness.tried} (seed {seed}) on {harness.connections} sockets")
    print(f"in {elapsed:.1f} s (traced); slowest socket: {slowest * 1000:.0f} ms a frame")
    print(f"answers: {answers}")
    print(f"crashes (unanswered, closed or raised): {len(crashes)}")
    print(f"memory kept by the last 90% of the run: {grown / 1024:+.1f} KiB")
    kinds = Counter(kind_of(crash) for crash in crashes)
    for kind, count in kinds.most_common():
        print(f"  {count:6d}  {kind}")
    for crash in crashes[:3]:
        print(crash[:2000])
    return 1 if crashes else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    setup_django()
    return asyncio.run(run(args.frames, args.seed))


if __name__ == "__main__":
    sys.exit(main())
