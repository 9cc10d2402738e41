"""GLM (Zhipu AI / Z.ai) through the official `zai-sdk`.

GLM_BASE_URL picks the platform: https://open.bigmodel.cn/api/paas/v4/ (default, mainland) or
https://api.z.ai/api/paas/v4/ (international).
"""

from __future__ import annotations

import json
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

KEY_ENVS = ("GLM_API_KEY", "ZAI_API_KEY", "ZHIPUAI_API_KEY")  # settings, read from the env
KEY_ENV = KEY_ENVS[0]
VENDOR = "GLM"


def configured_model() -> str:
    return str(settings.GLM_MODEL)


def check() -> str:
    import importlib.util

    if importlib.util.find_spec("zai") is None:
        return "The zai-sdk package is not installed. Run: pip install zai-sdk"
    if not first_setting(*KEY_ENVS):
        return f"Set {KEY_ENV} (or ZAI_API_KEY) to your GLM API key."
    return ""


def http_client() -> Any:
    """The HTTP client handed to the SDK; None lets it build its own (tests replace this)."""
    return None


def build(profile: str) -> LLMProvider:
    return GLMProvider(
        profile,
        model=configured_model(),
        base_url=settings.GLM_BASE_URL,
        api_key=first_setting(*KEY_ENVS),
        http_client=http_client(),
    )


class GLMProvider(ChatCompletionsProvider):
    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        # GLM's JSON mode guarantees an object, not a schema: the schema goes in the prompt
        # and the caller validates (with one repair retry).
        instruction = ChatMessage(
            "system",
            "Reply with one JSON object that validates against this JSON schema, nothing else:\n"
            + json.dumps(schema.model_json_schema()),
        )
        return self._generate(
            [instruction, *messages], options, {"response_format": {"type": "json_object"}}
        )

    def _client(self) -> Any:
        from zai import ZhipuAiClient

        return ZhipuAiClient(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=timeout_seconds(),
            max_retries=0,  # agents/call_policy.py retries, and only before the first token
            http_client=self._http_client,
        )

    def _create(
        self, messages: list[ChatMessage], options: CallOptions, extra: dict[str, Any]
    ) -> Any:
        return self._client().chat.completions.create(
            model=self.model_name,
            messages=[{"role": m.role, "content": m.content} for m in messages],
            max_tokens=options.max_tokens,
            temperature=options.temperature,
            stream=True,
            # Thinking would spend the token budget before the reply starts.
            thinking={"type": "disabled"},
            **extra,
        )

    def _failure(self, exc: Exception) -> ProviderError:
        from zai.core._errors import APIStatusError

        if isinstance(exc, APIStatusError):
            return status_error(
                VENDOR, exc.status_code, exc.response.headers, KEY_ENV, _detail(exc.response)
            )
        return transport_error(VENDOR, exc) or ProviderError(
            f"{VENDOR} failed ({type(exc).__name__})"
        )


def _detail(response: Any) -> str:
    try:
        error = response.json().get("error", {})
    except Exception:
        return ""
    return str(error.get("message", "")) if isinstance(error, dict) else ""
