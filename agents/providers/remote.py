"""What the remote providers (Gemini, GLM, OpenAI-compatible) share: their settings, turning
HTTP failures into errors a user can act on, keeping API keys out of every message and log
line, and reading an OpenAI-shaped chat stream."""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any

from django.conf import settings

from .base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    LLMProvider,
    ProviderError,
    RetryableError,
    ToolCall,
    ToolReply,
    ToolSpec,
)

# Every setting that may hold a key (each read from the env var of its name in
# planagents/settings.py): their values are scrubbed from replies, error text and logs.
SECRET_SETTINGS = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GLM_API_KEY",
    "ZAI_API_KEY",
    "ZHIPUAI_API_KEY",
    "OPENAI_API_KEY",
)
_MIN_SECRET_LEN = 6  # shorter values would scrub ordinary words


def first_setting(*names: str) -> str:
    """The value of the first of `names` that is set, else ""."""
    for name in names:
        value = str(getattr(settings, name, "") or "").strip()
        if value:
            return value
    return ""


def timeout_seconds() -> float:
    """Per-call timeout: connecting, and the longest silence between two streamed pieces."""
    return float(settings.PLANAGENTS_LLM_TIMEOUT)


def scrub(text: str) -> str:
    """`text` with the value of every configured API key replaced by ***."""
    for value in _secrets():
        if value in text:
            text = text.replace(value, "***")
    return text


def _secrets() -> list[str]:
    if not settings.configured:  # a log line written before Django is set up holds no key
        return []
    values = (str(getattr(settings, name, "") or "").strip() for name in SECRET_SETTINGS)
    return [v for v in values if len(v) >= _MIN_SECRET_LEN]


def scrub_stream(pieces: Iterable[str]) -> Iterator[str]:
    """`pieces` with every configured API key replaced by ***, also a key split across pieces:
    a tail that could be the start of a key is held back until the next piece settles it."""
    secrets = _secrets()
    if not secrets:
        yield from pieces
        return
    held = ""
    for piece in pieces:
        text = scrub(held + piece)
        keep = max((_started(text, secret) for secret in secrets), default=0)
        held = text[len(text) - keep :]
        if len(text) > keep:
            yield text[: len(text) - keep]
    if held:
        yield held  # the reply ended there, so it was not a key after all


def _started(text: str, secret: str) -> int:
    """The length of the longest tail of `text` that `secret` starts with (but is not)."""
    for n in range(min(len(secret) - 1, len(text)), 0, -1):
        if secret.startswith(text[-n:]):
            return n
    return 0


def install_log_scrubbing() -> None:
    """Scrub API keys from every log record as it is created, whichever library logs it (the
    SDKs log URLs and response bodies) and wherever it is sent."""
    current = logging.getLogRecordFactory()
    if getattr(current, "scrubs_secrets", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = current(*args, **kwargs)
        secrets = _secrets()
        if secrets:
            message = record.getMessage()
            clean = scrub(message)
            if clean != message:
                record.msg, record.args = clean, None
            if record.exc_info and record.exc_info[1] is not None:
                text = str(record.exc_info[1])
                if any(secret in text for secret in secrets):
                    # The traceback would print the exception's text: keep the type only.
                    kind = type(record.exc_info[1]).__name__
                    record.exc_info = None
                    record.msg = f"{record.msg} ({kind}; details withheld: they held an API key)"
        return record

    factory.scrubs_secrets = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(
    vendor: str, status: int, headers: Mapping[str, str] | None, key_env: str, detail: str = ""
) -> ProviderError:
    """The error for an HTTP failure. Only retryable statuses become RetryableError."""
    headers = headers or {}
    detail = scrub(detail.strip())[:200]
    suffix = f": {detail}" if detail else ""
    if status == 429:
        return RetryableError(
            f"{vendor} is rate limiting requests (HTTP 429)",
            parse_retry_after(headers.get("retry-after")),
        )
    if status in (408, 409) or status >= 500:
        return RetryableError(
            f"{vendor} had a server error (HTTP {status})",
            parse_retry_after(headers.get("retry-after")),
        )
    if status in (401, 403):
        return ProviderError(f"{vendor} rejected the API key (HTTP {status}); check {key_env}")
    return ProviderError(f"{vendor} refused the request (HTTP {status}){suffix}")


def _transport_classes() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    timeouts: list[type[BaseException]] = []
    transport: list[type[BaseException]] = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


TIMEOUT_ERRORS, TRANSPORT_ERRORS = _transport_classes()


def transport_error(vendor: str, exc: BaseException) -> ProviderError | None:
    """A RetryableError for a timeout or a lost connection (raw or wrapped by an SDK)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, TIMEOUT_ERRORS) or "Timeout" in type(seen).__name__:
            return RetryableError(f"{vendor} did not answer in time (timeout)")
        if isinstance(seen, TRANSPORT_ERRORS) or "Connection" in type(seen).__name__:
            return RetryableError(f"the connection to {vendor} was lost")
        seen = seen.__cause__ or seen.__context__
    return None


def chat_chunks(chunks: Iterable[Any], options: CallOptions) -> Iterator[str]:
    """Text pieces of an OpenAI-shaped chat completion stream, counting usage as it arrives."""
    deltas = _deltas(chunks, options)
    try:
        for delta in deltas:
            piece = getattr(delta, "content", None)
            if piece:
                yield piece
    finally:
        deltas.close()


def chat_tool_reply(chunks: Iterable[Any], options: CallOptions) -> Iterator[str]:
    """The ToolReply JSON of an OpenAI-shaped chat completion stream, once it ends. Each tool
    call arrives in pieces keyed by `index`: the id and name first, then its arguments in
    fragments (OpenAI; GLM with tool_stream) or whole (GLM, most servers). Ollama reuses index
    0 for every call of a batch, telling them apart by id only."""
    text: list[str] = []
    calls: list[tuple[str, str, list[str]]] = []  # (id, name, argument fragments)
    slot_of: dict[int, int] = {}
    for delta in _deltas(chunks, options):
        if getattr(delta, "content", None):
            text.append(delta.content)
        for piece in getattr(delta, "tool_calls", None) or []:
            index = piece.index if piece.index is not None else 0
            slot = slot_of.get(index)
            if slot is None or (piece.id and calls[slot][0] and piece.id != calls[slot][0]):
                slot = slot_of[index] = len(calls)
                calls.append((piece.id or "", "", []))
            call_id, name, fragments = calls[slot]
            function = getattr(piece, "function", None)
            if function is not None and function.arguments:
                fragments.append(function.arguments)
            if function is not None and function.name:
                name = function.name  # sent once (OpenAI) or with every piece (some servers)
            calls[slot] = (call_id or piece.id or "", name, fragments)
    reply = ToolReply("".join(text), tuple(ToolCall(n, "".join(f)) for _, n, f in calls))
    yield reply.to_json()


def _deltas(chunks: Iterable[Any], options: CallOptions) -> Generator[Any, None, None]:
    """The choice deltas of an OpenAI-shaped chat completion stream, counting usage as it
    arrives and stopping when asked. Usage comes in the last chunk (OpenAI with include_usage,
    GLM always)."""
    should_stop = options.should_stop or (lambda: False)
    output_pieces = 0
    reported = False
    try:
        for chunk in chunks:
            usage = getattr(chunk, "usage", None)
            if usage is not None and getattr(usage, "completion_tokens", None) is not None:
                options.usage.prompt_tokens += usage.prompt_tokens or 0
                options.usage.completion_tokens += usage.completion_tokens or 0
                reported = True
            for choice in getattr(chunk, "choices", None) or []:
                delta = getattr(choice, "delta", None)
                if delta is None:
                    continue
                if getattr(delta, "content", None) or getattr(delta, "tool_calls", None):
                    output_pieces += 1
                yield delta
            if should_stop():
                raise GenerationCancelled("Stopped by the user.")
    finally:
        if not reported:
            # A stream cut short has no usage chunk: count pieces, roughly one token each.
            options.usage.completion_tokens += output_pieces
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """`tools` as chat-completions function declarations (OpenAI, and GLM the same)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


class ChatCompletionsProvider(LLMProvider):
    """The shape GLM and OpenAI-compatible providers share: a chat-completions endpoint
    reached with a key and a base URL. Subclasses say how to ask for JSON, how to start a
    stream with their SDK (`_create`) and what its failures mean (`_failure`)."""

    native_tools = True

    def __init__(
        self, profile: str, *, model: str, base_url: str, api_key: str, http_client: Any = None
    ) -> None:
        self.profile = profile
        self.model_name = model
        self.base_url = base_url
        self._api_key = api_key
        self._http_client = http_client

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}({self.profile!r}, {self.model_name!r}, {self.base_url!r})"

    def stream(self, messages: list[ChatMessage], options: CallOptions) -> Iterator[str]:
        return self._generate(messages, options, {})

    def stream_tool_calls(
        self, messages: list[ChatMessage], tools: list[ToolSpec], options: CallOptions
    ) -> Iterator[str]:
        extra = {"tools": openai_tools(tools), "tool_choice": "auto"}
        return self._generate(messages, options, extra, read=chat_tool_reply)

    def _generate(
        self,
        messages: list[ChatMessage],
        options: CallOptions,
        extra: dict[str, Any],
        read: Callable[[Iterable[Any], CallOptions], Iterator[str]] = chat_chunks,
    ) -> Iterator[str]:
        try:
            yield from read(self._create(messages, options, extra), options)
        except ProviderError:
            raise
        except Exception as exc:
            raise self._failure(exc) from None

    def _create(
        self, messages: list[ChatMessage], options: CallOptions, extra: dict[str, Any]
    ) -> Any:
        """Start the streamed chat completion with the vendor's SDK; returns its chunks."""
        raise NotImplementedError

    def _failure(self, exc: Exception) -> ProviderError:
        """The error to show for an SDK failure (a status, a timeout, a lost connection)."""
        raise NotImplementedError
