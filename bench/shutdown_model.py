"""SIGTERM to the embedded server while the local model is writing a turn (issue 20): how long
the server takes to exit, what state the cut turn is left in, and whether the next start
finishes that turn once, in its own row.

    .venv/bin/python bench/shutdown_model.py [--profile local-1.5b] [--runs 3]

tests/planagents/test_shutdown.py checks the same with the scripted model; this runs the real
one, as production does (the investigation on, the default shutdown grace), so the exit time
includes stopping llama.cpp mid-generation. Each run: a throwaway data dir, the sample pack
indexed, a planning session started parked, one daphne server (`make run`'s) that picks it
up; once a message is streaming with some text, SIGTERM, then a second server on the same
data. A line per run and the median are appended to `--out` (default bench/RESULTS-load.md)
with the load average. Run it alone on the machine. Not a test.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from planagents import jobs
jobs._start = lambda job, args: None  # the server runs the jobs, not this script
from conversations import services
from conversations.tasks import park_session
from rag.indexing import index_codebase
from rag.services import create_codebase_from_upload
owner = get_user_model().objects.create_user("stopper")
pack = SimpleUploadedFile("sample.xml", open("tests/fixtures/repomix/sample.xml", "rb").read())
codebase = create_codebase_from_upload(owner, "sample", [pack])
index_codebase(codebase.pk)
codebase.refresh_from_db()
session = services.start_session(
    owner, codebase=codebase, task="Add rate limiting to the login endpoint", mode="planning",
    agent_a_profile=PROFILE, agent_b_profile=PROFILE,
)
park_session(session.pk)  # as a server stopped before it ran the session would leave it
print(session.pk)
"""

MESSAGES = (
    "SELECT id, seq, turn_key, state, content FROM conversations_message WHERE session_id = ?"
)


class Failed(Exception):
    pass


def rows(db: Path, query: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db, timeout=10) as connection:
        return connection.execute(query, args).fetchall()


def wait_for(what: str, found: Callable[[], Any], process: subprocess.Popen[bytes], log: Path,
             timeout: float) -> Any:  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := found():
            return value
        if process.poll() is not None:
            raise Failed(f"the server exited while waiting for {what}:\n{log.read_text()[-2000:]}")
        time.sleep(0.1)
    raise Failed(f"timed out after {timeout:.0f} s waiting for {what}:\n{log.read_text()[-2000:]}")


def one_run(profile: str) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="planagents-stop-"))
    env = {
        **os.environ,
        "PLANAGENTS_DATA_DIR": str(data),
        "PLANAGENTS_MODEL_DIR": str(ROOT / "var" / "models"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "PLANAGENTS_FAKE_LLM",
                 "PLANAGENTS_LLM_SERVER"):  # fmt: skip
        env.pop(name, None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   capture_output=True)  # fmt: skip
    setup = subprocess.run([*manage, "shell", "-c", f"PROFILE = {profile!r}\n{SETUP}"],
                           cwd=ROOT, env=env, check=True, capture_output=True, text=True)  # fmt: skip
    session = int(setup.stdout.strip().splitlines()[-1])
    db = data / "planagents.sqlite3"
    started: list[subprocess.Popen[bytes]] = []

    def server(name: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = data / f"{name}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-e", "tcp:port=0:interface=127.0.0.1",
             "planagents.asgi:application"],
            cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        started.append(process)
        return process, log

    try:
        first, first_log = server("first")
        streaming = wait_for(
            "a turn mid-stream",
            lambda: [m for m in rows(db, MESSAGES, session) if m[3] == "streaming" and len(m[4]) > 80],
            first, first_log, timeout=900,
        )  # fmt: skip
        cut_id, cut_seq, cut_key, _, cut_text = streaming[0]
        before = len(rows(db, MESSAGES, session))
        sent = time.monotonic()
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=120)
        took = time.monotonic() - sent
        log = first_log.read_text()
        parked = f"session {session} parked mid-turn" in log
        status = rows(db, "SELECT status FROM conversations_planningsession WHERE id = ?", session)
        held = rows(db, "SELECT name FROM planagents_joblease WHERE holder != ''")
        added = len(rows(db, MESSAGES, session)) - before

        second, second_log = server("second")
        resumed_at = time.monotonic()
        wait_for(
            "the session to reach the human",
            lambda: rows(db, "SELECT 1 FROM conversations_planningsession "
                             "WHERE id = ? AND status != 'running'", session),
            second, second_log, timeout=1800,
        )  # fmt: skip
        resumed = time.monotonic() - resumed_at
        after = rows(db, MESSAGES, session)
        seqs_ok = [m[1] for m in after] == list(range(1, len(after) + 1))
        again = [m for m in after if m[2] and m[2].split("~")[0] == cut_key]
        once = [(m[0], m[1], m[3]) for m in again] == [(cut_id, cut_seq, "complete")]
        final = rows(db, "SELECT status FROM conversations_planningsession WHERE id = ?", session)
        return {
            "exit_s": round(took, 1),
            "cut_turn": cut_key,
            "cut_chars": len(cut_text),
            "parked_logged": parked,
            "status_after_stop": status[0][0] if status else None,
            "leases_held": len(held),
            "rows_added_after_cut": added,
            "resumed_once_in_its_row": once,
            "seqs_in_order": seqs_ok,
            "second_start_to_human_s": round(resumed, 1),
            "final_status": final[0][0] if final else None,
        }
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="local-1.5b")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-load.md")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    results = []
    for n in range(args.runs):
        try:
            result = one_run(args.profile)
        except Failed as exc:
            result = {"failed": str(exc)}
        print(f"run {n + 1}: {result}", flush=True)
        results.append(result)
    load_end = os.getloadavg()[0]
    exits = [r["exit_s"] for r in results if "exit_s" in r]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    lines = [
        f"\n### {when} SIGTERM mid-turn, {args.profile} (bench/shutdown_model.py)\n",
        "| run | exit s | cut turn (chars written) | parked | leases held | rows added | "
        "resumed once, same row | seqs in order | second start → human s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, r in enumerate(results, 1):
        if "failed" in r:
            lines.append(f"| {n} | failed: {r['failed'].splitlines()[0]} | | | | | | | |")
            continue
        lines.append(
            f"| {n} | {r['exit_s']} | {r['cut_turn']} ({r['cut_chars']}) | {r['parked_logged']} "
            f"| {r['leases_held']} | {r['rows_added_after_cut']} | {r['resumed_once_in_its_row']} "
            f"| {r['seqs_in_order']} | {r['second_start_to_human_s']} |"
        )
    median = f"{statistics.median(exits):.1f}" if exits else "none"
    lines.append(
        f"\nMedian exit {median} s over {len(exits)} of {len(results)} runs (target ≤ 10 s); "
        f"load {load_start:.2f} → {load_end:.2f}.\n"
    )
    with args.out.open("a") as out:
        out.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
