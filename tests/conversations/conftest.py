import pytest
from channels.db import database_sync_to_async

from conversations import services
from planagents.jobs import wait_for_jobs


@pytest.fixture
async def jobs_drained():
    """Wait for in-process jobs started during the test before the database is flushed."""
    yield
    await wait_for_jobs(timeout=60)


@pytest.fixture
def start(user, codebase):
    """Start a session through the service, as the new-session form does."""

    async def _start(mode: str = "planning", task: str = "Add rate limiting to login", **kwargs):
        return await database_sync_to_async(services.start_session)(
            user,
            codebase=codebase,
            task=task,
            mode=mode,
            **{"agent_a_profile": "fake", "agent_b_profile": "fake", **kwargs},
        )

    return _start


@pytest.fixture
def watched(start, user, monkeypatch):
    """Start a session with its page connected before the run begins, for tests of live-only
    events (progress, plan.updated, deltas): a page that connects later gets the replayed
    messages and the current state, not those events, so such a test must not race the run."""
    from tests.conversations.wsclient import Client

    async def _watched(**kwargs):
        runs: list[int] = []
        with monkeypatch.context() as held:
            held.setattr(services, "_dispatch_run", runs.append)
            session = await start(**kwargs)
        client = Client(user, session.pk)
        await client.connect()
        assert runs == [session.pk]
        await database_sync_to_async(services._dispatch_run)(session.pk)
        return session, client

    return _watched
