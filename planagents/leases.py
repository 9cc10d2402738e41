"""Take, renew and release a JobLease with compare-and-swap updates (see planagents.models)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from planagents.models import JobLease

log = logging.getLogger(__name__)


class LeaseHeld(Exception):
    """Another live job holds the lease; try again later."""


def new_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(name: str, holder: str, seconds: int) -> bool:
    """Take the lease if it is free, ours already, or has run out. True when we hold it."""
    now = timezone.now()
    if not JobLease.objects.filter(name=name).exists():
        try:
            with transaction.atomic():
                JobLease.objects.create(
                    name=name,
                    holder=holder,
                    expires_at=now + timedelta(seconds=seconds),
                    acquired_at=now,
                )
            return True
        except IntegrityError:
            pass  # someone created it first: compete for it below like for any other row
    fields = {"holder": holder, "expires_at": now + timedelta(seconds=seconds), "acquired_at": now}
    leases = JobLease.objects.filter(name=name)
    taken = leases.filter(Q(holder="") | Q(holder=holder)).update(**fields)
    if not taken:
        # The holder stopped renewing (its process died): take the work over.
        taken = leases.filter(expires_at__lt=now).update(takeovers=F("takeovers") + 1, **fields)
        if taken:
            log.warning("took over the lease %s: its holder stopped renewing it", name)
    return bool(taken)


def renew(name: str, holder: str, seconds: int) -> bool:
    """Push the expiry out; False when the lease was lost (it ran out and was taken)."""
    expires = timezone.now() + timedelta(seconds=seconds)
    return bool(JobLease.objects.filter(name=name, holder=holder).update(expires_at=expires))


def release(name: str, holder: str) -> None:
    JobLease.objects.filter(name=name, holder=holder).update(holder="", expires_at=timezone.now())


def is_live(name: str) -> bool:
    return (
        JobLease.objects.filter(name=name, expires_at__gte=timezone.now())
        .exclude(holder="")
        .exists()
    )


@contextmanager
def held(
    name: str, *, seconds: int | None = None, on_renew: Callable[[], None] | None = None
) -> Iterator[str]:
    """Hold the lease for the duration of the block, renewing it from a thread every third of
    its length (and calling `on_renew`, e.g. to beat a heartbeat). Raises LeaseHeld if a live
    job holds it."""
    seconds = seconds or settings.PLANAGENTS_JOB_LEASE_SECONDS
    holder = new_holder()
    if not acquire(name, holder, seconds):
        raise LeaseHeld(name)
    stop = threading.Event()
    renewer = threading.Thread(
        target=_keep_renewing,
        args=(name, holder, seconds, stop, on_renew),
        daemon=True,
        name=f"lease-{name}",
    )
    renewer.start()
    try:
        yield holder
    finally:
        stop.set()
        renewer.join(timeout=seconds)
        release(name, holder)


def _keep_renewing(
    name: str,
    holder: str,
    seconds: int,
    stop: threading.Event,
    on_renew: Callable[[], None] | None,
) -> None:
    try:
        while not stop.wait(max(1.0, seconds / 3)):
            try:
                if not renew(name, holder, seconds):
                    log.error("lost the lease %s (held by %s): another job took it", name, holder)
                    return
                if on_renew is not None:
                    on_renew()
            except Exception:
                log.warning("could not renew the lease %s", name, exc_info=True)
    finally:
        connections.close_all()
