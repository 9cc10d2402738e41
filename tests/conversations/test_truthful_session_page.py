"""The session page says only what happened (issue 19): a session that answered (a greeting's
instant reply, a question's cited answer) ends "Answered", with no workflow panel, no
task-analysis card and no word of a Plan card; only a session with a plan version points at
it. Its heading is the task cut at a word boundary, and the task is not shown twice."""

import pytest
from django.urls import reverse

from agents import routing
from conversations import progress, store
from conversations.models import Message, Plan, PlanningSession, PlanningState
from conversations.templatetags.session_extras import headline
from rag.models import Codebase

pytestmark = pytest.mark.django_db

# What agents.analysis.first_look stores for "hi": the analysis of any text, then the route.
GREETING_ANALYSIS = {
    "type": "feature", "type_label": "Feature", "confidence": 0.3, "complexity": "S",
    "complexity_reason": "short", "entities": {}, "language": "en", "route": "greeting",
    "route_label": "Instant reply", "route_phase": 0, "route_confidence": 1.0,
    "route_reason": "a hello message", "greeting": "hello",
}  # fmt: skip


@pytest.fixture
def bare_codebase(user):
    return Codebase.objects.create(owner=user, name="shop", status=Codebase.Status.READY)


def make_session(user, codebase, task, analysis, **fields):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title=task[:80], task=task, agent_a_profile="fake",
        agent_b_profile="fake", task_analysis=analysis, status=PlanningSession.Status.COMPLETED,
        **fields,
    )  # fmt: skip
    PlanningState.objects.create(session=session)  # left at its first node, as answers leave it
    return session


def page(client, user, session):
    client.force_login(user)
    response = client.get(reverse("conversations:detail", args=[session.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_routes_that_answer_are_the_routing_modules_own():
    assert progress.ANSWERED_ROUTES == (routing.GREETING, routing.QUESTION)


@pytest.mark.parametrize("mode", ["planning", "debate"])
def test_a_greeting_that_was_answered_ends_answered_without_workflow_or_analysis(
    client, user, bare_codebase, mode
):
    session = make_session(user, bare_codebase, "hi", GREETING_ANALYSIS, mode=mode)
    Message.objects.create(session=session, seq=1, role="agent", agent="A", node="answer",
                           content="Hi! I plan changes to this codebase.")  # fmt: skip

    html = page(client, user, session)

    assert "Plan card" not in html
    assert 'id="ended-label">Answered.' in html
    assert 'id="task-analysis"' not in html and "Complexity" not in html
    assert 'id="workflow-panel" hidden' in html or mode == "debate"
    state = store.session_state_payload(session)
    if mode == "planning":
        assert state["workflow"] == {"steps": [], "step": 0, "total": 0, "answered": True}


def test_a_question_answered_with_citations_shows_no_workflow_steps(user, bare_codebase):
    analysis = {**GREETING_ANALYSIS, "route": "question", "type": "question"}
    session = make_session(user, bare_codebase, "where is the cart total computed?", analysis)
    assert progress.workflow_steps(session, session.state)["steps"] == []


def test_a_completed_session_with_a_plan_points_at_the_plan_card(client, user, bare_codebase):
    analysis = {**GREETING_ANALYSIS, "route": "plan", "type": "feature"}
    session = make_session(user, bare_codebase, "Add rate limiting to login", analysis)
    Plan.objects.create(session=session, version=1, markdown="# Plan")

    html = page(client, user, session)

    assert 'id="ended-label">Completed. The plan is in the Plan card.' in html
    assert 'id="task-analysis"' in html
    assert 'id="workflow-panel" hidden' not in html
    assert [s["status"] for s in store.session_state_payload(session)["workflow"]["steps"]]


def test_a_completed_session_without_a_plan_never_mentions_the_plan_card(
    client, user, bare_codebase
):
    analysis = {**GREETING_ANALYSIS, "route": "plan"}
    session = make_session(user, bare_codebase, "Add rate limiting to login", analysis)
    assert "Plan card" not in page(client, user, session)


def test_a_short_task_is_shown_once_and_a_long_one_in_full_under_its_headline(
    client, user, bare_codebase
):
    short = make_session(user, bare_codebase, "Add rate limiting to login", GREETING_ANALYSIS)
    assert page(client, user, short).count("Add rate limiting to login") == 2  # <title>, <h1>
    long_task = (
        "Add rate limiting to the login endpoint so that repeated attempts are throttled per "
        "address\nand per account, with a clear message."
    )
    long = make_session(user, bare_codebase, long_task, GREETING_ANALYSIS)
    html = page(client, user, long)
    assert "<h2>Task</h2>" in html and "and per account, with a clear message." in html


def test_a_headline_is_cut_at_a_word_boundary_with_an_ellipsis():
    task = (
        "Add rate limiting to the login endpoint so that brute force attempts are throttled "
        "per IP address"
    )
    cut = headline(task)
    assert cut == "Add rate limiting to the login endpoint so that brute force attempts are…"
    assert len(cut) <= 80 and task.startswith(cut.removesuffix("…"))
    assert headline("short task\nsecond line") == "short task"


def test_the_session_list_shows_titles_cut_at_a_word_boundary(client, user, bare_codebase):
    task = (
        "Add rate limiting to the login endpoint so that brute force attempts are throttled "
        "per IP address"
    )
    make_session(user, bare_codebase, task, GREETING_ANALYSIS)
    client.force_login(user)
    html = client.get(reverse("conversations:list")).content.decode()
    assert "brute force attempts are…</a>" in html
    assert "attempts are thr…" not in html
