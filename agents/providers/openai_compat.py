"""Any OpenAI-compatible chat endpoint through the `openai` SDK and a base_url: OpenAI itself,
Ollama, vLLM, LM Studio, OpenRouter, GLM's OpenAI-compatible endpoint.

    OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5-coder:7b   # Ollama
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings

from .base import CallOptions, ChatMessage, LLMProvider, ProviderError, T
from .remote import (
    ChatCompletionsProvider,
    first_setting,
    status_error,
    timeout_seconds,
    transport_error,
)

KEY_ENV = "OPENAI_API_KEY"  # a setting, read from the env var of that name
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # when OPENAI_BASE_URL is not set
VENDOR = "The OpenAI-compatible server"


def configured_model() -> str:
    return str(settings.OPENAI_MODEL)


def check() -> str:
    import importlib.util

    if importlib.util.find_spec("openai") is None:
        return "The openai package is not installed. Run: pip install openai"
    if not first_setting(KEY_ENV, "OPENAI_BASE_URL"):
        return (
            f"Set {KEY_ENV} (or OPENAI_BASE_URL for a local server such as Ollama, vLLM or "
            "LM Studio)."
        )
    return ""


def http_client() -> Any:
    """The HTTP client handed to the SDK; None lets it build its own. Tests replace this
    to replay recorded responses through the real SDK."""
    return None


def build(profile: str) -> LLMProvider:
    return OpenAICompatProvider(
        profile,
        model=configured_model(),
        base_url=settings.OPENAI_BASE_URL or DEFAULT_BASE_URL,
        api_key=first_setting(KEY_ENV),
        http_client=http_client(),
    )


class OpenAICompatProvider(ChatCompletionsProvider):
    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        response_format = {
            "type": "json_schema",
            "json_schema": {
                "name": schema.__name__,
                "schema": schema.model_json_schema(),
                "strict": False,
            },
        }
        return self._generate(messages, options, {"response_format": response_format})

    def _client(self) -> Any:
        import openai

        return openai.OpenAI(
            # Local servers take no key, but the SDK insists on one.
            api_key=self._api_key or "unused",
            base_url=self.base_url,
            timeout=openai.Timeout(timeout_seconds(), connect=10.0),
            max_retries=0,  # agents/call_policy.py retries, and only before the first token
            http_client=self._http_client,
        )

    def _create(
        self, messages: list[ChatMessage], options: CallOptions, extra: dict[str, Any]
    ) -> Any:
        return self._client().chat.completions.create(
            model=self.model_name,
            messages=[{"role": m.role, "content": m.content} for m in messages],  # type: ignore[misc]
            max_tokens=options.max_tokens,
            temperature=options.temperature,
            stream=True,
            stream_options={"include_usage": True},
            **extra,
        )

    def _failure(self, exc: Exception) -> ProviderError:
        import openai

        if isinstance(exc, openai.APIStatusError):
            return status_error(
                VENDOR, exc.status_code, exc.response.headers, KEY_ENV, _detail(exc.body)
            )
        return transport_error(VENDOR, exc) or ProviderError(
            f"{VENDOR} failed ({type(exc).__name__})"
        )


def _detail(body: object) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message", ""))
        return str(error)
    return ""
