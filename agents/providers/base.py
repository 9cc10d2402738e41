"""The one LLM provider interface. A provider is a small class: a profile name, the model it
runs, and two ways to call it: stream text, or produce an object of a Pydantic model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

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


class LLMProvider:
    profile: str = ""
    model_name: str = ""

    def stream(self, messages: list[ChatMessage], options: CallOptions) -> Iterator[str]:
        """Yield the reply in text pieces as the model writes them."""
        raise NotImplementedError

    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        """Yield raw JSON text pieces constrained to `schema`'s JSON schema."""
        raise NotImplementedError

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
    messages: list[ChatMessage], schema: type[T], complete: Callable[[list[ChatMessage]], str]
) -> T:
    """The one repair path for structured output. `complete(messages)` makes one call and
    returns its raw JSON text (streaming it wherever the caller wants on the way). Invalid
    JSON is shown back to the model once; a second failure raises InvalidStructuredOutput."""
    text = complete(messages)
    try:
        return parse_structured(text, schema)
    except InvalidStructuredOutput as exc:
        # Small models often get it right when shown their own mistake. The original messages
        # stay first so a prompt cache still holds them; the correction comes last. Usage
        # keeps counting across both calls.
        return parse_structured(complete([*messages, *repair_messages(text, exc)]), schema)


def repair_messages(bad_text: str, error: InvalidStructuredOutput) -> list[ChatMessage]:
    """The two turns that show a model its invalid JSON and ask for a corrected object."""
    shown = bad_text if len(bad_text) <= 4000 else bad_text[:4000] + " ..."
    return [
        ChatMessage("assistant", shown),
        ChatMessage(
            "user",
            f"That JSON is not valid: {error.problems}. "
            "Reply again with only the corrected JSON object.",
        ),
    ]
