"""Sessions that route away from the planner: a greeting gets a canned reply with no model
call, a code question gets one cited answer and no plan, and phase 1 decides only when the
patterns are unsure, under the configured confidence threshold."""

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider
from agents.routing import RouteChoice
from conversations.models import Message, PlanningSession
from planagents.jobs import wait_for_jobs
from rag.models import CodeFile

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


@database_sync_to_async
def finished(session):
    """The session once its job has ended, with its messages."""
    session = PlanningSession.objects.get(pk=session.pk)
    return session, list(session.messages.order_by("seq"))


async def run(start, task, **kwargs):
    session = await start(task=task, **kwargs)
    await wait_for_jobs(timeout=60)
    return await finished(session)


def classifications():
    return [c for c in FakeProvider.calls("fake", text=False) if c.schema is RouteChoice]


@database_sync_to_async
def line_count(codebase, path):
    return CodeFile.objects.get(codebase=codebase, path=path).line_count


@pytest.mark.parametrize(
    ("task", "language", "words"),
    [
        ("hi!", "en", "Hi!"),
        ("cảm ơn bạn", "vi", "Không có gì"),
        ("ban lam duoc gi?", "vi", "Câu hỏi"),
    ],
)
async def test_a_greeting_gets_a_canned_reply_with_no_model_call(start, task, language, words):
    session, messages = await run(start, task)
    assert FakeProvider.calls() == []
    assert session.status == PlanningSession.Status.COMPLETED
    assert session.task_analysis["route"] == "greeting"
    assert session.task_analysis["route_phase"] == 0
    assert session.calls_used == 0
    reply = messages[-1]
    assert (reply.role, reply.node) == (Message.Role.AGENT, "answer")
    assert words in reply.content
    assert not await database_sync_to_async(session.plans.exists)()


@pytest.mark.parametrize("mode", ["planning", "debate"])
async def test_a_code_question_ends_with_a_cited_answer_and_no_plan(start, codebase, mode):
    FakeProvider.script(
        "fake", "`check_password` hashes the given password with the stored salt and compares "
        "it in constant time (`todo/auth.py:20-23`)."
    )  # fmt: skip
    session, messages = await run(start, "what does `check_password` do?", mode=mode)

    assert session.status == PlanningSession.Status.COMPLETED
    assert (session.task_analysis["route"], session.task_analysis["route_phase"]) == ("question", 0)
    assert classifications() == []
    [call] = FakeProvider.calls("fake")  # one text turn, nothing else
    assert call.schema is None
    [symbol] = session.task_analysis["entities"]["symbols"]
    assert symbol["location"] == "todo/auth.py:20-23"
    assert "### todo/auth.py:20-23" in call.prompt  # the named symbol's definition was read
    assert "what does `check_password` do?" in call.prompt

    answer = messages[-1]
    assert answer.node == "answer" and answer.agent == "A"
    assert [m.node for m in messages if m.role == Message.Role.AGENT] == ["answer"]
    assert answer.citations == [{"path": "todo/auth.py", "start": 20, "end": 23, "exists": True}]
    assert await line_count(codebase, "todo/auth.py") >= 23
    assert not await database_sync_to_async(session.plans.exists)()


async def test_an_answer_without_citations_gets_its_sources(start):
    FakeProvider.script("fake", "It checks the password.")
    session, messages = await run(start, "where is the password checked?")
    answer = messages[-1]
    assert "Sources: `" in answer.content
    assert answer.citations and all(c["exists"] for c in answer.citations)
    assert session.status == PlanningSession.Status.COMPLETED


async def test_a_change_request_goes_to_the_planner_without_a_classification(start):
    session, messages = await run(start, "Add rate limiting to login")
    assert classifications() == []
    assert (session.task_analysis["route"], session.task_analysis["route_phase"]) == ("plan", 0)
    assert "analyze_codebase" in [m.node for m in messages]


async def test_phase_one_decides_when_the_patterns_are_unsure(start):
    FakeProvider.script(
        "fake",
        RouteChoice(route="question", confidence=0.9),
        "Login is throttled nowhere yet; requests reach `todo/api.py:187`.",
    )
    session, messages = await run(start, "rate limiting for the login endpoint")
    [classification] = classifications()
    assert "rate limiting for the login endpoint" in classification.prompt
    analysis = session.task_analysis
    assert (analysis["route"], analysis["route_phase"], analysis["route_confidence"]) == (
        "question", 1, 0.9,
    )  # fmt: skip
    assert analysis["type"] == "question"
    assert messages[-1].node == "answer"
    assert session.status == PlanningSession.Status.COMPLETED
    assert session.calls_used == 2  # the classification and the answer


async def test_under_the_threshold_the_full_planner_runs(start, settings):
    settings.PLANAGENTS_ROUTE_MIN_CONFIDENCE = 95
    FakeProvider.script("fake", RouteChoice(route="question", confidence=0.9))
    session, messages = await run(start, "rate limiting for the login endpoint")
    assert len(classifications()) == 1
    assert (session.task_analysis["route"], session.task_analysis["route_phase"]) == ("plan", 2)
    assert "answer" not in [m.node for m in messages]
    assert "analyze_codebase" in [m.node for m in messages]
