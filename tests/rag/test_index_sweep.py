"""A codebase whose indexing job died (a restart, a killed worker) is indexed again."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from planagents import jobs, leases
from planagents.models import JobLease
from rag import embeddings, indexing
from rag.indexing import index_codebase, lease_name, resume_indexing, stale_after
from rag.models import Codebase

pytestmark = pytest.mark.django_db


@pytest.fixture
def dispatched(monkeypatch):
    """What the sweep dispatched; `run()` then runs those jobs, as a worker would."""

    class Dispatched(list):
        def run(self):
            while self:
                job, ids = self.pop(0)
                job(*ids)

    calls = Dispatched()
    monkeypatch.setattr("rag.indexing.dispatch", lambda job, *ids: calls.append((job, ids)))
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: calls.append((job, ids)))
    return calls


def left_behind(codebase, status="indexing", *, lease="expired"):
    """Leave `codebase` as a job that died `status` would: silent for longer than a lease."""
    long_ago = timezone.now() - stale_after() - timedelta(seconds=5)
    Codebase.objects.filter(pk=codebase.pk).update(
        status=status, progress=40, progress_stage="embedding", updated_at=long_ago
    )
    if lease:
        assert leases.acquire(lease_name(codebase.pk), "a worker that was killed", 60)
        if lease == "expired":
            JobLease.objects.filter(name=lease_name(codebase.pk)).update(expires_at=long_ago)


@pytest.fixture
def uploaded(alice, make_codebase, pack_bytes):
    return make_codebase(alice, pack_bytes())


def test_the_sweep_redispatches_a_codebase_whose_lease_ran_out_and_it_gets_ready(
    uploaded, dispatched
):
    left_behind(uploaded)
    jobs.sweep()  # what every Celery worker runs every PLANAGENTS_SWEEP_SECONDS
    assert dispatched == [(resume_indexing, (uploaded.pk,))]
    uploaded.refresh_from_db()
    assert (uploaded.status, uploaded.progress) == ("pending", 0)
    dispatched.run()
    uploaded.refresh_from_db()
    assert uploaded.status == "ready", uploaded.error
    assert uploaded.files.count() == 10


def test_a_codebase_whose_job_never_started_is_dispatched_too(uploaded, dispatched):
    left_behind(uploaded, status="pending", lease=None)  # the server restarted before it ran
    assert indexing.recover_stalled_indexing() == [uploaded.pk]
    dispatched.run()
    uploaded.refresh_from_db()
    assert uploaded.status == "ready", uploaded.error


def test_a_quiet_job_that_still_holds_its_lease_is_left_alone(uploaded, dispatched):
    left_behind(uploaded, lease="live")
    assert indexing.recover_stalled_indexing() == []
    assert dispatched == []


def test_a_job_that_moved_recently_is_left_alone(uploaded, dispatched):
    Codebase.objects.filter(pk=uploaded.pk).update(status="indexing", updated_at=timezone.now())
    assert indexing.recover_stalled_indexing() == []
    assert dispatched == []


@pytest.mark.parametrize("status", ["ready", "failed"])
def test_finished_codebases_are_left_alone(uploaded, dispatched, status):
    left_behind(uploaded, status=status)
    assert indexing.recover_stalled_indexing() == []
    assert dispatched == []


def test_two_sweeps_dispatch_it_once(uploaded, dispatched):
    left_behind(uploaded)
    assert indexing.recover_stalled_indexing() == [uploaded.pk]
    assert indexing.recover_stalled_indexing() == []
    assert len(dispatched) == 1


def test_a_resumed_job_that_was_only_queued_late_does_no_harm(uploaded, dispatched):
    # The sweep cannot tell a dead job from one still queued behind others: when the queued
    # one indexes first, the sweep's copy finds the codebase ready and leaves it alone.
    left_behind(uploaded, status="pending", lease=None)
    assert indexing.recover_stalled_indexing() == [uploaded.pk]
    index_codebase(uploaded.pk)
    uploaded.refresh_from_db()
    indexed_at = uploaded.updated_at
    dispatched.run()
    uploaded.refresh_from_db()
    assert (uploaded.status, uploaded.updated_at) == ("ready", indexed_at)


def test_a_running_job_holds_its_lease_and_releases_it(uploaded, monkeypatch):
    seen = []
    real = embeddings.embed_below

    def embed_below(texts, batch_size=embeddings.BATCH_SIZE):
        # On the job's thread: the vectors are computed on a thread of their own, below.
        seen.append(leases.is_live(lease_name(uploaded.pk)))
        return real(texts, batch_size)

    monkeypatch.setattr(embeddings, "embed_below", embed_below)
    index_codebase(uploaded.pk)
    assert seen and all(seen)
    assert not leases.is_live(lease_name(uploaded.pk))


def test_the_polled_status_notices_a_dead_job_without_a_worker_sweep(
    alice_client, uploaded, dispatched
):
    # The embedded default runs jobs in the server process: after a restart nothing sweeps,
    # so the page's status poll is what notices.
    left_behind(uploaded)
    data = alice_client.get(reverse("rag:status", args=[uploaded.pk])).json()
    assert (data["status"], data["progress"]) == ("pending", 0)
    assert dispatched == [(resume_indexing, (uploaded.pk,))]
    dispatched.run()
    assert alice_client.get(reverse("rag:status", args=[uploaded.pk])).json()["status"] == "ready"


def test_opening_the_page_of_a_stuck_codebase_starts_it_again(alice_client, uploaded, dispatched):
    left_behind(uploaded)
    html = alice_client.get(reverse("rag:detail", args=[uploaded.pk])).content.decode()
    assert 'id="codebase-progress"' in html and "Waiting to be indexed" in html
    assert len(dispatched) == 1


def test_a_failed_codebase_offers_to_index_again_and_does(alice_client, uploaded, dispatched):
    Codebase.objects.filter(pk=uploaded.pk).update(status="failed", error="Out of memory.")
    html = alice_client.get(reverse("rag:detail", args=[uploaded.pk])).content.decode()
    assert f'action="{reverse("rag:retry", args=[uploaded.pk])}"' in html
    response = alice_client.post(reverse("rag:retry", args=[uploaded.pk]), follow=True)
    assert "Indexing it again." in response.content.decode()
    dispatched.run()
    uploaded.refresh_from_db()
    assert (uploaded.status, uploaded.error) == ("ready", "")


def test_retrying_a_codebase_a_live_job_is_indexing_is_refused(alice_client, uploaded, dispatched):
    left_behind(uploaded, lease="live")
    response = alice_client.post(reverse("rag:retry", args=[uploaded.pk]), follow=True)
    assert "being indexed right now" in response.content.decode()
    assert dispatched == []


def test_retry_hides_other_peoples_codebases(client, bob, uploaded, dispatched):
    Codebase.objects.filter(pk=uploaded.pk).update(status="failed")
    client.force_login(bob)
    assert client.post(reverse("rag:retry", args=[uploaded.pk])).status_code == 404
    assert dispatched == []
