"""The evidence plan from native tool calls, for a provider whose API has them
(`LLMProvider.native_tools`: Gemini, GLM, OpenAI-compatible). The read-only tools and
`ask_human` are offered as functions, declared from the one tools table
(agents.investigation.tools.TOOLS), and the calls the model makes become the round's
EvidencePlan. The local model writes the JSON plan under its grammar instead.

How a reply maps onto a round: each tool call is one independent step, in the order given;
`ask_human` is clarify with its question; no call at all is synthesize; calls in a round before
the last are retrieve (the next round's prompt shows what they found). A call of no known tool,
or whose arguments are not the one string asked for, is dropped with a note, never an error."""

from __future__ import annotations

import json

from agents.investigation.evidence import EvidencePlan, EvidenceStep
from agents.investigation.tools import TOOLS
from agents.providers.base import CallOptions, ChatMessage, LLMProvider, ToolReply, ToolSpec
from agents.turns import tool_call
from conversations.models import PlanningSession

ASK_HUMAN = "ask_human"
ASK_HUMAN_DOES = (
    "Ask the human one question, only when the task can mean two different changes and the "
    "code cannot tell which."
)
_ARGUMENT_CHARS = EvidenceStep.model_json_schema()["properties"]["argument"]["maxLength"]
_QUESTION_CHARS = EvidencePlan.model_json_schema()["properties"]["question"]["maxLength"]


def tool_specs() -> list[ToolSpec]:
    """One function per read-only tool, each taking one string, and ask_human(question)."""
    specs = [ToolSpec(name, t.does, _one_string(t.argument, t.means)) for name, t in TOOLS.items()]
    question = "the one question, answerable in a sentence"
    return [*specs, ToolSpec(ASK_HUMAN, ASK_HUMAN_DOES, _one_string("question", question))]


def _one_string(name: str, means: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": means}},
        "required": [name],
    }


def plan_with_tools(
    session: PlanningSession,
    provider: LLMProvider,
    prompt: str,
    options: CallOptions,
    max_steps: int,
    *,
    last_round: bool,
) -> tuple[EvidencePlan, list[str]]:
    """Offer the tools to `provider` and read its calls as this round's plan (see plan_from).
    Budget, retries and trace as for any call (agents.turns.tool_call)."""
    reply = tool_call(
        session, provider, [ChatMessage("user", prompt)], tool_specs(), options,
        purpose="EvidencePlan (tool calls)",
    )  # fmt: skip
    return plan_from(reply, max_steps, last_round=last_round)


def plan_from(
    reply: ToolReply, max_steps: int, *, last_round: bool
) -> tuple[EvidencePlan, list[str]]:
    """The plan the model's tool calls make, and a note for each call left out."""
    steps: list[EvidenceStep] = []
    question = ""
    notes: list[str] = []
    for call in reply.calls:
        argument, problem = _argument(call.name, call.arguments)
        if problem:
            notes.append(problem)
        elif call.name == ASK_HUMAN:
            question = question or argument[:_QUESTION_CHARS]
        elif len(steps) >= max_steps:
            notes.append(f"`{call.name}` ({_tick(argument[:60])}): more than {max_steps} lookups")
        else:
            step = {
                "id": f"E{len(steps) + 1}",
                "tool": call.name,
                "argument": argument[:_ARGUMENT_CHARS],
                "why": TOOLS[call.name].does.rstrip("."),
                "kind": "independent",
            }
            steps.append(EvidenceStep.model_validate(step))
    action = "clarify" if question else "retrieve" if steps and not last_round else "synthesize"
    return EvidencePlan.model_validate(
        {"steps": steps, "next_action": action, "question": question}
    ), notes


def _argument(name: str, arguments: str) -> tuple[str, str]:
    """The call's one string argument, or "" and why the call is left out."""
    if name != ASK_HUMAN and name not in TOOLS:
        return "", f"`{_tick(name[:40])}`: no such tool"
    key = "question" if name == ASK_HUMAN else TOOLS[name].argument
    try:
        given = json.loads(arguments or "{}")
    except ValueError:
        return "", f"`{name}`: its arguments were not JSON"
    value = given.get(key) if isinstance(given, dict) else None
    if not isinstance(value, str) or not value.strip():
        return "", f"`{name}`: no `{key}` given"
    return value.strip(), ""


def dropped_note(notes: list[str]) -> str:
    """The plan message's line about the calls left out, or ""."""
    if not notes:
        return ""
    return f"\n\n_Tool calls left out: {'; '.join(notes)}._"


def _tick(text: str) -> str:
    return text.replace("`", "'")
