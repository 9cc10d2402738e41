"""The one dispatch seam for background jobs (indexing, agent turns).

Jobs are plain functions that take ids and are safe to run twice. `dispatch()` runs them after
the current transaction commits: on a Celery worker when a broker is configured (issue
"Scale-out"), otherwise in this process, on a worker thread started from the server's event
loop so that what the job publishes to the in-memory channel layer reaches the consumers.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from asgiref.sync import SyncToAsync, sync_to_async
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)

Job = Callable[..., Any]

_running: set[asyncio.Future[Any]] = set()


def dispatch(job: Job, *args: int | str) -> None:
    """Run `job(*args)` in the background once the current transaction has committed."""
    if distributed():
        from planagents.celery import run_job_task

        # delay_on_commit: a worker must never pick up an id whose row is not committed yet.
        run_job_task.delay_on_commit(job_path(job), *args)
        return
    transaction.on_commit(lambda: _start(job, args))


def distributed() -> bool:
    """True when jobs run on Celery workers (a broker is configured), not in this process."""
    return bool(settings.CELERY_BROKER_URL)


def job_path(job: Job) -> str:
    path = f"{job.__module__}.{job.__qualname__}"
    if "<" in path:
        raise ValueError(f"a job must be a module-level function, not {path}")
    return path


def _start(job: Job, args: tuple[int | str, ...]) -> None:
    loop = _server_loop()
    if loop is None:
        # No server loop (management command, plain script): a daemon thread will do.
        threading.Thread(target=run_job, args=(job, args), daemon=True, name=job.__name__).start()
        return

    def schedule() -> None:
        task = loop.create_task(sync_to_async(run_job, thread_sensitive=False)(job, args))
        _running.add(task)
        task.add_done_callback(_running.discard)

    if _in_loop(loop):
        schedule()
    else:
        loop.call_soon_threadsafe(schedule)


def run_job(job: Job, args: tuple[int | str, ...]) -> None:
    """Run a job with fresh database connections, logging (never raising) its failure."""
    close_old_connections()
    try:
        job(*args)
    except Exception:
        log.exception("job %s%r failed", job.__name__, args)
    finally:
        connections.close_all()


SWEEPS = (
    "conversations.services.recover_stalled_sessions",
    "rag.indexing.recover_stalled_indexing",
)
"""What each Celery worker runs every PLANAGENTS_SWEEP_SECONDS: functions that dispatch again
the work whose job died (its lease ran out)."""


def sweep() -> None:
    """Run every sweep once; one that fails is logged and does not stop the others."""
    for path in SWEEPS:
        try:
            import_string(path)()
        except Exception:
            log.warning("the sweep %s failed", path, exc_info=True)


async def wait_for_jobs(timeout: float = 30.0) -> None:
    """Wait until every in-process job started on this loop has finished (used by tests)."""
    pending = [task for task in _running if not task.done()]
    if pending:
        await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), timeout)


def _server_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    # Inside sync_to_async (a sync view or a database call from a consumer), asgiref keeps a
    # reference to the loop that is serving the request.
    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if loop is not None and loop.is_running():
        return loop
    return None


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
