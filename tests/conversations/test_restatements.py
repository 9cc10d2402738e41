"""What the default 0.5B model did on a real project (seaborn, a real issue): its "analysis"
pasted the code it was shown back, and its "review" repeated the proposal's own sentences as
bullets, which then became "objections" in the verification pass and the Decisions table. An
analysis copying the code is redone; a restated line is no objection."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from agents.verification import objections
from conversations.models import Plan, PlanningState
from rag.retrieval import retrieve
from tests.conversations.test_planning_session import plan_draft, proposal, source_paths
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS, kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

TASK = "Add rate limiting to login"
PROPOSAL = (
    "Count failed logins per user in the login handler and refuse the sixth attempt within a "
    "minute with HTTP 429."
)
REAL = "The counter lives in process memory, so two workers would each allow five attempts."


def test_a_line_that_restates_the_proposal_or_the_task_is_no_objection():
    review = (
        f"- {PROPOSAL}\n"
        "- Count failed logins per user in the login handler.\n"  # a piece of the proposal
        f"- {TASK}.\n"
        f"- {REAL}\n"
    )
    assert objections(review, restating=f"{PROPOSAL}\n{TASK}") == [REAL]


async def test_an_analysis_that_pastes_the_code_back_is_redone(start, user, codebase):
    hits = await database_sync_to_async(retrieve)(codebase, TASK, 6)
    pasted = f"The code is as follows:\n\n```python\n{hits[0].text}\n```"
    # The investigation's plan, then the analysis; everything after by default.
    FakeProvider.script("fake", NO_LOOKUPS, pasted)
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()

    analysis = await database_sync_to_async(lambda: session.messages.get(node="analyze_codebase"))()
    assert analysis.content != pasted
    (discarded,) = analysis.data["discarded"]
    assert discarded["text"] == pasted and "code context" in discarded["reason"]
    first, redo = FakeProvider.calls("fake", text=True)[:2]
    assert "copied the code context" in redo.messages[-1].content
    assert redo.messages[:-2] == first.messages


async def test_restated_review_lines_do_not_become_decisions(start, user, codebase):
    path = (await database_sync_to_async(source_paths)(codebase))[0]
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # investigate
        f"The login flow starts at `{path}:1`.",  # analyze_codebase
        {**proposal(path), "summary": PROPOSAL},
        f"- {PROPOSAL}\n- {REAL}",  # the review: one restatement, one objection
        kept(1),  # verify_review: only the objection is checked
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    FakeProvider.script("fake", plan_draft(path))
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    await client.close()

    plan = await database_sync_to_async(lambda: Plan.objects.get(session=session))()
    objected = [row["objection"] for row in plan.structured["decision_log"]]
    assert REAL in objected
    assert PROPOSAL not in objected


async def test_the_final_message_says_which_copied_fields_the_plan_left_out(start, user, codebase):
    path = (await database_sync_to_async(source_paths)(codebase))[0]
    FakeProvider.script("fake", NO_LOOKUPS, f"The login flow starts at `{path}:1`.", proposal(path))
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    copied = "The concrete tests to add or run"  # the finalize request's own words
    FakeProvider.script("fake", {**plan_draft(path), "testing": [copied]})
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    await client.close()

    plan = await database_sync_to_async(lambda: Plan.objects.get(session=session))()
    assert copied not in plan.markdown
    final = await database_sync_to_async(lambda: session.messages.get(node="finalize_plan"))()
    assert "Left out of the plan: 1 item(s)" in final.content
    assert f"Testing: “{copied}”" in final.content


async def test_the_proposal_message_says_when_its_summary_was_the_instructions(
    start, user, codebase
):
    path = (await database_sync_to_async(source_paths)(codebase))[0]
    copied = "Two or three sentences on what changes and why."  # the request's own words
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,
        f"The login flow starts at `{path}:1`.",
        {**proposal(path), "summary": copied},
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()

    shown = await database_sync_to_async(lambda: session.messages.get(node="propose_changes"))()
    assert "Left out of the proposal: 1 item(s)" in shown.content
    assert f"Summary: “{copied}”" in shown.content
    state = await database_sync_to_async(PlanningState.objects.get)(session=session)
    assert copied not in state.proposal["summary"]


def test_an_objection_quoting_a_few_words_of_the_proposal_is_kept():
    quoting = (
        "Count failed logins per user in the login handler, as proposed, and anyone can lock "
        "alice out: key the counter by user and address instead."
    )
    assert objections(f"- {quoting}", restating=f"{PROPOSAL}\n{TASK}") == [quoting]
