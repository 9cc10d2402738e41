"""The Celery app: `celery -A planagents worker`. Used only when REDIS_URL is set.

There is one task, `planagents.run_job`, which runs any job by its dotted path: jobs stay plain
functions that take ids, and `planagents.jobs.dispatch` stays the one seam that starts them.
The reliability settings (late ack, reject on worker lost, prefetch 1, time limits, visibility
timeout) live in settings.py under CELERY_* and are explained in docs/decisions.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from typing import Any

from celery import Celery
from celery.signals import task_prerun, worker_ready, worker_shutdown, worker_shutting_down

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


# ------------------------------------------------------------------ clean shutdown
#
# A warm shutdown (SIGTERM to the worker) stops taking tasks and waits, without a bound, for
# the running ones to finish: a session job could hold the worker for its whole run. The pool
# children are not told (Celery resets their SIGTERM to the default, death). So the worker
# passes SIGTERM on to its children, where it sets the shutdown event: a session job parks at
# its next piece of text (planagents.shutdown), its task ends normally and the sweep of a live
# worker, or of this one when it is back, resumes the session at once.


_parks_on_sigterm: set[int] = set()  # the pids that installed the handler below


@task_prerun.connect
def _park_on_sigterm(**_: Any) -> None:
    """In each pool child, before its first task: SIGTERM parks the running job instead of
    killing it. Not at worker_process_init: billiard puts its own exit handler in after it."""
    from planagents import shutdown

    if os.getpid() in _parks_on_sigterm or not _in_pool_child():
        return
    _parks_on_sigterm.add(os.getpid())
    # Neither billiard's handler (sys.exit mid-turn) nor a process exit from here: the job's
    # own task returns, then the pool ends the child. A job that never looks up is left
    # running, its lease held: the warm shutdown waits for it, and a worker killed meanwhile
    # leaves the lease to run out.
    shutdown.install(_still_running, exit_process=False, chain=False)


def _in_pool_child() -> bool:
    from billiard.process import current_process

    return current_process().name != "MainProcess"


def _still_running(leftovers: list[str]) -> None:
    log.warning("still running after the grace, parked at their next piece: %s", leftovers)


@worker_shutting_down.connect
def _tell_the_pool(how: str = "", **_: Any) -> None:
    """In the worker's main process, on a warm shutdown: SIGTERM to the pool children."""
    if how != "Warm":
        return
    from billiard.process import active_children

    for child in active_children():
        if child.pid:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(child.pid, signal.SIGTERM)
