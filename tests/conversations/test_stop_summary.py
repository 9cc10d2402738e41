"""The summary written on Stop only summarises what was said (a summary of a finished debate:
test_debate_session): with nothing said no model is asked; a model's summary is labelled as
such, loses the file paths nobody mentioned and flags the agreements nobody made."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from tests.conversations.test_debate_session import CONTINUE, STOP
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

INVENTED = "Agreed: use Redis.\n\n```python\nlimiter = Redis()\n```\n\nObjections: none."


async def test_stop_before_any_reply_is_finished_says_nothing_was_decided(start, user):
    held = Hold(" ".join(f"word{i}" for i in range(500)), pieces=3)  # waits for the Stop
    FakeProvider.script("fake", NO_LOOKUPS, held, INVENTED)
    session = await start(mode="debate")
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")

    summary = await database_sync_to_async(lambda: session.messages.get(node="summary"))()
    assert "nothing was proposed or decided" in summary.content
    assert "Agreed" not in summary.content and "```" not in summary.content
    await client.close()


INVENTED_FILE = "todo/ratelimit_backend.py"


async def test_a_summary_naming_a_file_nobody_mentioned_loses_it_with_a_note(start, user):
    session = await start(mode="debate", task="Add rate limiting to login in `todo/auth.py`")
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # Agent A's evidence plan, before its first turn
        "A1: count failed logins in `todo/auth.py:1`.", CONTINUE,
        "B1: fine by me, nothing left.", STOP,
        f"## Proposals\n- Count failures in `todo/auth.py`.\n- Keep them in `{INVENTED_FILE}:12`.\n"
        f"- `{INVENTED_FILE}`\n\n## Files\n`todo/auth.py:1`, `todo/auth.py:400`",
    )  # fmt: skip
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("completed")

    summary = await database_sync_to_async(lambda: session.messages.get(node="summary"))()
    assert INVENTED_FILE not in summary.content
    assert "Keep them in _[a path not in the discussion]_." in summary.content
    assert "Taken out: 1 file path(s) the discussion never mentions" in summary.content
    # Paths the discussion named stay; a line it never cited is taken off its path.
    assert "Count failures in `todo/auth.py`." in summary.content
    assert "`todo/auth.py:1`, `todo/auth.py`" in summary.content
    assert "taken off 1 path(s)" in summary.content
    # Labelled as the model's, of what it was given: the two replies and, before them, the
    # investigation's plan and evidence.
    looked_up = await database_sync_to_async(session.messages.filter(node="investigate").count)()
    assert looked_up >= 2
    assert summary.content.startswith(
        f"_The model's summary of {2 + looked_up} messages, checked against them._"
    )
    # The page was shown the checked summary last.
    ends = [
        e
        for e in client.events
        if e["type"] == "message.end" and e["message"]["seq"] == summary.seq
    ]
    assert (
        ends[-1]["message"]["content"] == summary.content
        and INVENTED_FILE not in ends[-1]["message"]["html"]
    )
    await client.close()


async def test_an_agreement_nobody_made_is_flagged(start, user):
    session = await start(mode="debate")
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,
        "A1: count failed logins per user.", CONTINUE,
        "B1: per user misses attacks spread over accounts; count per IP too.", STOP,
        "## Agreed\n- Count per user only.\n\n## Open\n- Nothing was decided about the window.",
    )  # fmt: skip
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("completed")

    summary = await database_sync_to_async(lambda: session.messages.get(node="summary"))()
    assert "## Agreed _(not found in the discussion)_" in summary.content
    assert "- Nothing was decided about the window.\n" in summary.content + "\n"
    assert "1 claim(s) of agreement that nobody in the discussion made" in summary.content
    await client.close()
