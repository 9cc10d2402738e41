"""Resident memory over cycles of "upload a small pack, run one planning session" (issue 20).

    .venv/bin/python bench/memory_cycles.py [--cycles 20] [--warmup 3] [--profile fake]
    .venv/bin/python bench/memory_cycles.py --cycles 6 --tracemalloc   # what grows, by line

Each cycle does what a user does, through the same service functions the pages call: upload
the pack (a new codebase each time, so each cycle indexes and loads one more index), wait for
it to open, start a planning session with both agents on `--profile`, approve it at its
checkpoint (a clarifying question gets the stock answer), and wait for the session to complete
and for the codebase's vectors (they fill in behind) to be all written, so each figure is of a
process at rest. After each cycle the process's resident memory (VmRSS) is printed, with what
the process-wide caches (planagents.caches) hold. The verdict compares the last cycle with the
end of the warm-up: flat means within 10 % (the target). `--tracemalloc` traces Python
allocations too (slow: several times longer) and prints, at the end, the tracebacks whose
memory grew most since the warm-up.

Everything runs in this process on a throwaway data dir and SQLite database, with jobs on
daemon threads (the embedded default's in-process jobs, as a server runs them). The default
profile is the scripted one ("fake", PLANAGENTS_FAKE_LLM=1): what it measures is the app's
memory, not a model's; with a local profile the process also holds the model and llama.cpp's
prompt cache (PLANAGENTS_LLM_CACHE_MB, filled over the first sessions: warm up past it). The
first cycle loads the sentence encoder (torch, a few hundred MB). A line with the figures is
appended to `--results` (default bench/RESULTS-memory.md). Not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("PLANAGENTS_BENCH_DATA") or tempfile.mkdtemp(prefix="planagents-mem-"))
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
os.environ["PLANAGENTS_DATA_DIR"] = str(DATA)
os.environ["PLANAGENTS_SQLITE_PATH"] = str(DATA / "bench.sqlite3")
os.environ.setdefault("PLANAGENTS_FAKE_LLM", "1")
os.environ.setdefault("PLANAGENTS_FAKE_LLM_DELAY", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PLANAGENTS_LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: E402
from django.core.management import call_command  # noqa: E402

from agents.investigation.clarify import pending_question  # noqa: E402
from agents.providers.fake import FakeProvider  # noqa: E402
from conversations import services  # noqa: E402
from conversations.models import PlanningSession, PlanningState  # noqa: E402
from planagents import caches, leases  # noqa: E402
from rag import api  # noqa: E402
from rag.indexing import lease_name  # noqa: E402
from rag.models import Codebase  # noqa: E402
from rag.services import create_codebase_from_upload  # noqa: E402

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
TASK = (
    "Add per-client rate limiting to the API: 60 requests per minute, answer 429 with Retry-After."
)
ANSWER = "No preference: do what the issue describes and the code supports."
FLAT = 0.10
"""The target: resident memory after the warm-up stays within this fraction."""
Status = PlanningSession.Status


def rss_mb() -> float:
    """This process's resident memory, in MB (Linux: /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status: this bench needs Linux")


def wait(condition: Callable[[], bool], what: str, timeout: float) -> None:
    pause = threading.Event()
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"gave up waiting for {what} after {timeout:.0f} s")
        pause.wait(0.1)


def cycle(user: Any, n: int, pack: Path, profile: str, timeout: float) -> str:
    """One upload and one planning session on it, to its end; the session's final status."""
    upload = SimpleUploadedFile(pack.name, pack.read_bytes(), content_type="text/xml")
    codebase = create_codebase_from_upload(user, f"{pack.stem} {n}", [upload], allow_duplicate=True)
    wait(
        lambda: Codebase.objects.get(pk=codebase.pk).status in ("ready", "failed"),
        f"cycle {n}'s indexing",
        timeout,
    )
    codebase.refresh_from_db()
    if not codebase.is_ready:
        raise SystemExit(f"cycle {n}: indexing failed: {codebase.error}")
    session = services.start_session(
        user,
        codebase=codebase,
        task=TASK,
        mode=PlanningSession.Mode.PLANNING,
        agent_a_profile=profile,
        agent_b_profile=profile,
    )
    approved = False
    status = ""

    def finished() -> bool:
        nonlocal approved, status
        status = PlanningSession.objects.values_list("status", flat=True).get(pk=session.pk)
        if status in (Status.COMPLETED, Status.STOPPED, Status.FAILED):
            return True
        if status != Status.AWAITING_HUMAN:
            return False
        at_checkpoint = PlanningState.objects.filter(
            session_id=session.pk, current_node="checkpoint"
        ).exists()
        if at_checkpoint and not approved:
            services.approve(user, session.pk)
            approved = True
            return False
        if not at_checkpoint and pending_question(session.pk):
            services.post_user_message(user, session.pk, ANSWER)
            return False
        return not at_checkpoint  # paused for the human (an error): nothing more will happen

    wait(finished, f"cycle {n}'s session", timeout)
    # The codebase opened once its lexical index was written; its vectors went on filling in
    # behind while the session ran. The cycle ends when that job has too, so the figure after
    # it is of a process at rest (on a busy machine, jobs of past cycles still embedding had
    # piled up, and their threads' memory with them).
    wait(
        lambda: (
            api.vector_counts(codebase.pk)[0] >= api.vector_counts(codebase.pk)[1]
            and not leases.is_live(lease_name(codebase.pk))
        ),
        f"cycle {n}'s vectors",
        timeout,
    )
    return str(status)


def cache_line() -> str:
    """What each process-wide cache (planagents.caches) holds, against its bound."""
    parts = []
    for state in caches.report():
        bound = (
            f"{state.max_bytes / caches.MB:.0f} MB"
            if state.max_bytes is not None
            else f"{state.max_entries} entries"
        )
        if state.entries is None or state.bytes is None:
            parts.append(f"{state.name} ≤ {bound}")
        else:
            held = f"{state.entries} entries {state.bytes / caches.MB:.1f} MB"
            parts.append(f"{state.name} {held} of {bound}")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3, help="cycles before the baseline")
    parser.add_argument("--profile", default="fake")
    parser.add_argument("--pack", type=Path, default=PACK)
    parser.add_argument("--timeout", type=float, default=900, help="seconds per wait")
    parser.add_argument("--tracemalloc", action="store_true", help="trace Python allocations")
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "RESULTS-memory.md")
    args = parser.parse_args()
    if args.cycles < 1 or not 0 <= args.warmup < args.cycles:
        parser.error("need --cycles ≥ 1 and 0 ≤ --warmup < --cycles")

    if args.tracemalloc:
        tracemalloc.start(10)
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-only-not-a-secret")
    start = rss_mb()
    print(f"data in {DATA}; {args.pack.name}; profile {args.profile}; RSS at start {start:.0f} MB")

    rss: list[float] = []
    baseline_snapshot = None
    for n in range(1, args.cycles + 1):
        started = time.monotonic()
        status = cycle(user, n, args.pack, args.profile, args.timeout)
        # The scripted model keeps its latest 1,000 calls (prompts included) for tests to read:
        # its memory, not the app's, and it would grow through the first cycles.
        FakeProvider.reset()
        rss.append(rss_mb())
        traced = ""
        if args.tracemalloc:
            traced = f", Python {tracemalloc.get_traced_memory()[0] / caches.MB:.1f} MB"
        print(
            f"cycle {n:2d}: {status} in {time.monotonic() - started:5.1f} s; "
            f"RSS {rss[-1]:6.0f} MB{traced}; {cache_line()}",
            flush=True,
        )
        if args.tracemalloc and n == max(args.warmup, 1):
            baseline_snapshot = tracemalloc.take_snapshot()

    base = rss[args.warmup - 1] if args.warmup else start
    growth = (rss[-1] - base) / base
    after = rss[args.warmup :]
    verdict = "flat" if abs(growth) <= FLAT else "NOT flat"
    summary = (
        f"RSS at start {start:.0f} MB, after the warm-up ({args.warmup} cycles) {base:.0f} MB, "
        f"after {args.cycles} cycles {rss[-1]:.0f} MB ({growth:+.1%}; min {min(after):.0f}, "
        f"max {max(after):.0f}): {verdict} (target ±{FLAT:.0%})"
    )
    print(summary)

    if baseline_snapshot is not None:
        print("\nPython allocations that grew most since the warm-up (tracemalloc):")
        stats = tracemalloc.take_snapshot().compare_to(baseline_snapshot, "traceback")
        for stat in stats[:12]:
            print(f"  {stat.size_diff / 1024:+9.0f} KiB {stat.count_diff:+7d} blocks")
            for line in stat.traceback.format(limit=4):
                print(f"      {line}")

    load = os.getloadavg()[0]
    row = (
        f"| {datetime.now(UTC):%Y-%m-%d %H:%M} | {args.pack.name} | {args.profile} | "
        f"{args.cycles} | {args.warmup} | {start:.0f} | {base:.0f} | {rss[-1]:.0f} | "
        f"{max(after):.0f} | {growth:+.1%} | {verdict} | {load:.2f} |\n"
    )
    if not args.results.exists():
        args.results.write_text(
            "# Resident memory over upload + planning session cycles\n\n"
            "Written by `bench/memory_cycles.py` (one row per run; MB of VmRSS).\n\n"
            "| when (UTC) | pack | profile | cycles | warm-up | start | after warm-up | end "
            "| max after warm-up | growth | verdict | load avg |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
    with args.results.open("a") as handle:
        handle.write(row)
    print(f"appended to {args.results}")


if __name__ == "__main__":
    main()
