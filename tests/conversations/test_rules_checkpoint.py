"""Codebase rules and pins in a planning session, over the websocket with the scripted
provider: both reach the agents' prompts (bounded), every proposal and the final plan are
checked, a critical violation holds Approve until the human overrides it with a reason, and the
plan records the override and the pins it used."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from conversations.models import Message, Plan
from rag import pins as rag_pins
from rag import rules as rag_rules
from rag.models import Pin, Rule
from tests.conversations.test_planning_session import plan_draft, proposal, source_paths
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

CRITICAL = "Never touch legacy/ code."
NORMAL = "Every API change needs a test."
NOTE = "We use pytest, not unittest."


def violations(*items):
    return {"violations": [{"rule": n, "explanation": e} for n, e in items]}


@database_sync_to_async
def setup_rules_and_pins(codebase, path):
    Rule.objects.create(codebase=codebase, text=CRITICAL, severity="critical")
    Rule.objects.create(codebase=codebase, text=NORMAL)
    Pin.objects.create(codebase=codebase, kind="note", text=NOTE)
    Pin.objects.create(codebase=codebase, kind="file", path=path, start_line=1, end_line=2)


@database_sync_to_async
def messages_of(session, **filters):
    return list(Message.objects.filter(session=session, **filters).order_by("seq"))


async def to_checkpoint(start, user, codebase, *replies):
    path = (await database_sync_to_async(source_paths)(codebase))[0]
    await setup_rules_and_pins(codebase, path)
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # investigate
        f"The flow starts at `{path}:1`.",  # analyze_codebase
        proposal(path),  # propose_changes
        "Looks right.",  # review_and_refine: no objection, nothing to verify …
        "Looks right.",  # … and again when asked once more
        *replies,  # check_rules, …
    )
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human", node="checkpoint")
    return session, client, state, path


async def test_a_critical_violation_blocks_approve_until_overridden_with_a_reason(
    start, user, codebase
):
    session, client, state, path = await to_checkpoint(
        start, user, codebase, violations((1, "It edits legacy/auth.py."))
    )
    assert state["rules"]["blocking"] == [
        {"label": "R1", "text": CRITICAL, "explanation": "It edits legacy/auth.py."}
    ]
    [shown] = await messages_of(session, node="check_rules")
    assert (
        "R1 **[critical]** “Never touch legacy/ code.” — It edits legacy/auth.py." in shown.content
    )

    await client.send({"type": "control", "action": "approve"})
    error = await client.until(lambda e: e["type"] == "error")
    assert "breaks critical rule(s) R1" in error["message"]
    await client.send({"type": "control", "action": "approve", "override": "   "})
    await client.until(lambda e: e["type"] == "error" and "R1" in e["message"])
    assert not await messages_of(session, content__startswith="Approved")

    FakeProvider.script("fake", plan_draft(path), violations())  # finalize, plan check
    reason = "legacy/auth.py is deleted next sprint anyway."
    await client.send({"type": "control", "action": "approve", "override": reason})
    await client.until_state("completed")

    [override] = await messages_of(session, data__has_key="rules_override")
    assert override.role == "user"
    assert override.data["rules_override"]["reason"] == reason
    assert override.data["rules_override"]["rules"] == [{"label": "R1", "text": CRITICAL}]
    assert reason in override.content
    plan = await database_sync_to_async(lambda: Plan.objects.get(session=session))()
    assert f"- Overridden by the human (R1): {reason}" in plan.markdown
    assert "Rules check: the plan follows the 2 rule(s)." in plan.markdown
    assert f"- [P1] note: {NOTE}" in plan.markdown
    assert f"- [P2] file `{path}:1-2`" in plan.markdown
    assert [p["number"] for p in plan.structured["pins_used"]] == [1, 2]
    await client.close()


async def test_a_normal_violation_does_not_block_approve(start, user, codebase):
    session, client, state, path = await to_checkpoint(
        start, user, codebase, violations((2, "No test is planned."))
    )
    assert state["rules"]["blocking"] == []

    FakeProvider.script("fake", plan_draft(path), violations((2, "Still no API test.")))
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")

    assert not await messages_of(session, data__has_key="rules_override")
    plan = await database_sync_to_async(lambda: Plan.objects.get(session=session))()
    assert "Rules check: the plan breaks 1 rule(s):" in plan.markdown
    assert f"- R2 “{NORMAL}” — Still no API test." in plan.markdown
    await client.close()


async def test_rules_and_pins_reach_the_proposal_review_check_and_finalize_prompts(
    start, user, codebase
):
    session, client, _, path = await to_checkpoint(start, user, codebase, violations())
    FakeProvider.script("fake", plan_draft(path), violations())
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")

    calls = FakeProvider.calls("fake")
    by_kind = {
        "propose": [c for c in calls if "Propose the change as JSON" in c.prompt],
        "review": [c for c in calls if "Review Agent A's proposal" in c.prompt],
        "finalize": [c for c in calls if "Write the final implementation plan" in c.prompt],
        "check": [c for c in calls if c.schema is not None and c.schema.__name__ == "RuleCheck"],
    }
    assert all(len(found) >= 1 for found in by_kind.values()), {
        k: len(v) for k, v in by_kind.items()
    }
    for kind in ("propose", "review", "finalize"):
        prompt = by_kind[kind][0].prompt
        assert f"R1 [critical]: {CRITICAL}" in prompt and f"R2: {NORMAL}" in prompt
        assert f"[P1] note: {NOTE}" in prompt
        assert f"[P2] {path}:1-2 (untrusted):" in prompt
    assert len(by_kind["check"]) == 2  # the proposal and the final plan
    assert "<proposal>" in by_kind["check"][0].prompt and "<plan>" in by_kind["check"][1].prompt
    # The pins are shown once, like evidence, and the check's results are in the transcript.
    [pinned] = await messages_of(session, node="pinned_context")
    assert f"[P1] note: {NOTE}" in pinned.content
    assert len(await messages_of(session, node="check_rules")) == 2
    await client.close()


async def test_rules_and_pins_add_a_bounded_amount_to_a_prompt(start, user, codebase):
    path = (await database_sync_to_async(source_paths)(codebase))[0]

    @database_sync_to_async
    def many():
        for n in range(60):
            Rule.objects.create(codebase=codebase, text=f"Rule {n}: " + "words " * 60)
            Pin.objects.create(codebase=codebase, kind="note", text=f"Note {n} " + "w " * 300)
            Pin.objects.create(codebase=codebase, kind="file", path=path)

    await many()
    FakeProvider.script(
        "fake", NO_LOOKUPS, "Analysis.", proposal(path), "Review.", "Review.", violations()
    )
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")

    propose = next(c for c in FakeProvider.calls("fake") if "Propose the change" in c.prompt)
    start_at = propose.prompt.index("Codebase rules")
    end_at = propose.prompt.index("Evidence from the codebase")  # what follows the pins
    added = propose.prompt[start_at:end_at]
    assert len(added) <= rag_rules.RULES_CHARS + rag_pins.PINS_CHARS + 200
    assert "more rule(s) left out for length." in added
    await client.close()


async def test_without_rules_there_is_no_check_call_and_nothing_blocks(start, user, codebase):
    path = (await database_sync_to_async(source_paths)(codebase))[0]
    FakeProvider.script("fake", NO_LOOKUPS, "Analysis.", proposal(path), "Review.", "Review.")
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human", node="checkpoint")

    assert state["rules"] == {"blocking": []}
    assert not [
        c for c in FakeProvider.calls("fake") if c.schema and c.schema.__name__ == "RuleCheck"
    ]
    assert not await messages_of(session, node__in=["check_rules", "pinned_context"])
    await client.close()
