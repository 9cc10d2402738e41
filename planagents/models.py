"""Leases: which job holds which piece of work, until when.

A job running on a Celery worker takes the lease named after its work ("session:42") before
it starts and renews it while it runs. A second copy of the job (a re-delivered task, a
duplicate dispatch) cannot take a lease that is still live; a worker that died stops renewing,
so its lease runs out and another worker may take the work over. Every change is a
compare-and-swap on the row, so two workers never both believe they hold it.
"""

from __future__ import annotations

from django.db import models


class JobLease(models.Model):
    name = models.CharField(max_length=100, unique=True)
    """What is leased, e.g. "session:42"."""
    holder = models.CharField(max_length=100, blank=True)
    """Who holds it: host, process and a random token; empty once released."""
    expires_at = models.DateTimeField()
    """When the lease runs out unless renewed; after it, anyone may take it."""
    acquired_at = models.DateTimeField(null=True, blank=True)
    """When the current holder took it."""
    takeovers = models.PositiveIntegerField(default=0)
    """How many times it was taken from a holder whose lease had run out (a crashed job)."""

    def __str__(self) -> str:
        return f"{self.name} → {self.holder or 'free'}"
