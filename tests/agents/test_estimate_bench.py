"""bench/estimate.py replays a database's history: each completed session is estimated from
only the completed sessions before it, and the median absolute percentage error of time and
tokens is reported as history grows. Synthetic rows, no model."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import estimate as bench  # noqa: E402

from agents.estimate import Call, PastSession  # noqa: E402


def session(pk, seconds, mode="planning", profile="local-1.5b"):
    calls = (Call("analyze:0", profile, 900, 100, int(seconds * 1000)),)
    return PastSession(pk, mode, profile, profile, calls)


def test_each_session_is_estimated_from_the_ones_before_it_only():
    history = [(session(1, 10), "completed"), (session(2, 30), "completed"),
               (session(3, 999), "stopped"), (session(4, 20), "completed")]  # fmt: skip
    rows = bench.replay(history)
    assert [r["session"] for r in rows] == [1, 2, 4]  # a stopped session is not estimated
    first, second, third = rows
    assert (first["history"], first["seconds"], first["seconds_ape"]) == (0, None, None)
    assert (second["history"], second["seconds"], second["seconds_ape"]) == (
        1,
        10.0,
        pytest.approx(200 / 3),
    )
    # From sessions 1 and 2 only (median 20 s): the stopped one's 999 s is not history.
    assert (third["history"], third["seconds"], third["seconds_ape"]) == (2, 20.0, 0.0)
    assert third["tokens_ape"] == 0.0


def test_the_error_is_reported_as_history_grows():
    # 30 sessions alternating 10 s (odd) and 30 s (even). An odd one follows as many 10 s as
    # 30 s sessions: estimated 20 s, off by 100 %; an even one follows one more 10 s session:
    # estimated 10 s, off by 67 %.
    rows = bench.replay([(session(i, 10 if i % 2 else 30), "completed") for i in range(1, 31)])
    report = {line["history_at_least"]: line for line in bench.report(rows)}
    assert sorted(report) == [1, 5, 10, 20]
    assert report[20]["sessions"] == 10
    assert report[20]["time_mdape"] == pytest.approx((100 + 200 / 3) / 2)
    assert report[20]["tokens_mdape"] == 0.0


def test_it_can_keep_to_one_mode_and_profile():
    history = [(session(1, 10), "completed"), (session(2, 10, mode="debate"), "completed"),
               (session(3, 10, profile="local"), "completed"), (session(4, 10), "completed")]  # fmt: skip
    rows = bench.replay(history, mode="planning", profile="local-1.5b")
    # Session 3 ran on another profile: not history of these models.
    assert [(r["session"], r["history"]) for r in rows] == [(1, 0), (4, 1)]


def old_database(path, sessions=range(1, 8)):
    """An older schema's database with `sessions`, each a completed planning session of one
    call (session k: 10 k seconds)."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE conversations_planningsession (id INTEGER PRIMARY KEY, mode TEXT,
            agent_a_profile TEXT, agent_b_profile TEXT, status TEXT, created_at TEXT);
        CREATE TABLE conversations_message (id INTEGER PRIMARY KEY, agent TEXT);
        CREATE TABLE agents_llmcall (id INTEGER PRIMARY KEY, session_id INTEGER, message_id
            INTEGER, purpose TEXT, profile TEXT, prompt_tokens INTEGER, completion_tokens
            INTEGER, duration_ms INTEGER);
        """
    )
    for pk in sessions:
        db.execute(
            "INSERT INTO conversations_planningsession VALUES (?, 'planning', 'local-1.5b', "
            "'local-1.5b', 'completed', ?)",
            (pk, f"2026-11-0{pk}"),
        )
        db.execute("INSERT INTO conversations_message VALUES (?, 'A')", (pk,))
        db.execute(
            "INSERT INTO agents_llmcall VALUES (?, ?, ?, 'propose:1', 'local-1.5b', 1000, 100, ?)",
            (pk, pk, pk, 10_000 * pk),
        )
    db.commit()
    db.close()
    return path


def test_it_reads_any_database_path_given(tmp_path, capsys):
    path = old_database(tmp_path / "old.sqlite3")
    assert bench.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}: 7 completed sessions replayed" in out
    lines = {line.split("|")[0].strip(): line for line in out.splitlines() if "|" in line}
    assert set(lines) == {"history ≥", "1", "5"}
    assert lines["5"].split("|")[1].strip() == "2"  # sessions 6 and 7
    assert lines["5"].split("|")[3].strip() == "0 %"  # tokens never change


def test_it_says_when_there_is_no_database(tmp_path, capsys):
    assert bench.main([str(tmp_path / "none.sqlite3")]) == 2
    assert "No database at" in capsys.readouterr().err


def test_an_exported_trace_keeps_each_session_once_and_replays_as_its_database(tmp_path, capsys):
    # Two machines' databases reuse ids 1-3; the trace keeps the six sessions, each once.
    first = old_database(tmp_path / "first.sqlite3", range(1, 4))
    trace = tmp_path / "trace.jsonl"
    assert bench.export(first, trace) == 3
    assert bench.export(first, trace) == 0  # exported again: nothing new
    second = sqlite3.connect(old_database(tmp_path / "second.sqlite3", range(1, 4)))
    second.execute("UPDATE conversations_planningsession SET created_at = '2026-12-0' || id")
    second.commit()
    second.close()
    assert bench.main([str(tmp_path / "second.sqlite3"), "--export", str(trace)]) == 0
    assert "3 sessions added" in capsys.readouterr().out
    both = bench.replay(bench.read_sessions(trace))
    assert [r["history"] for r in both] == [0, 1, 2, 3, 4, 5]  # oldest first, across machines
    from_db = bench.replay(bench.read_sessions(first))
    assert both[:3] == from_db
