"""The Decisions section is a table of the disagreement behind the plan, read from the
session's real messages: Agent A's proposal, Agent B's real objections, the verification pass's
verdicts on them (or, when no pass ran, what A's next proposal did about them), the human's
change requests and whether the next proposal took them up. A review with no real objection
(a refusal, praise, the proposal said again) is one "no objection raised" row, never a kept
objection."""

import pytest
from channels.db import database_sync_to_async

from agents.decision_log import NOT_APPLIED, OPEN, decision_log
from agents.objections import NO_OBJECTION
from agents.plan import render_plan
from agents.providers.fake import FakeProvider
from conversations.models import Message, Plan, PlanningSession
from rag.models import CodeFile
from tests.conversations.test_planning_session import plan_draft, proposal
from tests.conversations.wsclient import Client

VERDICTS = [
    {"objection": "The counter must reset after a good login.", "verdict": "keep",
     "correction": "", "reason": "[E1] shows no reset."},
    {"objection": "Counters in memory break with two workers.", "verdict": "update",
     "correction": "Only with more than one worker process [E2].", "reason": "[E2]"},
    {"objection": "The login view is in api/views.py.", "verdict": "discard",
     "correction": "", "reason": "[E1] shows it in `app/auth.py:3`."},
]  # fmt: skip


def add(session, seq, **fields):
    return Message.objects.create(session=session, seq=seq, **fields)


@pytest.fixture
def discussed(db, user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    add(session, 1, role="user", content="Add rate limiting")
    add(session, 2, role="agent", agent="A", node="propose_changes",
        content="**Proposal.** Throttle logins in memory.",
        data={"summary": "Throttle logins in memory."})  # fmt: skip
    add(session, 3, role="agent", agent="B", node="review_and_refine", content="- objections")
    add(session, 4, role="system", node="verify", content="checked", data={"verdicts": VERDICTS})
    add(session, 5, role="user", content="Requested changes: Use Redis for the counters.")
    add(session, 6, role="user", content="Approved the proposal. Write the final plan.")
    add(session, 7, role="agent", agent="A", node="propose_changes", content="**Proposal.** v2",
        state=Message.State.INTERRUPTED, data={"summary": "Cut off mid-reply."})  # fmt: skip
    return session


def test_each_objection_and_change_request_is_a_row_with_its_resolution(discussed):
    rows = decision_log(discussed)
    assert [(r["objection"], r["resolution"], r["by"]) for r in rows] == [
        ("The counter must reset after a good login.", "kept", "verification pass"),
        ("Counters in memory break with two workers.", "changed", "verification pass"),
        ("The login view is in api/views.py.", "dropped", "verification pass"),
        ("—", NOT_APPLIED, "human"),  # the only proposal after it was cut off
    ]
    assert {r["proposed"] for r in rows} == {"Throttle logins in memory."}  # not the cut-off one
    assert rows[1]["decision"] == "Revise: Only with more than one worker process [E2]."
    assert rows[2]["evidence"] == ["[E1]", "app/auth.py:3"]
    assert rows[3]["decision"] == "Use Redis for the counters."


def test_the_table_shows_who_resolved_what_on_which_evidence(discussed):
    data = {"decisions": ["Keep a per-user counter [E1]."], "decision_log": decision_log(discussed)}
    markdown = render_plan(data, {"app/auth.py"})
    assert "| Decision | Agent A proposed | Agent B objected | Resolved | By | Evidence" in markdown
    assert "| Keep a per-user counter [E1]. | — | — | — | Agent A | [E1]" in markdown
    assert (
        "| Proposal stands: [E1] shows it in `app/auth.py:3`. | Throttle logins in memory. "
        "| The login view is in api/views.py. | dropped | verification pass "
        "| [E1], `app/auth.py:3`"
    ) in markdown


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_a_planning_sessions_plan_carries_the_humans_change_request(
    start, user, codebase, settings
):
    # B's unverified objection is what this follows: no investigation, so no verification pass.
    settings.PLANAGENTS_EVIDENCE_STEPS = 0
    paths = CodeFile.objects.filter(codebase=codebase, role="source").values_list("path")
    path = (await database_sync_to_async(paths.first)())[0]
    FakeProvider.script(
        "fake", "The login flow.", proposal(path), "Add a test.",
        proposal(path), "Fine.", "Fine.", plan_draft(path),
    )  # fmt: skip
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "modify", "text": "Count per IP as well."})
    await client.until_state("running")
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    await client.close()

    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    assert [(r["decision"], r["resolution"], r["by"]) for r in plan.structured["decision_log"]] == [
        # B's "Add a test." was not verified (no evidence); A's next proposal is the same one,
        # so it neither answered B nor took up the human's note.
        ("Proposal stands: the next proposal is the same", "dropped", "Agent A"),
        ("Count per IP as well.", NOT_APPLIED, "human"),
        ("Proposal stands", "—", "Agent B"),  # "Fine." objects to nothing
    ]
    assert "| Count per IP as well. | Throttle failed logins in" in plan.markdown


def unverified(session, review, next_files=None, *, plan=False):
    """A proposal touching app/auth.py, B's review of it and no verification pass; then A's
    next proposal (or the plan) touching `next_files`, unless None."""
    before = {"summary": "Throttle logins.", "steps": [], "files": [{"path": "app/auth.py"}]}
    add(session, 1, role="user", content="Add rate limiting")
    add(session, 2, role="agent", agent="A", node="propose_changes", content="**Proposal.**",
        data=before)  # fmt: skip
    add(session, 3, role="agent", agent="B", node="review_and_refine", content=review)
    if next_files is not None:
        after = {**before, "files": [{"path": p} for p in next_files]}
        node = "finalize_plan" if plan else "propose_changes"
        add(session, 4, role="agent", agent="A", node=node, content="reply", data=after)
    return session


@pytest.fixture
def bare(db, user, codebase):
    return PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip


REVIEW = (
    "- The proposal forgets `tests/test_auth.py`: add a failing-login test there.\n"
    "- Counters in memory break with two worker processes."
)


def test_an_unverified_objection_is_a_row_resolved_by_what_the_next_proposal_did(bare):
    unverified(bare, REVIEW, ["app/auth.py", "tests/test_auth.py"])
    rows = decision_log(bare)
    assert [(r["objection"], r["resolution"], r["by"]) for r in rows] == [
        ("The proposal forgets `tests/test_auth.py`: add a failing-login test there.",
         "changed", "Agent A"),
        ("Counters in memory break with two worker processes.", OPEN, "—"),
    ]  # fmt: skip
    assert rows[0]["decision"] == "Revised: the next proposal adds `tests/test_auth.py`"
    assert {r["proposed"] for r in rows} == {"Throttle logins."}


def test_an_objection_the_next_proposal_ignores_is_dropped_by_agent_a(bare):
    unverified(bare, REVIEW, ["app/auth.py"])
    assert [r["resolution"] for r in decision_log(bare)] == ["dropped", "dropped"]


def test_an_objection_nobody_answered_stays_open(bare):
    unverified(bare, "The counter never resets after a good login.")
    (row,) = decision_log(bare)
    assert (row["decision"], row["resolution"], row["by"]) == ("Unresolved", OPEN, "—")


def test_the_plan_answers_the_last_review(bare):
    unverified(bare, "Delete `app/auth.py` instead of patching it again.", [], plan=True)
    (row,) = decision_log(bare)
    assert (row["decision"], row["resolution"]) == (
        "Revised: the plan drops `app/auth.py`",
        "changed",
    )


def test_a_verified_review_is_not_counted_twice(bare):
    unverified(bare, REVIEW)
    add(bare, 4, role="system", node="verify", content="checked", data={"verdicts": VERDICTS[:1]})
    assert [r["by"] for r in decision_log(bare)] == ["verification pass"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_b_s_objections_reach_the_plan_when_no_verification_pass_ran(
    start, user, codebase, settings
):
    settings.PLANAGENTS_EVIDENCE_STEPS = 0  # what is tested: no investigation, no verification
    paths = CodeFile.objects.filter(codebase=codebase, role="source").values_list("path")
    path = (await database_sync_to_async(paths.first)())[0]
    with_test = proposal(path, extra=[{"path": "tests/test_api.py", "action": "modify",
                                       "reason": "the failing-login test"}])  # fmt: skip
    review = (
        "- The proposal forgets `tests/test_api.py`: add a failing-login test there.\n"
        "- Counters in memory break with two worker processes."
    )
    FakeProvider.script(
        "fake", "The login flow.", proposal(path), review, with_test, "Fine.", "Fine.", plan_draft(path),
    )  # fmt: skip
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "modify", "text": "Count per IP as well."})
    await client.until_state("running")
    await client.until_state("awaiting_human", node="checkpoint")
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    await client.close()

    verify = session.messages.filter(node="verify").values_list("data", flat=True)
    # The pass was skipped (no evidence); only "Fine.", which objects to nothing, is noted.
    assert await database_sync_to_async(list)(verify) == [{"verdicts": [], "no_objection": True}]
    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    assert [(r["resolution"], r["by"]) for r in plan.structured["decision_log"]] == [
        # The next proposal adds the test B asked for, but says nothing of "per IP".
        ("changed", "Agent A"), (OPEN, "—"), (NOT_APPLIED, "human"), ("—", "Agent B"),
    ]  # fmt: skip
    assert "Revised: the next proposal adds `tests/test_api.py`" in plan.markdown
    assert "| Counters in memory break with two worker processes. | open — not verified |" in (
        plan.markdown
    )


REFUSAL = (
    "I am sorry, but I do not have enough information to review this proposal. "
    "Could you please provide me with more context about the codebase?"
)


def test_a_refusal_a_verification_pass_judged_is_no_objection_row(bare):
    """Seen on a real project: the reviewer's refusal was two kept objections in Decisions."""
    unverified(bare, REFUSAL)
    judged = [
        {"objection": "I am sorry, but I do not have enough information to review this "
         "proposal.", "verdict": "keep", "correction": "", "reason": "not judged"},
        {"objection": "Could you please provide me with more context about the codebase?",
         "verdict": "discard", "correction": "", "reason": "no evidence"},
    ]  # fmt: skip
    add(bare, 4, role="system", node="verify", content="checked", data={"verdicts": judged})
    rows = decision_log(bare)
    assert [(r["decision"], r["objection"], r["resolution"], r["by"]) for r in rows] == [
        ("Proposal stands", NO_OBJECTION, "—", "Agent B")
    ]
    markdown = render_plan({"decision_log": rows}, {"app/auth.py"})
    assert "| Proposal stands | Throttle logins. | no objection raised | — | Agent B |" in markdown
    assert "I am sorry" not in markdown and "kept" not in markdown


def test_a_kept_objection_that_only_restates_the_proposal_is_no_decision_row(bare):
    unverified(bare, "- Agent A proposes to throttle logins in `app/auth.py`.")
    restated = {"objection": "Agent A proposes to throttle logins in `app/auth.py`.",
                "verdict": "keep", "correction": "", "reason": "[E1]"}  # fmt: skip
    real = {"objection": "The counter never resets after a good login.", "verdict": "keep",
            "correction": "", "reason": "[E1]"}  # fmt: skip
    add(bare, 4, role="system", node="verify", content="c", data={"verdicts": [restated, real]})
    assert [r["objection"] for r in decision_log(bare)] == [
        "The counter never resets after a good login."
    ]


def noted(session, note, after):
    """A proposal touching app/auth.py, the human's note on it, then A's next proposal."""
    before = {"summary": "Throttle logins.", "steps": [{"title": "Count", "detail": "Per user."}],
              "files": [{"path": "app/auth.py"}]}  # fmt: skip
    add(session, 1, role="user", content="Add rate limiting")
    add(session, 2, role="agent", agent="A", node="propose_changes",
        content="**Proposal.** Throttle logins. Count per user.", data=before)  # fmt: skip
    add(session, 3, role="user", content=f"Requested changes: {note}")
    add(session, 4, role="agent", agent="A", node="propose_changes",
        content=after["content"], data={**before, **after["data"]})  # fmt: skip
    (row,) = [r for r in decision_log(session) if r["by"] == "human"]
    return row["resolution"]


def test_a_human_note_is_changed_only_when_the_next_proposal_takes_it_up(bare):
    taken = {
        "content": "**Proposal.** Throttle logins. Count per user and per IP address.",
        "data": {"steps": [{"title": "Count", "detail": "Per user and per IP address."}]},
    }
    assert noted(bare, "Count per IP as well.", taken) == "changed"


def test_a_human_note_the_next_proposal_ignores_is_not_applied(bare):
    same = {"content": "**Proposal.** Throttle logins. Count per user.", "data": {}}
    assert noted(bare, "Count per IP as well.", same) == NOT_APPLIED


def test_a_next_proposal_that_changes_but_not_as_the_note_asks_is_not_applied(bare):
    elsewhere = {
        "content": "**Proposal.** Throttle logins. Count per user in the cache.",
        "data": {"files": [{"path": "app/auth.py"}, {"path": "app/cache.py"}]},
    }
    assert noted(bare, "Count per IP as well.", elsewhere) == NOT_APPLIED


def test_a_next_proposal_that_only_words_the_note_differently_is_not_applied(bare):
    reworded = {"content": "**Proposal.** Throttle logins per IP. Count per user.", "data": {}}
    assert noted(bare, "Count per IP as well.", reworded) == NOT_APPLIED  # same files and steps


def test_an_unverified_refusal_is_one_no_objection_row(bare):
    unverified(bare, REFUSAL, ["app/auth.py"])
    rows = decision_log(bare)
    assert [(r["objection"], r["by"]) for r in rows] == [(NO_OBJECTION, "Agent B")]
