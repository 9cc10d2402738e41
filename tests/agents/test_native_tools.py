"""Native tool calls: the declarations come from the tools table, each vendor's streamed tool
calls (recorded responses replayed through the real SDKs) are read into calls, and the calls
become an evidence plan: steps in order, ask_human as clarify, no call as synthesize, a bad
call dropped with a note."""

from __future__ import annotations

import json

import pytest

from agents.investigation.native import ASK_HUMAN, dropped_note, plan_from, tool_specs
from agents.investigation.tools import TOOLS
from agents.providers.base import CallOptions, ChatMessage, ToolCall, ToolReply
from agents.providers.fake import FakeProvider
from agents.providers.local import LocalLlamaProvider
from tests.agents.llm_replay import Replay
from tests.agents.test_providers_remote import provider_for

VENDORS = ["openai", "glm", "gemini"]
MESSAGES = [ChatMessage("user", "Tokens should expire after a day. Look at the code first.")]
DECLARED = [*TOOLS, ASK_HUMAN]


def reply(*calls: tuple[str, str], text: str = "") -> ToolReply:
    return ToolReply(text, tuple(ToolCall(name, arguments) for name, arguments in calls))


def test_each_tool_of_the_table_and_ask_human_is_declared_with_one_string_argument():
    specs = tool_specs()
    assert [s.name for s in specs] == DECLARED
    for spec in specs:
        properties = spec.parameters["properties"]
        assert spec.parameters["type"] == "object"
        assert len(properties) == 1 and spec.parameters["required"] == list(properties)
        assert next(iter(properties.values()))["type"] == "string"
    by_name = {s.name: s for s in specs}
    assert by_name["find_symbol"].description == TOOLS["find_symbol"].does
    assert list(by_name["search"].parameters["properties"]) == [TOOLS["search"].argument]
    assert list(by_name[ASK_HUMAN].parameters["properties"]) == ["question"]


def test_the_local_model_and_the_scripted_fake_keep_the_json_plan():
    assert LocalLlamaProvider.native_tools is False
    assert FakeProvider("fake").native_tools is False


@pytest.mark.parametrize("vendor", VENDORS)
def test_each_vendor_reads_its_streamed_tool_calls_in_order_and_counts_usage(vendor):
    replay = Replay(vendor).stream("stream_tool_calls.sse")
    provider = provider_for(vendor, replay)
    assert provider.native_tools
    options = CallOptions(max_tokens=400)
    answer = provider.tool_calls(MESSAGES, tool_specs(), options)
    assert [(c.name, json.loads(c.arguments)) for c in answer.calls] == [
        ("find_symbol", {"name": "TokenStore"}),
        ("search", {"query": "token expiry"}),
    ]
    expected = {"openai": (318, 41), "glm": (326, 44), "gemini": (301, 24 + 88)}[vendor]
    assert (options.usage.prompt_tokens, options.usage.completion_tokens) == expected


@pytest.mark.parametrize("vendor", ["openai", "glm"])
def test_chat_completions_requests_carry_every_function_declaration(vendor):
    replay = Replay(vendor).stream("stream_tool_calls.sse")
    provider_for(vendor, replay).tool_calls(MESSAGES, tool_specs(), CallOptions())
    body = replay.body()
    assert body["stream"] is True and body["tool_choice"] == "auto"
    assert [t["type"] for t in body["tools"]] == ["function"] * len(DECLARED)
    functions = {t["function"]["name"]: t["function"] for t in body["tools"]}
    assert list(functions) == DECLARED
    assert functions["read_file"]["parameters"] == tool_specs()[3].parameters
    assert functions["read_file"]["description"] == TOOLS["read_file"].does
    assert body.get("response_format") is None  # tool calls, not a JSON reply


def test_gemini_requests_carry_every_function_declaration_and_ask_for_no_json():
    replay = Replay("gemini").stream("stream_tool_calls.sse")
    provider_for("gemini", replay).tool_calls(MESSAGES, tool_specs(), CallOptions())
    assert ":streamGenerateContent" in str(replay.requests[0].url)
    body = replay.body()
    (tool,) = body["tools"]
    declared = {d["name"]: d for d in tool["functionDeclarations"]}
    assert list(declared) == DECLARED
    # The SDK sends the field under its proto name, which the API takes as parametersJsonSchema.
    assert declared["search"]["parameters_json_schema"] == tool_specs()[0].parameters
    assert declared[ASK_HUMAN]["description"].startswith("Ask the human one question")
    assert "responseMimeType" not in body.get("generationConfig", {})


def test_a_reply_with_text_and_no_call_is_read_as_no_calls():
    replay = Replay("openai").stream("stream_tool_none.sse")
    answer = provider_for("openai", replay).tool_calls(MESSAGES, tool_specs(), CallOptions())
    assert answer == ToolReply("I have enough to propose the change.", ())


def test_calls_become_independent_steps_in_the_order_given():
    plan, notes = plan_from(
        reply(("find_symbol", '{"name": "TokenStore"}'), ("read_file", '{"path": "a.py:1-9"}')),
        max_steps=4,
        last_round=False,
    )
    assert notes == []
    assert [(s.id, s.tool, s.argument, s.kind, s.depends_on) for s in plan.steps] == [
        ("E1", "find_symbol", "TokenStore", "independent", []),
        ("E2", "read_file", "a.py:1-9", "independent", []),
    ]
    assert plan.next_action == "retrieve"  # calls before the last round: plan another


def test_calls_in_the_last_round_are_the_last_lookups():
    plan, _ = plan_from(reply(("search", '{"query": "expiry"}')), max_steps=4, last_round=True)
    assert plan.next_action == "synthesize"


def test_no_call_means_synthesize():
    plan, notes = plan_from(reply(text="Enough."), max_steps=4, last_round=False)
    assert (plan.steps, plan.next_action, notes) == ([], "synthesize", [])


def test_ask_human_means_clarify_with_its_question():
    question = "Should a token expire a day after it is issued, or after its last use?"
    plan, _ = plan_from(
        reply((ASK_HUMAN, json.dumps({"question": question}))), max_steps=4, last_round=False
    )
    assert (plan.next_action, plan.question, plan.steps) == ("clarify", question, [])


def test_an_unknown_tool_and_bad_arguments_are_dropped_with_a_note_and_the_rest_kept():
    plan, notes = plan_from(
        reply(
            ("grep", '{"pattern": "expires"}'),
            ("read_file", '{"path": "todo/auth.py'),  # cut off: not JSON
            ("outline", '["todo/auth.py"]'),  # JSON, but not an object
            ("list_dir", '{"folder": "todo"}'),  # not the argument declared
            ("search", '{"query": "   "}'),
            ("find_symbol", '{"name": "TokenStore"}'),
        ),
        max_steps=4,
        last_round=False,
    )
    assert [(s.tool, s.argument) for s in plan.steps] == [("find_symbol", "TokenStore")]
    assert notes == [
        "`grep`: no such tool",
        "`read_file`: its arguments were not JSON",
        "`outline`: no `path` given",
        "`list_dir`: no `path` given",
        "`search`: no `query` given",
    ]
    assert dropped_note(notes).startswith("\n\n_Tool calls left out: `grep`: no such tool; ")
    assert dropped_note([]) == ""


def test_calls_past_the_step_limit_are_left_out_and_long_arguments_cut():
    calls = [("search", json.dumps({"query": f"q{i} " + "x" * 300})) for i in range(4)]
    plan, notes = plan_from(reply(*calls), max_steps=2, last_round=False)
    assert [s.argument[:3] for s in plan.steps] == ["q0 ", "q1 "]
    assert all(len(s.argument) == 160 for s in plan.steps)
    assert len(notes) == 2 and all("more than 2 lookups" in n for n in notes)
