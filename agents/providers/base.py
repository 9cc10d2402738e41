"""The one LLM provider interface. A provider is a small class: a profile name, the model it
runs, and two ways to call it: stream text, or produce an object of a Pydantic model. A
provider whose API has native tool calls (`native_tools`) has a third: offer functions and get
back the calls the model chose."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass
class Usage:
    """Token accounting for one call, filled in by the provider as it goes."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the backend reused from its prompt cache instead of reading again (of
    # prompt_tokens); only backends that report it (the embedded llama.cpp server) fill it in.
    cached_tokens: int = 0


class ProviderError(Exception):
    """A call to a model failed in a way the user should be told about."""


class ProviderUnavailable(ProviderError):
    """The profile cannot be used here (missing key, missing weights)."""


class GenerationCancelled(ProviderError):
    """The caller asked to stop while the model was still writing."""


class RetryableError(ProviderError):
    """A failure worth another try if nothing was streamed yet: rate limit, 5xx, timeout,
    lost connection. `retry_after` is the server's Retry-After in seconds, when it sent one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class CallOptions:
    max_tokens: int = 512
    temperature: float = 0.3
    # Polled between tokens; returning True stops the generation (GenerationCancelled).
    should_stop: Callable[[], bool] | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class ToolSpec:
    """One function a model may call: its name, what it does, and its parameters as a JSON
    schema (an object). Each vendor's declaration is built from this."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call the model made: the function's name and its arguments as the JSON text the
    model wrote, unparsed (whether bad arguments matter is the caller's to say)."""

    name: str
    arguments: str


@dataclass(frozen=True)
class ToolReply:
    """A reply to a call that offered tools: any text, and the tool calls in the model's order."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()

    def to_json(self) -> str:
        return json.dumps({"text": self.text, "calls": [asdict(c) for c in self.calls]})

    @classmethod
    def from_json(cls, raw: str) -> ToolReply:
        try:
            data = json.loads(raw)
            calls = tuple(ToolCall(str(c["name"]), str(c["arguments"])) for c in data["calls"])
            return cls(str(data.get("text", "")), calls)
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidStructuredOutput(
                "The tool-call reply could not be read", f"{type(exc).__name__}: {exc}"
            ) from None


class LLMProvider:
    profile: str = ""
    model_name: str = ""
    native_tools: bool = False
    """Whether `stream_tool_calls` works: the vendor's API has native tool calls."""
    prefills: bool = False
    """Whether a prompt ending in an assistant message is continued from that message (an
    assistant prefill, as llama.cpp's server does), not answered with a new one."""
    queued: bool = False
    """Whether its calls wait their turn in the machine's one line for the local model
    (agents.model_queue): a model on this machine's cores, shared by every session."""

    def stream(self, messages: list[ChatMessage], options: CallOptions) -> Iterator[str]:
        """Yield the reply in text pieces as the model writes them."""
        raise NotImplementedError

    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        """Yield raw JSON text pieces constrained to `schema`'s JSON schema."""
        raise NotImplementedError

    def stream_tool_calls(
        self, messages: list[ChatMessage], tools: list[ToolSpec], options: CallOptions
    ) -> Iterator[str]:
        """Offer `tools` and yield the reply as ToolReply JSON text (once the model is done:
        tool-call arguments arrive in fragments). Text, like the other two calls, so
        agents.call_policy makes it as it makes every call: budget, retries, trace."""
        raise NotImplementedError

    def tool_calls(
        self, messages: list[ChatMessage], tools: list[ToolSpec], options: CallOptions
    ) -> ToolReply:
        """The reply to a call offering `tools`, outside any session (sessions use
        agents.turns.tool_call)."""
        return ToolReply.from_json("".join(self.stream_tool_calls(messages, tools, options)))

    def structured(self, messages: list[ChatMessage], schema: type[T], options: CallOptions) -> T:
        """Return one validated `schema` object (one repair retry on invalid output). Sessions
        call agents.turns instead, which wraps the same structured_reply in retries and the
        session's budget."""
        return structured_reply(
            messages, schema, lambda m: "".join(self.stream_structured(m, schema, options))
        )


class InvalidStructuredOutput(ProviderError):
    """The model's JSON did not validate against the schema."""

    def __init__(self, message: str, problems: str) -> None:
        super().__init__(message)
        self.problems = problems


def parse_structured(text: str, schema: type[T]) -> T:
    from pydantic import ValidationError

    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise InvalidStructuredOutput(
            f"The model's reply did not match {schema.__name__}: {problems}", problems
        ) from exc


def structured_reply(
    messages: list[ChatMessage],
    schema: type[T],
    complete: Callable[[list[ChatMessage]], str],
    on_salvage: Callable[[str], None] | None = None,
) -> T:
    """The one repair path for structured output. `complete(messages)` makes one call and
    returns its raw JSON text (streaming it wherever the caller wants on the way). A reply cut
    off at its token limit keeps its complete part when that validates (`salvage`; the caller
    hears what was lost through `on_salvage`). Other invalid JSON is shown back to the model
    once; a second failure raises InvalidStructuredOutput."""
    for attempt in range(2):
        text = complete(messages)
        try:
            return parse_structured(text, schema)
        except InvalidStructuredOutput as exc:
            kept = salvage(text, schema)
            if kept is not None:
                value, lost = kept
                if on_salvage is not None:
                    on_salvage(lost)
                return value
            if attempt:
                raise
            # Small models often get it right when shown their own mistake. The original
            # messages stay first so a prompt cache still holds them; the correction comes
            # last. Usage keeps counting across both calls.
            messages = [*messages, *repair_messages(text, exc)]
    raise AssertionError("unreachable")


def cut_off(text: str) -> bool:
    """Whether `text` is JSON that stops before its end (a reply cut at its token limit)."""
    from pydantic_core import from_json

    try:
        from_json(text)
    except ValueError as exc:
        return str(exc).startswith("EOF while parsing")
    return False


_MAX_SALVAGE_STEPS = 32


def salvage(text: str, schema: type[T]) -> tuple[T, str] | None:
    """The complete part of a cut-off JSON reply as `schema`, and what was lost; None when the
    reply was not cut off or its complete part does not make an object. An unfinished string
    or item is dropped; a list the reply never reached is empty. Anything else the schema
    requires must be there: a plan without its summary is not salvaged."""
    from pydantic import ValidationError
    from pydantic_core import from_json

    if not cut_off(text):
        return None
    value = from_json(text, allow_partial=True)  # unfinished strings and keys left out
    if not isinstance(value, dict):
        return None
    lost: list[str] = []
    for _ in range(_MAX_SALVAGE_STEPS):
        try:
            salvaged = schema.model_validate(value)
        except ValidationError as exc:
            errors = exc.errors()
        else:
            # Nothing of what the reply was for survived (its first item was cut): ask again.
            lists = [k for k in schema.model_fields if _is_list(schema, k)]
            if lists and not any(getattr(salvaged, k) for k in lists):
                return None
            return salvaged, "; ".join(lost) or "cut off after its last complete item"
        unreached = [
            e["loc"][0]
            for e in errors
            if e["type"] == "missing" and len(e["loc"]) == 1 and _is_list(schema, e["loc"][0])
        ]
        if unreached:
            for key in unreached:
                value[str(key)] = []
            lost.append("never reached: " + ", ".join(str(k) for k in unreached))
            continue
        dropped = _drop_unfinished_item(value, [e["loc"] for e in errors])
        if dropped is None:
            return None
        lost.append(f"unfinished item dropped: {dropped}")
    return None


def _is_list(schema: type[BaseModel], key: object) -> bool:
    field = schema.model_fields.get(str(key))
    if field is None:
        return False
    annotation = field.annotation
    return getattr(annotation, "__origin__", annotation) is list


def _drop_unfinished_item(value: Any, locations: list[tuple[Any, ...]]) -> str | None:
    """Drop the item an error points into when it is the last of its list (where a cut-off
    reply stopped); "path[n]" of what was dropped, None when no error is in such an item."""
    for loc in locations:
        for depth in range(len(loc) - 1, -1, -1):
            if not isinstance(loc[depth], int):
                continue
            container: Any = value
            for key in loc[:depth]:
                container = container[key]
            if isinstance(container, list) and loc[depth] == len(container) - 1:
                container.pop()
                return ".".join(str(k) for k in loc[:depth]) + f"[{loc[depth]}]"
            break
    return None


def repair_messages(bad_text: str, error: InvalidStructuredOutput) -> list[ChatMessage]:
    """The two turns that show a model its invalid JSON and ask for a corrected object."""
    shown = bad_text if len(bad_text) <= 4000 else bad_text[:4000] + " ..."
    if cut_off(bad_text):
        # Most often the token limit: asking for the same again would run into it again.
        ask = (
            "That JSON is not valid: it stops before the object ends. Reply again with the "
            "whole JSON object, shorter: fewer items and shorter texts."
        )
    else:
        ask = (
            f"That JSON is not valid: {error.problems}. "
            "Reply again with only the corrected JSON object."
        )
    return [ChatMessage("assistant", shown), ChatMessage("user", ask)]
