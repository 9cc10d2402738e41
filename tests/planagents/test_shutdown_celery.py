"""A Celery worker's warm shutdown (SIGTERM) parks the turn it runs: the worker exits in
seconds, not at the end of the session, and the next worker finishes the turn once, in its
own message. Runs in the PostgreSQL pass, on the scale-out fixtures."""

from __future__ import annotations

import time

import pytest

from conversations.models import Message, PlanningSession
from tests.scaleout.conftest import on_celery, services_up, topology  # noqa: F401 - fixtures
from tests.scaleout.test_celery_session import start_session

pytestmark = [pytest.mark.scaleout, pytest.mark.django_db(transaction=True)]


def until(what, found, timeout=120):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_a_warm_shutdown_parks_the_turn_and_the_next_worker_finishes_it_once(
    topology,  # noqa: F811
    on_celery,  # noqa: F811
    user,
    codebase,
):
    topology.env["PLANAGENTS_FAKE_LLM_DELAY"] = "0.03"  # a turn streams for seconds
    topology.env["PLANAGENTS_SHUTDOWN_GRACE"] = "2"
    first = topology.worker("worker1")
    session = start_session(user, codebase)
    cut = until(
        "a turn mid-stream",
        lambda: (
            Message.objects.filter(session=session, state="streaming")
            .exclude(content="")
            .filter(content__regex=r".{80}")
            .first()
        ),
    )

    sent = time.monotonic()
    first.popen.terminate()  # SIGTERM to the main process: a warm shutdown
    first.popen.wait(timeout=60)
    assert time.monotonic() - sent <= 10, first.text()[-3000:]
    assert f"session {session.pk} parked mid-turn ({cut.turn_key})" in first.text()
    session.refresh_from_db()
    assert session.status == "running"

    topology.worker("worker2")
    until(
        "the human's turn",
        lambda: PlanningSession.objects.exclude(status="running").filter(pk=session.pk).exists(),
    )
    messages = list(Message.objects.filter(session=session).order_by("seq"))
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    again = [m for m in messages if (m.turn_key or "").split("~")[0] == cut.turn_key]
    assert [(m.pk, m.state) for m in again] == [(cut.pk, "complete")]
