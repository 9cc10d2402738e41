"""How good the cost and time estimate is (issue 24, item 5), replayed from a database's trace.

For each completed session in the database, oldest first, the estimate agents.estimate would
have made at its start is computed from only the completed sessions before it (the app's
estimate, history capped at agents.estimate.HISTORY_SESSIONS, no measured speed: the speed
would be read from calls made after the start) and compared with the calls it made. Reported:
the median absolute percentage error (MdAPE) of model time and tokens over all sessions
estimated, and over those estimated with at least 5, 10, 20 … sessions of history, so one
sees how the estimate improves as history grows.

Reads the SQLite file with plain SQL (no migration needed, an older schema does), needs only
LLMCall rows and their sessions, and runs no model:

    .venv/bin/python bench/estimate.py [DATABASE] [--mode planning] [--profile local-1.5b]
        [--json OUT]
    .venv/bin/python bench/estimate.py DATABASE --export bench/logs/trace-local-1.5b.jsonl
    .venv/bin/python bench/estimate.py bench/logs/trace-local-1.5b.jsonl --profile local-1.5b

DATABASE defaults to the app's (PLANAGENTS_SQLITE_PATH, else var/planagents.sqlite3). A
bench's database lives under var/ and is gone with the machine; `--export` appends its
sessions (heads and call sizes and times, no prompts) to a JSON-lines trace kept in the
repository, each once, so the history of local sessions grows across sessions and machines.
Such a file is read like a database.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.estimate import (  # noqa: E402
    FINISHED,
    HISTORY_SESSIONS,
    Call,
    PastSession,
    actual,
    ape,
    estimate,
    mdape,
)

THRESHOLDS = (1, 5, 10, 20, 50)
"""Report the error over sessions estimated from at least this many past sessions."""


def default_database() -> Path:
    raw = os.environ.get("PLANAGENTS_SQLITE_PATH")
    return Path(raw).expanduser() if raw else ROOT / "var" / "planagents.sqlite3"


def read_sessions(path: Path) -> list[tuple[PastSession, str]]:
    """Every session with calls, oldest first, with its status: from a database, or from a
    trace `--export` wrote (`.jsonl`)."""
    if path.suffix == ".jsonl":
        return [(PastSession(**t["session"], calls=tuple(Call(*c) for c in t["calls"])),
                 t["status"]) for t in read_trace(path)]  # fmt: skip
    return [(s, status) for s, status, _ in _read_database(path)]


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The sessions of a trace file, oldest first."""
    if not path.exists():
        return []
    found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(found, key=lambda t: t["started"])


def export(database: Path, out: Path) -> int:
    """Append `database`'s ended sessions that `out` lacks to the trace `out`; how many.
    A session is known by when it started and its id (another machine's database reuses
    ids, not times)."""
    known = {(t["started"], t["session"]["pk"]) for t in read_trace(out)}
    added = 0
    with out.open("a") as handle:
        for session, status, started in _read_database(database):
            if status not in ENDED or (started, session.pk) in known:
                continue
            head = {"pk": session.pk, "mode": session.mode, "agent_a": session.agent_a,
                    "agent_b": session.agent_b}  # fmt: skip
            calls = [[getattr(c, f) for f in Call.__dataclass_fields__] for c in session.calls]
            row = {"started": started, "status": status, "session": head, "calls": calls}
            handle.write(json.dumps(row) + "\n")
            added += 1
    return added


ENDED = ("completed", "failed", "stopped")
"""A session that is still running or paused is exported once it has ended."""


def _read_database(path: Path) -> list[tuple[PastSession, str, str]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        heads = db.execute(
            "SELECT id, mode, agent_a_profile, agent_b_profile, status, created_at "
            "FROM conversations_planningsession ORDER BY created_at, id"
        ).fetchall()
        rows = db.execute(
            "SELECT c.session_id, c.purpose, c.profile, c.prompt_tokens, c.completion_tokens, "
            "c.duration_ms, COALESCE(m.agent, '') FROM agents_llmcall c "
            "LEFT JOIN conversations_message m ON m.id = c.message_id ORDER BY c.id"
        ).fetchall()
    finally:
        db.close()
    calls: dict[int, list[Call]] = defaultdict(list)
    for session_id, purpose, profile, prompt, completion, ms, agent in rows:
        calls[session_id].append(Call(purpose, profile, prompt, completion, ms, agent))
    return [
        (PastSession(pk, mode, a, b, tuple(calls[pk])), status, str(started))
        for pk, mode, a, b, status, started in heads
        if calls[pk]
    ]


def replay(
    sessions: list[tuple[PastSession, str]], *, mode: str | None = None, profile: str | None = None
) -> list[dict[str, Any]]:
    """One row per completed session (of `mode`, with both agents on `profile` when given):
    its estimate from the completed sessions before it, its actuals and the errors."""
    rows: list[dict[str, Any]] = []
    done: list[PastSession] = []
    for session, status in sessions:
        if status != FINISHED:
            continue
        wanted = (mode is None or session.mode == mode) and (
            profile is None or session.agent_a == session.agent_b == profile
        )
        if wanted:
            before = [s for s in done if s.mode == session.mode][-HISTORY_SESSIONS:]
            made = estimate(before, session.mode, session.agent_a, session.agent_b)
            used = actual(session.calls)
            rows.append(
                {
                    "session": session.pk,
                    "mode": session.mode,
                    "history": made.history,
                    "basis": made.basis,
                    "tokens": made.tokens,
                    "tokens_actual": used.tokens,
                    "tokens_ape": ape(made.tokens, used.tokens),
                    "seconds": made.seconds,
                    "seconds_actual": used.seconds,
                    "seconds_ape": ape(made.seconds, used.seconds),
                    "seconds_in_range": (
                        made.seconds_low is not None
                        and made.seconds_high is not None
                        and made.seconds_low <= used.seconds <= made.seconds_high
                    ),
                }
            )
        done.append(session)
    return rows


def report(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MdAPE of time and tokens over the sessions estimated from ≥ k past sessions."""
    lines = []
    for k in THRESHOLDS:
        some = [r for r in rows if r["history"] >= k]
        if not some:
            continue
        seconds, n_seconds = mdape(r["seconds_ape"] for r in some)
        tokens, n_tokens = mdape(r["tokens_ape"] for r in some)
        in_range = sum(1 for r in some if r["seconds_in_range"])
        lines.append(
            {
                "history_at_least": k,
                "sessions": len(some),
                "time_mdape": seconds,
                "time_n": n_seconds,
                "tokens_mdape": tokens,
                "tokens_n": n_tokens,
                "time_in_p25_p75": in_range,
            }
        )
    return lines


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", nargs="?", type=Path, default=None)
    parser.add_argument("--mode", default=None, help="only sessions of this mode")
    parser.add_argument("--profile", default=None, help="only sessions with both agents on it")
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    parser.add_argument("--export", type=Path, default=None, help="append to this trace, stop")
    args = parser.parse_args(argv)
    path = args.database or default_database()
    if not path.exists():
        print(f"No database at {path}.", file=sys.stderr)
        return 2
    if args.export:
        print(f"{export(path, args.export)} sessions added to {args.export}")
        return 0
    rows = replay(read_sessions(path), mode=args.mode, profile=args.profile)
    print(f"{path}: {len(rows)} completed sessions replayed")
    print("history ≥ | sessions | time MdAPE | tokens MdAPE | actual time in p25–p75")
    for line in report(rows):
        print(
            f"{line['history_at_least']:>9} | {line['sessions']:>8} | "
            f"{_pct(line['time_mdape']):>10} | {_pct(line['tokens_mdape']):>12} | "
            f"{line['time_in_p25_p75']}/{line['sessions']}"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "report": report(rows)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
