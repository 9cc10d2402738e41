"""In one process, two runs of the same session take turns (conversations.tasks' lock), and the
locks are kept only while a run holds or waits for one: a long-lived server does not keep a
lock for every session it ever ran."""

import threading
import time

import pytest

from conversations import tasks


class Runs:
    """Stands for `_leased_runs`: each run takes `seconds`; counts how many overlap."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.inside = self.most = 0
        self.ended = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, session_id: int) -> None:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(self.seconds)
        with self._lock:
            self.inside -= 1
        self.ended.set()


@pytest.fixture
def runs(monkeypatch, settings):
    settings.CELERY_BROKER_URL = ""  # the embedded default: the in-process lock is the one
    fake = Runs()
    monkeypatch.setattr(tasks, "_leased_runs", fake)
    return fake


def test_the_locks_of_sessions_that_ran_are_let_go(runs):
    for session_id in range(1, 201):
        tasks.run_session(session_id)
    assert tasks._session_locks == {}


def test_two_runs_of_one_session_take_turns(runs):
    runs.seconds = 0.3
    first = threading.Thread(target=tasks.run_session, args=(7,))
    second = threading.Thread(target=tasks.run_session, args=(7,))
    first.start()
    time.sleep(0.05)
    second.start()  # waits for the first
    assert runs.ended.wait(5)
    # A third comes as the first has let go and the second runs: it must wait for the
    # second, on the very lock the second holds.
    third = threading.Thread(target=tasks.run_session, args=(7,))
    third.start()
    for thread in (first, second, third):
        thread.join(5)
    assert runs.most == 1
    assert tasks._session_locks == {}


def test_runs_of_different_sessions_do_not_wait_for_each_other(runs):
    runs.seconds = 0.3
    threads = [threading.Thread(target=tasks.run_session, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert runs.most == 2
