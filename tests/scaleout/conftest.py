"""Fixtures for the scale-out tests: real PostgreSQL, Redis, daphne and Celery processes.

They run in the PostgreSQL pass of scripts/test.sh (DATABASE_URL set), which also starts the
services when they are stopped. The processes get the test database's name, so they see
exactly what the test commits (the tests are transactional)."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from planagents.env import redis_channel_layers
from tests.scaleout.topology import Topology, redis_reachable

# A Redis database of their own: nothing else on this machine uses it.
REDIS_URL = os.environ.get("PLANAGENTS_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")


def _skip_reason() -> str | None:
    if connection.vendor != "postgresql":
        return (
            "scale-out tests need PostgreSQL: set DATABASE_URL=postgres://… "
            "(scripts/test.sh runs them in its PostgreSQL pass)"
        )
    if not redis_reachable(REDIS_URL):
        return f"scale-out tests need Redis at {REDIS_URL} (scripts/services.sh starts it)"
    return None


@pytest.fixture
def services_up(db):  # type: ignore[no-untyped-def]
    reason = _skip_reason()
    if reason and connection.vendor == "postgresql":
        # The PostgreSQL pass exists to run these: a missing Redis there is a failure.
        pytest.fail(reason)
    if reason:
        pytest.skip(reason)
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


@pytest.fixture
def on_celery(services_up, settings):  # type: ignore[no-untyped-def]
    """This test process dispatches jobs to Celery on the test Redis, as a web server would."""
    from planagents.celery import app

    settings.CELERY_BROKER_URL = REDIS_URL
    settings.CHANNEL_LAYERS = redis_channel_layers(REDIS_URL)
    app.conf.broker_url = REDIS_URL
    yield
    app.close()


@pytest.fixture
def topology(services_up, settings, tmp_path):  # type: ignore[no-untyped-def]
    db = connection.settings_dict
    env = {
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": REDIS_URL,
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "PLANAGENTS_DATA_DIR": str(settings.DATA_DIR),
        "PLANAGENTS_FAKE_LLM": "1",
        "PLANAGENTS_DEFAULT_PROFILE": "fake",
        "PLANAGENTS_FAKE_LLM_DELAY": "0.005",
        "PLANAGENTS_JOB_LEASE_SECONDS": "4",
        "PLANAGENTS_SWEEP_SECONDS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PLANAGENTS_LOG_LEVEL": "INFO",
    }
    top = Topology(env=env, logs=tmp_path / "logs")
    yield top
    top.stop()
    for proc in top.procs_seen:
        # Shown by pytest only when the test failed.
        print(f"----- {proc.name} ({proc.log}) -----\n{proc.text()[-4000:]}")
