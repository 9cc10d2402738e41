"""The local models' native tool calls (PLANAGENTS_LOCAL_NATIVE_TOOLS, off by default): the
request carries the tool declarations for llama.cpp's chat template, streamed `tool_calls`
deltas are read into calls in order, and a reply that writes its call as text is no call.
That last one is what Qwen2.5-Coder does on this llama.cpp (a recorded reply): it is why the
local profiles keep the JSON plan under a grammar (bench/RESULTS-native-tools.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.investigation.native import plan_from, tool_specs
from agents.providers import get_provider
from agents.providers.base import CallOptions, ChatMessage, ToolReply
from agents.providers.local import LocalLlamaProvider, _InProcessCall

RECORDED = Path(__file__).resolve().parent.parent / "fixtures" / "llm" / "llamacpp"
ASK = [ChatMessage("user", "Look at the code first.")]


class Server:
    """Answers handle_chat_completions with a stream of chunks, keeping each request body."""

    def __init__(self, chunks: list[dict[str, Any]]) -> None:
        self.chunks = chunks
        self.bodies: list[dict[str, Any]] = []

    def handle_chat_completions(self, body: dict[str, Any], on_chunk: Any) -> None:
        self.bodies.append(body)
        for chunk in self.chunks:
            if on_chunk(chunk):
                return


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "finish_reason": None, "delta": fields}],
            "object": "chat.completion.chunk"}  # fmt: skip


def tool_call_stream() -> list[dict[str, Any]]:
    """llama.cpp's streamed tool calls: per call its id, type and name first, then the
    arguments in fragments under the same index; the usage last."""
    return [
        delta(role="assistant", content=None),
        delta(tool_calls=[{"index": 0, "id": "c0", "type": "function",
                           "function": {"name": "find_symbol", "arguments": ""}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"name": "Session.'}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": 'resolve_redirects"}'}}]),
        delta(tool_calls=[{"index": 1, "id": "c1", "type": "function",
                           "function": {"name": "search", "arguments": '{"query": "strip auth"}'}}]),
        {"choices": [], "usage": {"prompt_tokens": 830, "completion_tokens": 41}},
    ]  # fmt: skip


def provider_on(server: Server, monkeypatch: Any) -> LocalLlamaProvider:
    provider = get_provider("local")
    assert isinstance(provider, LocalLlamaProvider)
    monkeypatch.setattr(provider, "_open", lambda body: _InProcessCall(server, body))
    return provider


def reply_of(provider: LocalLlamaProvider, options: CallOptions, **kwargs: Any) -> ToolReply:
    return ToolReply.from_json(
        "".join(provider.stream_tool_calls(ASK, tool_specs(), options, **kwargs))
    )


def test_the_local_models_keep_the_json_plan_unless_the_setting_turns_tools_on(settings):
    assert get_provider("local").native_tools is False
    assert get_provider("local-1.5b").native_tools is False
    settings.PLANAGENTS_LOCAL_NATIVE_TOOLS = True
    assert get_provider("local-1.5b").native_tools is True


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_a_tool_call_request_declares_every_tool_for_the_chat_template(choice, monkeypatch):
    server = Server(tool_call_stream())
    reply_of(provider_on(server, monkeypatch), CallOptions(), choice=choice)
    (body,) = server.bodies
    assert [t["function"]["name"] for t in body["tools"]] == [s.name for s in tool_specs()]
    assert body["tool_choice"] == choice and body["stream"] is True
    assert "json_schema" not in body  # the template, not our grammar, shapes the reply


def test_streamed_tool_calls_become_the_evidence_plans_steps_in_order(monkeypatch):
    options = CallOptions()
    reply = reply_of(provider_on(Server(tool_call_stream()), monkeypatch), options)
    assert [(c.name, json.loads(c.arguments)) for c in reply.calls] == [
        ("find_symbol", {"name": "Session.resolve_redirects"}),
        ("search", {"query": "strip auth"}),
    ]
    plan, dropped = plan_from(reply, max_steps=6, last_round=True)
    assert [(s.tool, s.argument) for s in plan.steps] == [
        ("find_symbol", "Session.resolve_redirects"),
        ("search", "strip auth"),
    ]
    assert not dropped
    assert (options.usage.prompt_tokens, options.usage.completion_tokens) == (830, 41)


def test_a_recorded_qwen_reply_writing_its_call_as_text_makes_no_lookup(monkeypatch):
    chunks = json.loads((RECORDED / "qwen05b_tools_auto.json").read_text())
    reply = reply_of(provider_on(Server(chunks), monkeypatch), CallOptions())
    assert reply.calls == ()
    assert '"name": "search"' in reply.text  # the call it meant, in a fenced JSON block
    plan, _ = plan_from(reply, max_steps=6, last_round=False)
    assert plan.steps == [] and plan.next_action == "synthesize"
