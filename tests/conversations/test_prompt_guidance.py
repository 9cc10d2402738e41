"""The task analysis picks what the agents are told: a bug fix asks for the cause and a failing
test, a feature for the codebase's patterns, and a Vietnamese task (typed with or without
diacritics) is answered in Vietnamese. Checked on the prompts the model actually received."""

import pytest
from channels.db import database_sync_to_async

from agents.analysis import GUIDANCE
from agents.prompts import AGENT_A, AGENT_B, TEAM
from agents.providers.fake import FakeProvider
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def run_to_checkpoint(start, user, task):
    session = await start(task=task)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()
    await database_sync_to_async(session.refresh_from_db)()
    return session, [c for c in FakeProvider.calls("fake") if c.messages[0].role == "system"]


def agent_turns(calls):
    """The calls of Agent A's and Agent B's turns (not the app's own checks)."""
    return [c for c in calls if c.messages[0].content.startswith(TEAM)]


@pytest.mark.parametrize(
    ("task", "kind", "other"),
    [
        ("Fix the crash: login raises TypeError when the password is empty", "bug_fix", "feature"),
        ("Add an endpoint that exports every todo as CSV", "feature", "bug_fix"),
    ],
)
async def test_each_agent_turn_is_told_what_this_kind_of_task_asks(
    start, user, codebase, task, kind, other
):
    session, calls = await run_to_checkpoint(start, user, task)
    assert session.task_analysis["type"] == kind
    turns = agent_turns(calls)
    assert {role for c in turns for role in (AGENT_A, AGENT_B) if role in c.request} == {
        AGENT_A,
        AGENT_B,
    }
    for call in turns:
        assert GUIDANCE[kind] in call.messages[0].content
        assert GUIDANCE[other] not in call.prompt


@pytest.mark.parametrize(
    "task", ["Sửa lỗi đăng nhập khi mật khẩu trống", "sua loi dang nhap khi mat khau trong"]
)
async def test_a_vietnamese_task_asks_every_agent_turn_for_vietnamese(start, user, codebase, task):
    session, calls = await run_to_checkpoint(start, user, task)
    assert session.language == "vi"
    turns = agent_turns(calls)
    assert len(turns) >= 2
    for call in turns:
        assert "Write your answer in Vietnamese." in call.messages[0].content
        assert "Write your answer in English." not in call.prompt
