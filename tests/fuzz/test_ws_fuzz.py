"""Fuzz the session websocket's frame handler: malformed frames over connect/disconnect churn.

Bounded and deterministic (Hypothesis with a fixed derandomised seed; a seeded random.Random for
the memory check, where Hypothesis's own records of its examples would drown the signal):
every frame gets an answer with the socket still open, the session still answers a valid
resume after them, and the memory kept does not grow with the sockets opened.
bench/fuzz/websocket.py sends the same kinds of frames 10,000+ at a time.
"""

from __future__ import annotations

import asyncio
import gc
import random
import tracemalloc

import pytest
from channels.db import database_sync_to_async
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.frames import (
    DEPTHS,
    FAMILIES,
    FIELDS,
    OPERATIONS,
    TEMPLATES,
    TOKENS,
    build,
    draw_recipe,
    ended_session_harness,
)

pytestmark = pytest.mark.django_db(transaction=True)

CONNECTIONS = 150
"""Sockets the Hypothesis run opens, each sent 1 to 8 frames: about 700 frames in all."""
CHURN_WARM, CHURN_MEASURED = 40, 120
"""The memory check: sockets opened before measuring (first uses fill caches that stay: lazy
imports, compiled queries, a database connection per worker thread), then sockets measured."""
GROWTH_LIMIT = 48 * 1024
"""What the measured sockets may add to the memory kept; keeping one socket's consumer, or
one 64 KB frame, every few sockets would pass it."""

FUZZ = settings(
    max_examples=CONNECTIONS,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
mutations = st.lists(
    st.tuples(
        st.integers(0, OPERATIONS - 1),
        st.floats(0, 1),
        st.floats(0, 1),
        st.integers(0, len(TOKENS) - 1),
    ),
    min_size=1,
    max_size=4,
)
recipes = st.tuples(
    st.integers(0, FAMILIES - 1),
    st.integers(0, len(TEMPLATES) - 1),
    st.integers(0, len(FIELDS) - 1),
    st.integers(0, DEPTHS - 1),
    mutations,
)


async def test_malformed_frames_are_answered_and_leave_the_socket_working(user):
    harness = await database_sync_to_async(ended_session_harness)(user)
    loop = asyncio.get_running_loop()

    @FUZZ
    @given(st.lists(recipes, min_size=1, max_size=8))
    def one_connection(drawn):
        frames = [build(recipe) for recipe in drawn]
        asyncio.run_coroutine_threadsafe(harness.connection(frames), loop).result()

    # Hypothesis runs in a thread; the sockets on this loop, as they would in a server.
    await asyncio.to_thread(one_connection)

    assert harness.connections == CONNECTIONS
    assert harness.tried >= 500, harness
    assert harness.answers["error"] > harness.tried // 2  # mostly refused, as they should be
    assert harness.answers["session.state"] > 0  # and the valid ones among them answered


def kept_bytes() -> int:
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
            tracemalloc.Filter(False, tracemalloc.__file__),
        ]
    )
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def test_socket_churn_with_malformed_frames_keeps_memory_flat(user):
    harness = await database_sync_to_async(ended_session_harness)(user)
    rng = random.Random(8)

    async def churn(sockets: int) -> None:
        for _ in range(sockets):
            await harness.connection([build(draw_recipe(rng)) for _ in range(rng.randint(1, 8))])

    tracemalloc.start()
    try:
        await churn(CHURN_WARM)
        warm = kept_bytes()
        await churn(CHURN_MEASURED)
        grown = kept_bytes() - warm
    finally:
        tracemalloc.stop()

    assert harness.tried >= 400, harness
    assert grown < GROWTH_LIMIT, f"{CHURN_MEASURED} sockets kept {grown:,} bytes more"
