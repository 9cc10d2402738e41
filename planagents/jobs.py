"""The one dispatch seam for background jobs (indexing, agent turns).

Jobs are plain functions that take ids and are safe to run twice. `dispatch()` runs them after
the current transaction commits: on a Celery worker when a broker is configured (issue
"Scale-out"), otherwise in this process, on a worker thread started from the server's event
loop so that what the job publishes to the in-memory channel layer reaches the consumers.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from asgiref.sync import SyncToAsync, sync_to_async
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.utils.module_loading import import_string

from planagents import leases, shutdown

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


def _label(job: Job, args: tuple[int | str, ...]) -> str:
    return f"{job.__name__}({', '.join(map(str, args))})"


def distributed() -> bool:
    """True when jobs run on Celery workers (a broker is configured), not in this process."""
    return bool(settings.CELERY_BROKER_URL)


def job_path(job: Job) -> str:
    path = f"{job.__module__}.{job.__qualname__}"
    if "<" in path:
        raise ValueError(f"a job must be a module-level function, not {path}")
    return path


def _start(job: Job, args: tuple[int | str, ...]) -> None:
    if shutdown.stopping():
        # The work is on record (the job takes ids); the sweep at the next start finds it.
        log.warning("not starting %s: the server is stopping", _label(job, args))
        return
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
        with shutdown.running(_label(job, args)):
            job(*args)
    except shutdown.ShuttingDown:
        # A job that parks itself catches this; one that did not leaves its lease to park.
        log.warning("job %s was cut off by the shutdown", _label(job, args))
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


PARKERS = {
    "session": "conversations.tasks.park_session",
    "codebase": "rag.indexing.park_indexing",
}
"""By the kind of a lease (its name up to the colon), what makes its work resumable at once
when the job that held it stops without finishing: called with the id after the colon, once
the lease is released, it marks the work stalled so the sweep at the next start dispatches
it again. Work of other kinds is resumed once the sweep finds it stalled, a lease later."""


def park_held(leftovers: list[str] | None = None) -> None:
    """Release every lease this process still holds and park its work: the shutdown calls it
    for the jobs still running at the end of the grace (`leftovers`, for the log)."""
    if leftovers:
        log.warning("still running at the end of the grace: %s", ", ".join(leftovers))
    for name, holder in leases.held_here().items():
        leases.release(name, holder)
        park(name)


def park(lease_name: str) -> None:
    kind, _, key = lease_name.partition(":")
    path = PARKERS.get(kind)
    if path is None or not key.isdigit():
        log.warning("%s parked: its lease is released; the sweep resumes it", lease_name)
        return
    try:
        import_string(path)(int(key))
    except Exception:
        log.warning("could not park %s", lease_name, exc_info=True)


def serve() -> None:
    """Called once by the ASGI module. Under daphne, once its reactor runs: SIGTERM parks
    the running jobs before the server stops (planagents.shutdown), and the work that the
    previous server left (parked, or killed with it) is dispatched again at once."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None:
        return  # not serving (a script importing the module): nothing to hook
    reactor.callWhenRunning(_started)  # after the reactor put its own SIGTERM handler in


def _started() -> None:
    # Twisted runs its startup triggers before the asyncio loop turns (and logs nowhere):
    # hand the recovery to the loop, as the jobs it dispatches must start from it.
    shutdown.install(park_held)
    if not distributed():  # else the Celery workers sweep
        asyncio.get_event_loop().call_soon(_recover_on_loop)


def _recover_on_loop() -> None:
    task = asyncio.get_running_loop().create_task(
        sync_to_async(recover_at_start, thread_sensitive=False)()
    )
    _running.add(task)
    task.add_done_callback(_running.discard)


def recover_at_start() -> None:
    """Resume what a previous server of this host left: release the leases its dead
    processes held, park their work, then run every sweep."""
    try:
        for name in leases.release_dead_here():
            park(name)
    except Exception:
        log.warning("could not release the leases of dead processes", exc_info=True)
    sweep()
    connections.close_all()


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
