"""Job leases: one holder at a time, taken over only after the holder stopped renewing."""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from planagents import leases
from planagents.models import JobLease

pytestmark = pytest.mark.django_db


def test_it_gives_a_free_lease_to_the_first_asker_only():
    assert leases.acquire("session:1", "a", 30)
    assert not leases.acquire("session:1", "b", 30)
    assert leases.acquire("session:1", "a", 30)  # asking again for one's own lease renews it


def test_it_lets_another_holder_take_a_lease_that_ran_out():
    assert leases.acquire("session:1", "dead", 30)
    JobLease.objects.filter(name="session:1").update(expires_at=timezone.now() - timedelta(1))
    assert leases.acquire("session:1", "alive", 30)
    lease = JobLease.objects.get(name="session:1")
    assert (lease.holder, lease.takeovers) == ("alive", 1)
    assert not leases.renew("session:1", "dead", 30)  # the old holder learns it lost it


def test_a_released_lease_is_free_at_once():
    assert leases.acquire("session:1", "a", 30)
    leases.release("session:1", "a")
    assert not leases.is_live("session:1")
    assert leases.acquire("session:1", "b", 30)


def test_held_refuses_while_another_job_holds_the_lease():
    assert leases.acquire("session:1", "other", 30)
    with pytest.raises(leases.LeaseHeld), leases.held("session:1", seconds=30):
        pass


@pytest.mark.django_db(transaction=True)
def test_held_renews_while_the_block_runs_and_releases_after():
    renewed = threading.Event()
    with leases.held("session:2", seconds=3, on_renew=renewed.set):
        first = JobLease.objects.get(name="session:2").expires_at
        # The renewer calls on_renew after each renewal; the deadline only bounds a broken one.
        assert renewed.wait(timeout=30), "the lease was never renewed"
        assert JobLease.objects.get(name="session:2").expires_at > first
    assert not leases.is_live("session:2")
