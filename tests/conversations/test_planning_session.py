"""A whole planning session through the websocket, with the scripted provider."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from agents.schemas import merge_new_files
from conversations.models import Message, Plan, PlanningState
from rag.models import CodeFile
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS, kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


def source_paths(codebase):
    return list(
        CodeFile.objects.filter(codebase=codebase, role="source").values_list("path", flat=True)
    )


def proposal(path, *, extra=None):
    """A proposal as the model writes it once there is evidence: `path` is one of the files
    offered, and its step changes no definition the agents were shown ("none")."""
    files = [{"path": path, "action": "modify", "reason": "the login handler lives here"}]
    files += extra or []
    return {
        "summary": f"Throttle failed logins in `{path}`.",
        "steps": [
            {
                "title": "Count failures",
                "symbol": "none",
                "detail": f"Wrap the handler at `{path}:1`.",
                "files": [path],
            }
        ],
        "files": files,
    }


def plan_draft(path):
    """A plan as the model writes it once there is evidence: existing files from those
    offered, the new one in `new_files` (merge_new_files gives the shape without evidence)."""
    return {
        "summary": "Add a per-user failed-login counter.",
        "decisions": ["Keep counters in memory: one process serves the app."],
        "steps": [
            {
                "title": "Add the counter",
                "symbol": "none",
                "detail": f"See `{path}:1`.",
                "files": [path],
            }
        ],
        "files": [{"path": path, "action": "modify", "reason": "handler"}],
        "new_files": [{"path": "app/ratelimit.py", "reason": "the limiter"}],
        "testing": ["A test that the sixth failed login in a minute gets 429."],
        "risks": ["Counters reset on restart."],
        "effort": {"size": "S", "estimate": "1 day"},
    }


async def test_it_runs_a_planning_session_to_a_validated_plan(start, user, codebase, settings):
    # Investigation off: with it on, a proposal's files are an enum of the codebase's real
    # paths, so only a session without evidence can invent a path for validation to catch.
    settings.PLANAGENTS_EVIDENCE_STEPS = 0
    path = (await database_sync_to_async(source_paths)(codebase))[0]
    FakeProvider.script(
        "fake",
        f"The login flow starts at `{path}:1`.",  # analyze_codebase
        proposal("app/does_not_exist.py"),  # propose_changes #1: invents a path
        "The proposal edits a file that is not there.",  # review_and_refine #1
        proposal(path),  # propose_changes #2
        "Better; add a test.",  # review_and_refine #2
    )
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    checkpoint = await client.until_state("awaiting_human", node="checkpoint")
    assert checkpoint["options"] == ["approve", "modify", "stop"]

    messages = await database_sync_to_async(lambda: list(session.messages.order_by("seq")))()
    nodes = [m.node for m in messages if m.node]
    assert nodes == [
        "analyze_codebase",
        "propose_changes",
        "review_and_refine",
        "validate_proposal",
        "propose_changes",
        "review_and_refine",
        "validate_proposal",
    ]
    failed, passed = [m for m in messages if m.node == "validate_proposal"]
    assert "app/does_not_exist.py" in failed.content and "does not exist" in failed.content
    assert "Validation passed" in passed.content
    # What streamed is what was saved, token for token.
    for m in messages:
        assert client.texts[m.seq] == m.content
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))

    FakeProvider.script("fake", merge_new_files(plan_draft(path)))
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    assert client.of_type("plan.updated")[-1]["version"] == 1

    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    assert plan.version == 1
    assert f"| `{path}` | modify | exists |" in plan.markdown
    assert "| `app/ratelimit.py` | create | new file |" in plan.markdown
    for heading in ("## Summary", "## Decisions", "## Steps", "## Files", "## Testing", "## Risks"):
        assert heading in plan.markdown
    assert plan.structured["files"][0]["status"] == "exists"
    await client.close()


async def test_a_review_that_echoes_the_proposal_is_redone_before_validation(start, user, codebase):
    path = (await database_sync_to_async(source_paths)(codebase))[0]
    summary = (
        "Count failed logins per user in the login handler, refuse the sixth attempt within a "
        "minute with HTTP 429, and reset the count after a successful login."
    )
    review = "The count lives in process memory; two workers would each allow five attempts."
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # investigate
        f"The login flow starts at `{path}:1`.",
        {**proposal(path), "summary": summary},
        f"Agreed. {summary}",  # review_and_refine, echoing the proposal
        review,
        kept(1),  # verify_review: the review's one objection
    )
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")

    reviews = await database_sync_to_async(
        lambda: list(session.messages.filter(node="review_and_refine", role="agent"))
    )()
    assert [m.content for m in reviews] == [review]
    _analysis, echo, redo = FakeProvider.calls("fake", text=True)
    # The first prompt unchanged, the echoed reply as the model's own turn, the correction.
    assert redo.messages[:-2] == echo.messages
    assert (redo.messages[-2].role, redo.messages[-2].content) == (
        "assistant",
        f"Agreed. {summary}",
    )
    assert "copied Agent A's proposal" in redo.messages[-1].content
    state = await database_sync_to_async(PlanningState.objects.get)(session=session)
    assert state.review == f"1. {review}"  # the objection verify_review kept, for Agent A
    await client.close()


async def test_request_changes_goes_back_to_propose_with_the_humans_text(start, user, codebase):
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")

    await client.send(
        {"type": "control", "action": "modify", "text": "Also cover the password reset form."}
    )
    await client.until_state("running")
    await client.until_state("awaiting_human", node="checkpoint")

    state = await database_sync_to_async(PlanningState.objects.get)(session=session)
    assert state.feedback == "Also cover the password reset form."
    assert state.iteration == 2
    proposals = await database_sync_to_async(
        lambda: session.messages.filter(node="propose_changes").count()
    )()
    assert proposals == 2
    await client.close()


async def test_stop_at_the_checkpoint_writes_a_summary(start, user):
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    FakeProvider.script("fake", "## Summary\nAgent A proposed a limiter; Agent B asked for tests.")
    await client.send({"type": "control", "action": "stop"})
    await client.until_state("stopped")

    summary = await database_sync_to_async(lambda: session.messages.get(node="summary"))()
    assert summary.role == Message.Role.SYSTEM
    assert "Agent A proposed a limiter" in summary.content
    await client.close()


async def test_approve_is_refused_while_the_agents_are_still_working(start, user):
    held = Hold("The login flow starts here and goes on.", pieces=2)  # the analysis, mid-stream
    FakeProvider.script("fake", held)
    session = await start()
    client = Client(user, session.pk)
    await client.connect()
    assert await asyncio.to_thread(held.reached.wait, 60)
    await client.send({"type": "control", "action": "approve"})
    error = await client.until(lambda e: e["type"] == "error")
    assert "no proposal waiting" in error["message"]

    held.release.set()
    await client.until_state("awaiting_human", node="checkpoint")
    plans = await database_sync_to_async(Plan.objects.filter(session=session).count)()
    assert plans == 0  # the refused approve did not finalize anything later either
    await client.close()
