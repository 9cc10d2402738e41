"""Agent B's objections are checked against the evidence before Agent A revises: the verdicts
are shown, and only the objections kept (or updated) reach A's next prompt."""

import json

import pytest
from channels.db import database_sync_to_async

from agents.models import LLMCall
from agents.providers.fake import FakeProvider
from conversations.models import Message
from tests.conversations.test_investigate_session import TASK, evidence_plan
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

GROUNDED = "TokenStore keeps no issue time, so nothing can expire [E1]."
UNGROUNDED = "Tokens are kept in Redis, so the proposal must set a Redis TTL instead."


@pytest.fixture(autouse=True)
def investigation_on(settings):
    settings.PLANAGENTS_EVIDENCE_STEPS = 6
    settings.PLANAGENTS_EVIDENCE_ROUNDS = 1


def proposal(path):
    return {
        "summary": "Store the issue time with each token [E1].",
        "steps": [
            {
                "title": "Expire",
                "symbol": "none",
                "detail": "Drop old tokens [E1].",
                "files": [path],
            }
        ],
        "files": [{"path": path, "action": "modify", "reason": "TokenStore lives here"}],
        "new_files": [],
    }


def verdicts(*items):
    return {"verdicts": [{"objection": n, "verdict": v, "correction": "", "reason": r}
                         for n, v, r in items]}  # fmt: skip


async def test_only_the_objection_the_evidence_supports_reaches_agent_a(start, user):
    FakeProvider.script(
        "fake",
        evidence_plan(),  # investigate
        "TokenStore is in `todo/auth.py:1`.",  # analyze_codebase
        proposal("todo/auth.py"),  # propose #1
        f"Two problems:\n1. {GROUNDED}\n2. {UNGROUNDED}",  # review #1
        verdicts((1, "keep", "E1 shows the class"), (2, "discard", "E1 shows a dict, not Redis")),
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")

    # The human asks for changes: Agent A revises, seeing the verified critique.
    FakeProvider.script(
        "fake",
        proposal("todo/auth.py"),  # propose #2
        "Add a test that a day-old token is refused.",  # review #2
        verdicts((1, "keep", "no test in the evidence")),
    )
    await client.send({"type": "control", "action": "modify", "text": "Keep it small."})
    await client.until_state("running")
    await client.until_state("awaiting_human", node="checkpoint")

    structured = FakeProvider.calls("fake", text=False)
    check = structured[2]
    assert check.schema.__name__ == "Verdicts"
    # Held to the two objections: numbers 1 and 2, at most two verdicts.
    shape = check.schema.model_json_schema()
    assert shape["properties"]["verdicts"]["maxItems"] == 2
    assert shape["$defs"]["Verdict"]["properties"]["objection"]["enum"] == [1, 2]
    # A numbered list cut by code, and the evidence summarised, in one small call.
    assert f"1. {GROUNDED}\n2. {UNGROUNDED}" in check.prompt
    assert "[E1] find_symbol(TokenStore)" in check.prompt

    revise = structured[3].prompt
    assert "Propose the change" in revise and "Keep it small." in revise
    assert GROUNDED in revise
    assert "Redis" not in revise

    rows = await database_sync_to_async(
        lambda: list(Message.objects.filter(session=session, node="verify").order_by("seq"))
    )()
    assert len(rows) == 2
    shown = rows[0].content
    assert f"1. kept — {GROUNDED}" in shown
    assert f"2. discarded — {UNGROUNDED} (E1 shows a dict, not Redis)" in shown
    assert [v["verdict"] for v in rows[0].data["verdicts"]] == ["keep", "discard"]
    assert client.texts[rows[0].seq] == shown
    await client.close()


async def test_a_review_citing_evidence_that_does_not_exist_is_flagged(start, user):
    FakeProvider.script(
        "fake",
        evidence_plan(),
        "TokenStore is in `todo/auth.py:1`.",
        proposal("todo/auth.py"),
        "The expiry check belongs in the login view [E9].",
        verdicts((1, "keep", "")),
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    review = await database_sync_to_async(
        lambda: Message.objects.get(session=session, node="review_and_refine", role="agent")
    )()
    assert review.data["citation_problems"] == 1
    assert "_Flagged citations: [E9] does not exist (evidence: E1–E4)._" in review.content
    assert client.texts[review.seq] == review.content
    await client.close()


async def test_in_a_debate_agent_a_answers_only_the_verified_objections(start, user):
    FakeProvider.script(
        "fake",
        evidence_plan(),  # investigate, before A's first turn
        "Store the issue time in TokenStore [E1].",
        {"signal": "CONTINUE", "reason": "B should answer."},
        f"- {GROUNDED}\n- {UNGROUNDED}",
        {"signal": "CONTINUE", "reason": "A should answer."},
        verdicts((1, "keep", "E1"), (2, "discard", "E1 shows a dict, not Redis")),
        "Add the issue time and drop day-old tokens on read [E1].",
        {"signal": "HANDOVER", "reason": "Ask the human."},
    )
    session = await start(mode="debate", task=TASK, max_exchanges=5)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    second_a = FakeProvider.calls("fake", text=True)[2].prompt
    assert f"<critique>\n1. {GROUNDED}\n</critique>" in second_a
    assert "Redis" not in second_a
    verdict = await database_sync_to_async(
        lambda: Message.objects.get(session=session, node="verify")
    )()
    assert verdict.turn_key == "verify:2" and "2. discarded" in verdict.content
    await client.close()


async def test_verdicts_cut_off_at_their_token_limit_keep_the_ones_finished(start, user):
    """The verdict list a small model runs past its budget on keeps its finished verdicts; the
    objection it did not finish judging is kept, unjudged, and no call is made again."""
    whole = json.dumps(verdicts((1, "discard", "E1 shows a dict, not Redis"), (2, "keep", "E1")))
    cut = whole[: whole.index('"keep"') + 4]
    FakeProvider.script(
        "fake",
        evidence_plan(),
        "TokenStore is in `todo/auth.py:1`.",
        proposal("todo/auth.py"),
        f"Two problems:\n1. {UNGROUNDED}\n2. {GROUNDED}",
        cut,
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")

    checked = await database_sync_to_async(
        lambda: Message.objects.get(session=session, node="verify").data["verdicts"]
    )()
    assert [(c["verdict"], c["reason"]) for c in checked] == [
        ("discard", "E1 shows a dict, not Redis"),
        ("keep", "not judged"),
    ]
    calls = await database_sync_to_async(
        lambda: list(LLMCall.objects.filter(session=session, purpose="Verdicts"))
    )()
    assert [c.outcome for c in calls] == [LLMCall.Outcome.CUT_OFF]
    await client.close()
