"""Each agent turn records which of the human's notes it was given (Message.heard), and those
notes are in the prompt the model received: a note typed mid-turn, and a change request at the
checkpoint."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from rag.models import CodeFile
from tests.conversations.test_planning_session import plan_draft, proposal
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

NOTE = "Keep the counters in Redis, not in process memory."
CHANGE = "Also log every refused login attempt."


def source_path(codebase):
    return CodeFile.objects.filter(codebase=codebase, role="source").values_list("path", flat=True)[
        0
    ]


async def test_notes_and_change_requests_reach_the_prompt_and_are_recorded_as_heard(
    start, user, codebase
):
    path = await database_sync_to_async(source_path)(codebase)
    held = Hold(f"The login flow starts at `{path}:1`. " * 3, pieces=2)
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # investigate
        held,  # analyze_codebase
        proposal(path),
        "Looks right; add a test.",  # no objection: nothing to verify
    )
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "user.message", "text": NOTE})
    note = await client.until(
        lambda e: e["type"] == "message.end" and e["message"]["content"] == NOTE
    )
    held.release.set()
    await client.until_state("awaiting_human", node="checkpoint")

    def by_node(node):
        return list(session.messages.filter(node=node, role="agent").order_by("seq"))

    analysis = (await database_sync_to_async(by_node)("analyze_codebase"))[0]
    first_proposal = (await database_sync_to_async(by_node)("propose_changes"))[0]
    note_seq = note["message"]["seq"]
    assert analysis.heard == []  # its prompt was sent before the note was typed
    assert first_proposal.heard == [note_seq]
    assert NOTE in FakeProvider.prompts(schema="Proposal")[0]

    FakeProvider.script("fake", proposal(path), "Fine now.")
    await client.send({"type": "control", "action": "modify", "text": CHANGE})
    await client.until_state("awaiting_human", node="checkpoint")
    second = (await database_sync_to_async(by_node)("propose_changes"))[-1]
    change_seq = await database_sync_to_async(
        lambda: session.messages.get(content=f"Requested changes: {CHANGE}").seq
    )()
    assert change_seq in second.heard and note_seq in second.heard
    assert CHANGE in FakeProvider.prompt(schema="Proposal")
    # The page is told too: the message payload carries what it heard.
    ends = [e for e in client.of_type("message.end") if e["message"]["seq"] == second.seq]
    assert ends[-1]["message"]["heard"] == second.heard

    FakeProvider.script("fake", plan_draft(path))
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    await client.close()
