"""Gemini through the `google-genai` SDK (not the deprecated google-generativeai)."""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator
from typing import Any

from django.conf import settings

from .base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    LLMProvider,
    ProviderError,
    T,
    ToolCall,
    ToolReply,
    ToolSpec,
)
from .remote import (
    RetryableError,
    first_setting,
    status_error,
    timeout_seconds,
    transport_error,
)

KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # settings of these names, read from the env
KEY_ENV = KEY_ENVS[0]
VENDOR = "Gemini"


def configured_model() -> str:
    return str(settings.GEMINI_MODEL)


def sdk_installed() -> bool:
    """Whether google-genai can be imported, without importing it. find_spec imports the parent
    of a dotted name first, so with no `google` namespace package at all it raises instead of
    returning None."""
    import importlib.util

    try:
        return importlib.util.find_spec("google.genai") is not None
    except (ImportError, ValueError):  # ValueError: a stub module in sys.modules with no spec
        return False


def check() -> str:
    if not sdk_installed():
        return "The google-genai package is not installed. Run: pip install google-genai"
    if not first_setting(*KEY_ENVS):
        return f"Set {KEY_ENV} to a Gemini API key (from Google AI Studio)."
    return ""


def http_client() -> Any:
    """The httpx client handed to the SDK; None lets it build its own (tests replace this)."""
    return None


def build(profile: str) -> LLMProvider:
    return GeminiProvider(
        profile,
        model=configured_model(),
        api_key=first_setting(*KEY_ENVS),
        http_client=http_client(),
    )


class GeminiProvider(LLMProvider):
    native_tools = True

    def __init__(self, profile: str, *, model: str, api_key: str, http_client: Any = None) -> None:
        self.profile = profile
        self.model_name = model
        self._api_key = api_key
        self._http_client = http_client

    def __repr__(self) -> str:  # never the key
        return f"GeminiProvider({self.profile!r}, {self.model_name!r})"

    def stream(self, messages: list[ChatMessage], options: CallOptions) -> Iterator[str]:
        return self._generate(messages, options, {})

    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        return self._generate(
            messages,
            options,
            {
                "response_mime_type": "application/json",
                "response_json_schema": schema.model_json_schema(),
            },
        )

    def _client(self) -> Any:
        from google import genai
        from google.genai import types

        return genai.Client(
            api_key=self._api_key,
            http_options=types.HttpOptions(
                timeout=int(timeout_seconds() * 1000),
                # agents/call_policy.py retries, and only before the first token.
                retry_options=types.HttpRetryOptions(attempts=1),
                httpx_client=self._http_client,
            ),
        )

    def stream_tool_calls(
        self, messages: list[ChatMessage], tools: list[ToolSpec], options: CallOptions
    ) -> Iterator[str]:
        from google.genai import types

        declarations = [
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=t.parameters
            )
            for t in tools
        ]
        parts = self._parts(
            messages, options, {"tools": [types.Tool(function_declarations=declarations)]}
        )
        text: list[str] = []
        calls: list[ToolCall] = []
        for part in parts:
            if part.text:
                text.append(part.text)
            if part.function_call is not None and part.function_call.name:
                # Gemini sends each call whole, its arguments an object (not JSON text).
                arguments = json.dumps(part.function_call.args or {})
                calls.append(ToolCall(part.function_call.name, arguments))
        yield ToolReply("".join(text), tuple(calls)).to_json()

    def _generate(
        self, messages: list[ChatMessage], options: CallOptions, extra: dict[str, Any]
    ) -> Iterator[str]:
        parts = self._parts(messages, options, extra)
        try:
            for part in parts:
                if part.text:
                    yield part.text
        finally:
            parts.close()  # a caller that stops reading ends the stream (and counts its usage)

    def _parts(
        self, messages: list[ChatMessage], options: CallOptions, extra: dict[str, Any]
    ) -> Generator[Any, None, None]:
        """The reply's parts as they stream (not its thoughts), counting usage."""
        from google.genai import errors, types

        system = "\n\n".join(m.content for m in messages if m.role == "system")
        contents = [
            types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[types.Part(text=m.content)],
            )
            for m in messages
            if m.role != "system"
        ]
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            max_output_tokens=options.max_tokens,
            temperature=options.temperature,
            # The app runs the tools it offers itself; off, the SDK also stops logging
            # "AFC is enabled" per call.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            **extra,
        )
        should_stop = options.should_stop or (lambda: False)
        prompt_tokens = output_tokens = pieces = 0
        chunks: Any = None
        try:
            chunks = self._client().models.generate_content_stream(
                model=self.model_name, contents=contents, config=config
            )
            for chunk in chunks:
                meta = chunk.usage_metadata
                if meta is not None:
                    # Gemini reports running totals, not increments.
                    prompt_tokens = meta.prompt_token_count or prompt_tokens
                    output_tokens = (meta.candidates_token_count or 0) + (
                        meta.thoughts_token_count or 0
                    ) or output_tokens
                for candidate in chunk.candidates or []:
                    for part in (candidate.content.parts if candidate.content else None) or []:
                        if (part.text or part.function_call is not None) and not part.thought:
                            pieces += 1
                            yield part
                if should_stop():
                    raise GenerationCancelled("Stopped by the user.")
        except ProviderError:
            raise
        except errors.APIError as exc:
            response = getattr(exc, "response", None)
            headers = dict(getattr(response, "headers", None) or {})
            error = status_error(VENDOR, exc.code, headers, KEY_ENV, exc.message or "")
            if isinstance(error, RetryableError) and error.retry_after is None:
                error.retry_after = _retry_delay(exc.details)
            raise error from None
        except Exception as exc:
            raise transport_error(VENDOR, exc) or ProviderError(
                f"{VENDOR} failed ({type(exc).__name__})"
            ) from None
        finally:
            options.usage.prompt_tokens += prompt_tokens
            options.usage.completion_tokens += output_tokens or pieces
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


def _retry_delay(details: Any) -> float | None:
    """Google sends its retry hint in the error body (google.rpc.RetryInfo, "retryDelay": "7s")."""
    found = re.search(r"'retryDelay': '([\d.]+)s'|\"retryDelay\": \"([\d.]+)s\"", str(details))
    if not found:
        return None
    return float(found[1] or found[2])
