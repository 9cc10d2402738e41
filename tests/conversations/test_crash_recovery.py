"""A session whose job died mid-turn resumes from the last committed node when someone looks
at it: the cut-off message is re-streamed in place, never duplicated, and nothing is lost."""

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agents.providers.fake import FakeProvider
from conversations.models import Message, PlanningSession, PlanningState
from tests.conversations.wsclient import Client

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
    keys = [m.turn_key for m in messages if m.turn_key]
    assert len(keys) == len(set(keys))
    proposal = next(m for m in messages if m.turn_key == "propose:1")
    assert proposal.seq == 3 and proposal.state == "complete"
    assert proposal.content.startswith("**Proposal.** Throttle failed logins.")
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    # The analysis written before the crash was kept, not re-run.
    assert [m.node for m in messages].count("analyze_codebase") == 1
    await client.close()


async def test_a_live_session_is_not_restarted_by_a_viewer(start, user, monkeypatch):
    monkeypatch.setenv("PLANAGENTS_FAKE_LLM_DELAY", "0.01")
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until(lambda e: e["type"] == "message.delta")
    second = Client(user, session.pk)
    await second.connect()
    await client.until_state("awaiting_human", node="checkpoint", timeout=90)
    messages = await database_sync_to_async(
        lambda: list(session.messages.values_list("turn_key", flat=True))
    )()
    keys = [k for k in messages if k]
    assert len(keys) == len(set(keys))
    await client.close()
    await second.close()
