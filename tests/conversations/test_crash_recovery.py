"""A session whose job died mid-turn resumes from the last committed node when someone looks
at it: the cut-off message is re-streamed in place, never duplicated, and nothing is lost."""

import asyncio
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agents.planning import nodes, workflow
from agents.providers.fake import FakeProvider, Hold
from conversations import services
from conversations.models import Message, Plan, PlanningSession, PlanningState
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


def crashed_session(user, codebase):
    """What the database holds after a process died while Agent A was writing a proposal."""
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limit", task="Add rate limiting to login",
        agent_a_profile="fake", agent_b_profile="fake", status="running", last_seq=3,
        heartbeat_at=timezone.now() - timedelta(minutes=10),
    )  # fmt: skip
    PlanningState.objects.create(
        session=session, current_node="propose_changes", analysis="Login is in todo/api.py."
    )
    Message.objects.create(
        session=session, seq=1, role="user", content="Add rate limiting to login"
    )
    Message.objects.create(
        session=session, seq=2, role="agent", agent="A", node="analyze_codebase",
        turn_key="analyze:0", content="Login is in todo/api.py.",
    )  # fmt: skip
    Message.objects.create(
        session=session, seq=3, role="agent", agent="A", node="propose_changes",
        turn_key="propose:1", state="streaming", content="**Proposal.** Half a propo",
    )  # fmt: skip
    return session


async def test_a_stalled_session_resumes_without_duplicating_the_cut_off_turn(user, codebase):
    session = await database_sync_to_async(crashed_session)(user, codebase)
    FakeProvider.script(
        "fake",
        {
            "summary": "Throttle failed logins.",
            "steps": [
                {"title": "Count", "detail": "In `todo/api.py:1`.", "files": ["todo/api.py"]}
            ],
            "files": [{"path": "todo/api.py", "action": "modify", "reason": "login"}],
        },
    )
    client = Client(user, session.pk)
    await client.connect(after_seq=0)  # looking at the session notices the dead job
    await client.until_state("awaiting_human", node="checkpoint")

    messages = await database_sync_to_async(lambda: list(session.messages.order_by("seq")))()
    assert [m.turn_key for m in messages if m.turn_key] == [
        "analyze:0",
        "propose:1",
        "checks:1",  # the app's checks for Agent B (tests/test_api.py tests todo/api.py)
        "review:1",
        "validate:1",
    ]
    assert len(FakeProvider.calls("fake", text=False)) == 1  # the proposal, written once
    proposal = next(m for m in messages if m.turn_key == "propose:1")
    assert proposal.seq == 3 and proposal.state == "complete"
    assert proposal.content.startswith("**Proposal.** Throttle failed logins.")
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    # The analysis written before the crash was kept, not re-run.
    assert [m.node for m in messages].count("analyze_codebase") == 1
    await client.close()


async def test_a_live_session_is_not_restarted_by_a_viewer(start, user, monkeypatch):
    held = Hold("The login flow starts in the view and goes on.", pieces=2)  # the analysis
    FakeProvider.script("fake", NO_LOOKUPS, held)
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)

    dispatched: list[int] = []
    dispatch = services._dispatch_run
    monkeypatch.setattr(
        services, "_dispatch_run", lambda pk: (dispatched.append(pk), dispatch(pk))[-1]
    )
    second = Client(user, session.pk)
    await second.connect()  # a viewer's resume looks for a dead job
    await second.until_state("running")
    held.release.set()
    await client.until_state("awaiting_human", node="checkpoint")
    assert dispatched == []
    analyses = await database_sync_to_async(
        lambda: list(
            session.messages.filter(node="analyze_codebase").values_list("content", "state")
        )
    )()
    assert analyses == [("The login flow starts in the view and goes on.", "complete")]
    await client.close()
    await second.close()


class Crash(Exception):
    """The process dying between a node's work and the commit of its state."""


def crash_after(handler):
    def run(ctx):
        handler(ctx)
        raise Crash

    return run


def approved_session(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limit", task="Add rate limiting to login",
        agent_a_profile="fake", agent_b_profile="fake", fallback_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(
        session=session,
        current_node="finalize_plan",
        iteration=1,
        proposal={
            "summary": "Throttle failed logins.",
            "steps": [],
            "files": [{"path": "todo/api.py", "action": "modify", "reason": "login"}],
        },
    )
    return session


def test_a_crash_after_the_plan_is_written_resumes_without_a_second_plan_or_call(
    user, codebase, monkeypatch
):
    session = approved_session(user, codebase)
    with monkeypatch.context() as m:
        m.setitem(workflow.HANDLERS, "finalize_plan", crash_after(nodes.finalize_plan))
        with pytest.raises(Crash):
            workflow.run_planning(session.pk)
    assert PlanningState.objects.get(session=session).current_node == "finalize_plan"
    assert Plan.objects.filter(session=session).count() == 1

    assert workflow.run_planning(session.pk) == "completed"
    (plan,) = Plan.objects.filter(session=session)
    assert plan.version == 1
    assert len(FakeProvider.calls("fake", text=False)) == 1  # the plan was written once
    assert session.messages.filter(node="finalize_plan").count() == 1
