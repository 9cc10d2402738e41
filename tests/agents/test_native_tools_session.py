"""The investigation of a planning session with Agent A on a provider that has native tool
calls, its responses recorded and replayed through the real SDKs: the calls become the evidence
cards, the request offers the tools, a bad call is dropped and the round still runs, ask_human
asks the human, every call is traced, and a re-run asks the model nothing."""

from __future__ import annotations

import json

import pytest

from agents import call_policy
from agents.investigation import native
from agents.investigation.clarify import QuestionAsked
from agents.investigation.session import investigate, load_evidence
from agents.models import LLMCall
from agents.providers import glm, openai_compat
from agents.providers.base import CallOptions, ChatMessage
from agents.turns import Agent, tool_call
from conversations.models import Message, PlanningSession
from tests.agents.llm_replay import Replay

pytestmark = pytest.mark.django_db(transaction=True)

# Names no symbol, so the app's own round-1 lookup is only a search of the task itself.
TASK = "Tokens should stop working a day after they are issued; today they never expire"


@pytest.fixture(autouse=True)
def remote_keys(settings, monkeypatch):
    settings.GLM_API_KEY = "glm-test-key-for-replay"
    settings.OPENAI_API_KEY = "sk-test-key-for-replay"
    settings.PLANAGENTS_EVIDENCE_STEPS = 4
    settings.PLANAGENTS_EVIDENCE_ROUNDS = 2
    monkeypatch.setattr(call_policy, "sleep", lambda seconds, should_stop: None)


def planning_session(user, codebase, profile: str) -> PlanningSession:
    return PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Expiry", status="running", task=TASK,
        mode=PlanningSession.Mode.PLANNING, agent_a_profile=profile, agent_b_profile="fake",
    )  # fmt: skip


def replayed(monkeypatch, module, vendor: str, *names: str) -> Replay:
    replay = Replay(vendor)
    for name in names:
        replay.stream(name)
    monkeypatch.setattr(module, "http_client", replay.client)
    return replay


def plan_messages(session):
    return list(
        Message.objects.filter(session=session, turn_key__contains=":plan:").order_by("seq")
    )


def test_agent_a_on_glm_gathers_evidence_from_its_tool_calls_and_a_rerun_asks_nothing(
    monkeypatch, user, codebase
):
    replay = replayed(monkeypatch, glm, "glm", "stream_tool_calls.sse", "stream_tool_none.sse")
    session = planning_session(user, codebase, "glm")
    items = investigate(session, Agent("A", "glm"), key="investigate")

    # The model's two calls, in its order, then the app's own search of the task.
    assert [(e.label, e.tool, e.argument) for e in items] == [
        ("E1", "find_symbol", "TokenStore"),
        ("E2", "search", "token expiry"),
        ("E3", "search", TASK),
    ]
    assert items[0].found and items[0].path == "todo/auth.py"
    cards = Message.objects.filter(session=session, turn_key__startswith="investigate:E")
    assert cards.count() == 3
    # Round 1 offered every tool as a function (no JSON asked for) and planned another round.
    first = replay.body(0)
    assert [t["function"]["name"] for t in first["tools"]] == [s.name for s in native.tool_specs()]
    assert "as JSON" not in first["messages"][-1]["content"]
    plans = plan_messages(session)
    assert plans[0].data["evidence_plan"]["next_action"] == "retrieve"
    assert [s["tool"] for s in plans[0].data["steps"]] == ["find_symbol", "search", "search"]
    assert (plans[0].prompt_tokens, plans[0].completion_tokens) == (326, 44)
    assert plans[0].model == "glm-4.5-flash"
    # Round 2 was shown what round 1 found, made no call: synthesize.
    assert (
        "[E1] find_symbol(TokenStore) → todo/auth.py" in replay.body(1)["messages"][-1]["content"]
    )
    assert plans[1].data["evidence_plan"] == {"steps": [], "next_action": "synthesize",
                                              "question": ""}  # fmt: skip
    assert "Nothing to look up" in plans[1].content
    # Both calls are traced, with the raw tool calls as their output.
    calls = list(LLMCall.objects.filter(session=session).order_by("pk"))
    assert [(c.schema, c.purpose, c.outcome) for c in calls] == [
        ("ToolReply", "EvidencePlan (tool calls)", "ok")
    ] * 2
    assert json.loads(calls[0].output)["calls"][0] == {
        "name": "find_symbol",
        "arguments": '{"name":"TokenStore"}',
    }

    # A re-run (a resumed job) finds the saved plans and evidence: no request, no new message.
    messages = Message.objects.filter(session=session).count()
    again = investigate(session, Agent("A", "glm"), key="investigate")
    assert again == items == load_evidence(session.pk, "investigate")
    assert len(replay.requests) == 2
    assert Message.objects.filter(session=session).count() == messages


def test_an_unknown_tool_and_malformed_arguments_are_dropped_and_the_round_still_runs(
    monkeypatch, user, codebase, settings
):
    settings.PLANAGENTS_EVIDENCE_ROUNDS = 1
    replayed(monkeypatch, openai_compat, "openai", "stream_tool_calls_bad.sse")
    session = planning_session(user, codebase, "openai")
    items = investigate(session, Agent("A", "openai"), key="investigate")

    assert [(e.tool, e.argument) for e in items] == [
        ("find_symbol", "TokenStore"),
        ("search", TASK),
    ]
    (plan,) = plan_messages(session)
    assert plan.data["evidence_plan"]["next_action"] == "synthesize"  # the last round
    assert "_Tool calls left out: `grep`: no such tool; `read_file`: its arguments were not " in (
        plan.content
    )
    assert "the app planned instead" not in plan.content


def test_ask_human_asks_the_human_the_models_question(monkeypatch, user, codebase):
    replay = replayed(monkeypatch, glm, "glm", "stream_tool_ask.sse")
    session = planning_session(user, codebase, "glm")
    with pytest.raises(QuestionAsked):
        investigate(session, Agent("A", "glm"), key="investigate")

    question = Message.objects.get(session=session, turn_key="investigate:question")
    expected = "Should the day count from when a token was issued, or from its last use?"
    assert question.data == {"question": expected, "round": 1}
    (plan,) = plan_messages(session)
    assert plan.data["evidence_plan"]["next_action"] == "clarify"
    # The app's own lookup still ran before the question.
    assert [e.tool for e in load_evidence(session.pk, "investigate")] == ["search"]
    assert len(replay.requests) == 1


def test_a_rate_limited_tool_call_is_retried_charged_and_traced_like_any_call(
    monkeypatch, user, codebase
):
    replay = Replay("openai").error(429, "rate_limited.json").stream("stream_tool_calls.sse")
    monkeypatch.setattr(openai_compat, "http_client", replay.client)
    session = planning_session(user, codebase, "openai")
    provider = openai_compat.build("openai")
    options = CallOptions()
    answer = tool_call(session, provider, [ChatMessage("user", TASK)], native.tool_specs(), options)
    assert [c.name for c in answer.calls] == ["find_symbol", "search"]
    assert len(replay.requests) == 2
    outcomes = LLMCall.objects.filter(session=session).order_by("pk")
    assert [c.outcome for c in outcomes] == ["retried", "ok"]
    session.refresh_from_db()
    assert (session.calls_used, session.tokens_used) == (2, 318 + 41)
