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

from planagents import shutdown
from planagents.models import JobLease

log = logging.getLogger(__name__)

_held_here: dict[str, str] = {}  # the leases this process holds now: name → holder
_held_lock = threading.Lock()


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
    with _held_lock:
        _held_here[name] = holder
    try:
        yield holder
    finally:
        stop.set()
        renewer.join(timeout=seconds)
        with _held_lock:
            _held_here.pop(name, None)
        release(name, holder)


def held_here() -> dict[str, str]:
    """The leases this process holds now (name → holder): what a shutdown parks."""
    with _held_lock:
        return dict(_held_here)


def release_dead_here() -> list[str]:
    """Release the leases held by processes of this host that are gone (a server killed or
    stopped before it could release them), so their work is resumed without waiting for
    the leases to run out. The names released."""
    host = socket.gethostname()
    released = []
    for name, holder in JobLease.objects.exclude(holder="").values_list("name", "holder"):
        if _dead_here(holder, host) and JobLease.objects.filter(name=name, holder=holder).update(
            holder="", expires_at=timezone.now()
        ):
            log.warning("released the lease %s: its holder %s is no longer running", name, holder)
            released.append(name)
    return released


def _dead_here(holder: str, host: str) -> bool:
    """Whether `holder` (new_holder's host:pid:id) is a process of this host that is gone.
    Our own pid counts as gone unless this process holds that very lease: a restarted
    container often gets the pid its previous run had."""
    name, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if name != host or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return holder not in held_here().values()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # someone else's live process
    return False


def _keep_renewing(
    name: str,
    holder: str,
    seconds: int,
    stop: threading.Event,
    on_renew: Callable[[], None] | None,
) -> None:
    try:
        while not stop.wait(max(1.0, seconds / 3)):
            if shutdown.stopping():
                return  # a job being parked does not claim to be alive (the park releases it)
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
