"""An indexing job a stopping server cut is dispatched again as soon as the next server starts,
not a lease period later (planagents.jobs.PARKERS → rag.indexing.park_indexing)."""

import threading
import time

import pytest

from planagents import jobs, leases, shutdown
from rag import indexing
from rag.indexing import index_codebase, lease_name, resume_indexing
from rag.models import Codebase

pytestmark = pytest.mark.django_db(transaction=True)  # the job runs on a thread of its own


@pytest.fixture
def fresh_shutdown(monkeypatch, settings):
    """A shutdown event of this test's own (the real one is process-wide)."""
    monkeypatch.setattr(shutdown, "_stopping", threading.Event())
    settings.PLANAGENTS_SHUTDOWN_GRACE = 0.5


@pytest.fixture
def dispatched(monkeypatch):
    """What the sweep dispatched; `run()` then runs those jobs, as the server would."""

    class Dispatched(list):
        def run(self):
            while self:
                job, ids = self.pop(0)
                job(*ids)

    calls = Dispatched()
    monkeypatch.setattr("rag.indexing.dispatch", lambda job, *ids: calls.append((job, ids)))
    return calls


@pytest.fixture
def uploaded(alice, make_codebase, pack_bytes):
    return make_codebase(alice, pack_bytes())


class Stuck:
    """Stands for the indexing work of a big upload, which never looks up: it waits until
    `release`, then reports progress as the job would on its way out."""

    def __init__(self, codebase_id: int) -> None:
        self.codebase_id = codebase_id
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, codebase_id: int) -> None:
        self.reached.set()
        self.release.wait(10)
        indexing._progress(codebase_id, 50, "embedding")


def until(what, found, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def test_an_indexing_job_cut_by_the_shutdown_is_dispatched_again_at_the_next_start(
    uploaded, dispatched, fresh_shutdown, monkeypatch
):
    stuck, build = Stuck(uploaded.pk), indexing._build
    monkeypatch.setattr(indexing, "_build", stuck)
    job = threading.Thread(target=jobs.run_job, args=(index_codebase, (uploaded.pk,)))
    job.start()
    assert stuck.reached.wait(10)
    assert leases.is_live(lease_name(uploaded.pk))

    shutdown.begin(jobs.park_held, exit_process=False)  # SIGTERM
    until("the park", lambda: not leases.is_live(lease_name(uploaded.pk)))
    stuck.release.set()  # the job, still running as the process exits, must not undo the park
    job.join(10)

    shutdown._stopping.clear()  # the next start, at once: no lease period has passed
    monkeypatch.setattr(indexing, "_build", build)
    jobs.recover_at_start()
    assert dispatched == [(resume_indexing, (uploaded.pk,))]
    dispatched.run()
    uploaded.refresh_from_db()
    assert uploaded.status == "ready", uploaded.error


def test_a_codebase_another_job_took_meanwhile_is_not_parked(uploaded, dispatched):
    Codebase.objects.filter(pk=uploaded.pk).update(status="indexing")
    assert leases.acquire(lease_name(uploaded.pk), "a job on another worker", 60)
    beat = Codebase.objects.get(pk=uploaded.pk).updated_at
    indexing.park_indexing(uploaded.pk)
    assert Codebase.objects.get(pk=uploaded.pk).updated_at == beat
    assert indexing.recover_stalled_indexing() == []  # no second job beside the live one
    assert dispatched == []
