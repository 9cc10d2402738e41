"""SIGTERM to the server `make run` starts: it exits within seconds, and the turn it cut off
mid-stream is resumed once at the next start, in its own message. Then the pieces, in this
process: a turn parks, a job that never looks up is parked for it, nothing new starts, the
leases of dead processes are freed, and the server's own SIGTERM handler still runs."""

from __future__ import annotations

import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from agents.providers.fake import FakeProvider, Hold
from conversations import services
from conversations.models import Message, PlanningSession
from conversations.tasks import lease_name
from planagents import jobs, leases, shutdown
from tests.scripted import NO_LOOKUPS

ROOT = Path(__file__).resolve().parents[2]
GRACE = 2.0

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
    owner, codebase=codebase, task="Add rate limiting to login", mode="planning",
    agent_a_profile="fake", agent_b_profile="fake",
)
park_session(session.pk)  # as a server stopped before it ran the session would leave it
print(session.pk)
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PLANAGENTS_DATA_DIR": str(tmp_path),
        "PLANAGENTS_FAKE_LLM": "1",
        "PLANAGENTS_DEFAULT_PROFILE": "fake",
        "PLANAGENTS_FAKE_LLM_DELAY": "0.05",  # a turn streams for a few seconds
        "PLANAGENTS_EVIDENCE_STEPS": "0",
        "PLANAGENTS_SHUTDOWN_GRACE": str(GRACE),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    # The embedded default, whichever pass runs this: its own SQLite file (read below), jobs in
    # process, the in-memory channel layer.
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)
    return env


@pytest.fixture
def servers(
    tmp_path: Path, env: dict[str, str]
) -> Iterator[Callable[[str], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-e", "tcp:port=0:interface=127.0.0.1",
             "planagents.asgi:application"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def rows(db: Path, query: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db, timeout=10) as connection:
        return connection.execute(query, args).fetchall()


def wait_for(what: str, found: Callable[[], Any], process: subprocess.Popen[bytes], log: Path,
             timeout: float = 60) -> Any:  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        if process.poll() is not None:
            pytest.fail(f"the server exited while waiting for {what}:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")


def test_sigterm_mid_turn_exits_in_seconds_and_the_next_start_finishes_the_turn_once(
    tmp_path, env, servers
):
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   capture_output=True)  # fmt: skip
    setup = subprocess.run([*manage, "shell", "-c", SETUP], cwd=ROOT, env=env, check=True,
                           capture_output=True, text=True)  # fmt: skip
    session = int(setup.stdout.strip().splitlines()[-1])
    db = tmp_path / "planagents.sqlite3"
    messages = (
        "SELECT id, seq, turn_key, state, content FROM conversations_message WHERE session_id = ?"
    )

    # The first server finds the session parked and starts it.
    first = servers("first")
    streaming = wait_for(
        "a turn mid-stream",
        lambda: [m for m in rows(db, messages, session) if m[3] == "streaming" and len(m[4]) > 20],
        first, tmp_path / "first.log",
    )  # fmt: skip
    cut_id, cut_seq, cut_key, _, _ = streaming[0]
    before = rows(db, messages, session)

    sent = time.monotonic()
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=30)
    took = time.monotonic() - sent
    log = (tmp_path / "first.log").read_text()
    assert took <= 10, f"exited {took:.1f} s after SIGTERM"
    assert f"session {session} parked mid-turn ({cut_key})" in log, log[-3000:]
    status = rows(db, "SELECT status FROM conversations_planningsession WHERE id = ?", session)
    assert status == [("running",)]  # parked, not paused nor failed: nobody has to press Continue
    assert not rows(db, "SELECT name FROM planagents_joblease WHERE holder != ''")
    assert len(rows(db, messages, session)) == len(before)  # nothing added after the cut

    # The next start resumes it: the cut turn is written again in the same row, once.
    second = servers("second")
    wait_for(
        "the session to reach the human",
        lambda: rows(
            db, "SELECT 1 FROM conversations_planningsession WHERE id = ? AND status != 'running'", session
        ),
        second, tmp_path / "second.log",
    )  # fmt: skip
    after = rows(db, messages, session)
    assert [m[1] for m in after] == list(range(1, len(after) + 1)), "a seq is missing or repeated"
    again = [m for m in after if m[2] and m[2].split("~")[0] == cut_key]
    assert [(m[0], m[1], m[3]) for m in again] == [(cut_id, cut_seq, "complete")]
    assert all(m[3] == "complete" for m in after)
    text = again[0][4]
    assert text and text[: len(text) // 2] not in text[len(text) // 2 :], (
        "the turn was written twice"
    )


# ------------------------------------------------------------------ in this process

REPLY = " ".join(f"word{i}" for i in range(400))


@pytest.fixture
def fresh_shutdown(monkeypatch, settings):
    """A shutdown event of this test's own (the real one is process-wide)."""
    monkeypatch.setattr(shutdown, "_stopping", threading.Event())
    settings.PLANAGENTS_SHUTDOWN_GRACE = 0.5


def start_session(user, codebase) -> PlanningSession:
    return services.start_session(
        user, codebase=codebase, task="Add rate limiting to login", mode="planning",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip


def until(what: str, found: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def streaming(session: PlanningSession) -> Message | None:
    return Message.objects.filter(
        session=session, state="streaming", content__contains="word3"
    ).first()


def parked(session: PlanningSession) -> bool:
    session.refresh_from_db()
    stale = django_settings.PLANAGENTS_JOB_LEASE_SECONDS
    return (
        session.status == "running"
        and session.heartbeat_at is not None
        and (time.time() - session.heartbeat_at.timestamp()) > stale
        and not leases.is_live(lease_name(session.pk))
    )


@pytest.mark.django_db(transaction=True)
def test_a_turn_mid_stream_parks_itself_and_the_sweep_resumes_it_in_its_message(
    user, codebase, settings, fresh_shutdown, caplog
):
    settings.PLANAGENTS_FAKE_LLM_DELAY = 0.01
    FakeProvider.script("fake", NO_LOOKUPS, REPLY)  # the evidence plan, then the analysis
    session = start_session(user, codebase)
    cut = until("a turn mid-stream", lambda: streaming(session))

    with caplog.at_level(logging.WARNING):
        shutdown.begin(jobs.park_held, exit_process=False)
        assert shutdown.wait_for_running(10) == []
    assert parked(session)
    cut.refresh_from_db()
    assert cut.state == "streaming" and cut.content != REPLY  # left as it was, for the restart
    assert f"session {session.pk} parked mid-turn ({cut.turn_key})" in caplog.text

    shutdown._stopping.clear()  # the next start
    jobs.recover_at_start()
    until(
        "the human's turn",
        lambda: not PlanningSession.objects.filter(pk=session.pk, status="running").exists(),
    )
    again = Message.objects.filter(session=session, turn_key__startswith=cut.turn_key)
    assert [(m.pk, m.seq, m.state) for m in again] == [(cut.pk, cut.seq, "complete")]


@pytest.mark.django_db(transaction=True)
def test_a_job_that_never_looks_up_is_parked_at_the_end_of_the_grace(
    user, codebase, fresh_shutdown, caplog, monkeypatch
):
    # A turn's stop check sees the shutdown (agents.turns); this job stands for one in code
    # that never polls (a model loading its weights, a long lookup).
    from types import SimpleNamespace

    from agents import turns

    monkeypatch.setattr(turns, "shutdown", SimpleNamespace(check=lambda: None))
    held = Hold("The login flow starts in the view and goes on.", pieces=2)  # the analysis
    FakeProvider.script("fake", NO_LOOKUPS, held)
    session = start_session(user, codebase)
    assert held.reached.wait(60)

    with caplog.at_level(logging.WARNING):
        shutdown.begin(jobs.park_held, exit_process=False)
        until("the park", lambda: parked(session), timeout=10)
    assert "still running at the end of the grace: run_session(" in caplog.text
    held.release.set()  # the job's next piece meets the shutdown: it ends, its turn unfinished
    assert shutdown.wait_for_running(10) == []
    assert parked(session)


@pytest.mark.django_db(transaction=True)
def test_no_job_starts_once_the_server_is_stopping(fresh_shutdown, caplog):
    ran: list[int] = []
    shutdown._stopping.set()
    with caplog.at_level(logging.WARNING):
        jobs._start(ran.append, (1,))
    time.sleep(0.2)
    assert ran == []
    assert "not starting append(1): the server is stopping" in caplog.text


@pytest.mark.django_db
def test_the_leases_of_this_hosts_dead_processes_are_released():
    host = socket.gethostname()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    holders = {
        "session:1": f"{host}:{gone.stdout.strip()}:a",  # a process that exited
        "session:2": f"{host}:{os.getppid()}:b",  # a live one
        "session:3": f"elsewhere:{gone.stdout.strip()}:c",  # another machine's
        "session:4": f"{host}:{os.getpid()}:d",  # this pid, but not this process's lease
    }
    for name, holder in holders.items():
        assert leases.acquire(name, holder, 60)

    assert sorted(leases.release_dead_here()) == ["session:1", "session:4"]
    assert [leases.is_live(name) for name in holders] == [False, True, True, False]


def test_sigterm_begins_the_shutdown_and_still_runs_the_servers_handler(fresh_shutdown):
    called: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: called.append(signum))
    try:
        shutdown.install(lambda leftovers: None, exit_process=False)
        os.kill(os.getpid(), signal.SIGTERM)
        until("the handler", lambda: called)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert shutdown.stopping()
    assert called == [signal.SIGTERM]


@pytest.mark.django_db
def test_a_parked_session_is_not_made_to_look_alive_by_its_job_still_running(
    user, codebase, fresh_shutdown
):
    from agents.runtime import beat
    from conversations.tasks import park_session

    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, task="Add rate limiting to login", status="running"
    )
    shutdown._stopping.set()
    park_session(session.pk)
    beat(session.pk)  # the job, still inside a call that never looked up
    assert parked(session)


STUCK = """
import os, signal, threading, time
import django
django.setup()
from planagents import shutdown

def stuck():  # a job inside a call that never looks up (a long prompt read)
    with shutdown.running("stuck(1)"):
        time.sleep(600)

threading.Thread(target=stuck).start()  # not a daemon: the interpreter would wait for it
shutdown.install(lambda leftovers: print("parking", leftovers, flush=True))
os.kill(os.getpid(), signal.SIGTERM)
"""


def test_a_process_whose_job_never_looks_up_still_exits_after_the_grace(env):
    env = {**env, "DJANGO_SETTINGS_MODULE": "planagents.settings", "PLANAGENTS_SHUTDOWN_GRACE": "1"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", STUCK], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    took = time.monotonic() - started

    assert done.returncode == 0, done.stderr[-2000:]
    assert "parking ['stuck(1)']" in done.stdout
    # Far below the 600 s the job would keep it alive (django.setup on a busy machine included):
    # the bound tells the exit from no exit, it does not time it (bench/load.py does).
    assert took < 120
