"""The Celery app: `celery -A planagents worker`. Used only when REDIS_URL is set.

There is one task, `planagents.run_job`, which runs any job by its dotted path: jobs stay plain
functions that take ids, and `planagents.jobs.dispatch` stays the one seam that starts them.
The reliability settings (late ack, reject on worker lost, prefetch 1, time limits, visibility
timeout) live in settings.py under CELERY_* and are explained in docs/decisions.md.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")

app = Celery("planagents")
app.config_from_object("django.conf:settings", namespace="CELERY")

log = logging.getLogger(__name__)


@app.task(name="planagents.run_job")
def run_job_task(path: str, *args: int | str) -> None:
    from django.utils.module_loading import import_string

    from planagents.jobs import run_job

    run_job(import_string(path), args)


# ------------------------------------------------------------------ crash recovery

_sweeper_stop = threading.Event()


@worker_ready.connect
def _start_sweeper(**_: Any) -> None:
    """Every worker looks for work whose job died (its lease ran out) and dispatches it again:
    a worker killed mid-turn leaves its task unacknowledged in Redis until the visibility
    timeout (an hour), far too long for the person watching."""
    from django.conf import settings

    interval = settings.PLANAGENTS_SWEEP_SECONDS
    if interval <= 0:
        return
    threading.Thread(target=_sweep_forever, args=(interval,), daemon=True, name="sweeper").start()


@worker_shutdown.connect
def _stop_sweeper(**_: Any) -> None:
    _sweeper_stop.set()


def _sweep_forever(interval: float) -> None:
    from django.db import close_old_connections

    from planagents.jobs import sweep

    while not _sweeper_stop.wait(interval):
        close_old_connections()
        sweep()  # stalled sessions and stalled indexing; logs (never raises) a failure
