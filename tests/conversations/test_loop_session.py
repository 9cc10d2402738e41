"""Loops end: agents that say the same thing again hand the floor to the human, with a message
saying which loop it was, long before the exchange cap."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from conversations.models import Message, PlanningState
from rag.models import CodeFile
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS, kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

CONTINUE = {"signal": "CONTINUE", "reason": "The critic should answer."}
PROPOSAL = (
    "Add a rate limiter to the login view that counts failed attempts per user and refuses "
    "the sixth one within a minute."
)
# An objection in any reading (a negation), so it is checked against the evidence before A
# answers it: "doubles the limit behind two workers" alone is not read as one (agents.objections).
CRITIQUE = "A per-process counter does not hold across two workers; keep it in the database."


def messages(session):
    return list(session.messages.order_by("seq"))


def debate_turns(rows):
    """The debate's turns (Agent A's evidence plan, before them, is a message of A's too)."""
    return [m for m in rows if m.role == Message.Role.AGENT and m.node == ""]


async def test_a_debate_that_repeats_itself_hands_over_before_the_exchange_cap(start, user):
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # Agent A's evidence plan, before its first turn
        PROPOSAL, CONTINUE,
        CRITIQUE, CONTINUE,
        kept(1),  # the critique checked against the evidence, before A answers it
        PROPOSAL, CONTINUE,  # Agent A says it again
        "Never reached.", CONTINUE,
    )  # fmt: skip
    session = await start(mode="debate", max_exchanges=10)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    rows = await database_sync_to_async(messages)(session)
    turns = debate_turns(rows)
    assert [m.content for m in turns] == [PROPOSAL, CRITIQUE, PROPOSAL]
    note = rows[-1]
    assert note.role == Message.Role.SYSTEM and note.node == "loop"
    assert note.content.startswith("**Loop detected (repeat):** Agent A repeated its previous")
    assert note.data == {"loop": "repeat"}
    # The page was told, live.
    assert client.texts[note.seq] == note.content
    refreshed = await database_sync_to_async(type(session).objects.get)(pk=session.pk)
    assert refreshed.exchanges_since_human == 1 < refreshed.max_exchanges
    await client.close()


async def test_after_the_human_replies_the_debate_goes_on(start, user):
    FakeProvider.script(
        "fake", NO_LOOKUPS, PROPOSAL, CONTINUE, CRITIQUE, CONTINUE, kept(1), PROPOSAL, CONTINUE
    )
    session = await start(mode="debate", max_exchanges=10)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    FakeProvider.script(
        "fake", "Then use the database; test two workers.", {"signal": "HANDOVER", "reason": "Ask."}
    )
    await client.send({"type": "user.message", "text": "Use the database."})
    await client.until_state("running")
    await client.until_state("awaiting_human")
    rows = await database_sync_to_async(messages)(session)
    assert rows[-1].content == "Then use the database; test two workers."
    assert [m.node for m in rows].count("loop") == 1
    await client.close()


def source_path(codebase):
    return CodeFile.objects.filter(codebase=codebase, role="source").values_list("path", flat=True)[
        0
    ]


def proposal(path):
    return {
        "summary": f"Throttle failed logins in `{path}`.",
        "steps": [{"title": "Count failures", "detail": "Wrap the handler.", "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "the login handler"}],
    }


async def test_the_same_validation_error_twice_goes_to_the_checkpoint_not_back(
    start, user, settings
):
    settings.PLANAGENTS_MAX_VALIDATION_RETRIES = 5
    # Investigation off: with it on, a proposal's files are an enum of the codebase's real
    # paths, so only a session without evidence can invent one twice.
    settings.PLANAGENTS_EVIDENCE_STEPS = 0
    FakeProvider.script(
        "fake",
        "The login flow starts here.",  # analyze_codebase
        proposal("app/nowhere.py"),  # propose #1: invents a path
        "The file is not there.",  # review #1
        proposal("app/nowhere.py"),  # propose #2: the same invention
        "Still not there, and no tests.",  # review #2
        proposal("app/never_reached.py"),
    )
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")

    rows = await database_sync_to_async(messages)(session)
    assert [m.node for m in rows if m.node][-3:] == [
        "review_and_refine",
        "validate_proposal",
        "loop",
    ]
    assert "going in circles; the human decides" in rows[-2].content
    assert rows[-1].content.startswith("**Loop detected (validation):** The proposal failed")
    assert "app/nowhere.py" in rows[-1].content
    state = await database_sync_to_async(PlanningState.objects.get)(session=session)
    assert state.iteration == 2 and state.validation_failures == 0
    await client.close()
