"""Gemini, GLM and OpenAI-compatible providers against recorded HTTP responses, through the
real SDKs (only the transport is replaced): streaming, structured output, usage, failures."""

from __future__ import annotations

import pytest

from agents.providers import gemini, glm, list_profiles, openai_compat
from agents.providers.base import (
    CallOptions,
    ChatMessage,
    InvalidStructuredOutput,
    ProviderError,
    RetryableError,
)
from agents.schemas import TurnSignal
from tests.agents.llm_replay import Replay

VENDORS = ["openai", "glm", "gemini"]
MESSAGES = [
    ChatMessage("system", "You plan code changes."),
    ChatMessage("user", "Add rate limiting to app/api.py."),
]


def provider_for(vendor: str, replay: Replay):
    client = replay.client()
    if vendor == "openai":
        return openai_compat.OpenAICompatProvider(
            "openai",
            model="gpt-4o-mini",
            base_url="https://api.openai.com/v1",
            api_key="sk-test-key",
            http_client=client,
        )
    if vendor == "glm":
        return glm.GLMProvider(
            "glm",
            model="glm-4.5-flash",
            base_url="https://open.bigmodel.cn/api/paas/v4/",
            api_key="glm-test-key",
            http_client=client,
        )
    return gemini.GeminiProvider(
        "gemini", model="gemini-2.5-flash", api_key="AIza-test-key", http_client=client
    )


def collect(provider, options: CallOptions) -> tuple[list[str], BaseException | None]:
    pieces: list[str] = []
    try:
        for piece in provider.stream(MESSAGES, options):
            pieces.append(piece)
    except ProviderError as exc:
        return pieces, exc
    return pieces, None


@pytest.mark.parametrize("vendor", VENDORS)
def test_it_streams_text_and_counts_the_reported_usage(vendor):
    replay = Replay(vendor).stream("stream_text.sse")
    options = CallOptions(max_tokens=64)
    pieces, error = collect(provider_for(vendor, replay), options)
    assert error is None
    assert "".join(pieces) == "Add a limiter in app/api.py:10-42 and tests."
    assert len(pieces) == 7
    assert (options.usage.prompt_tokens, options.usage.completion_tokens) == (42, 7)


def test_openai_asks_for_usage_in_the_stream_and_sends_the_key():
    replay = Replay("openai").stream("stream_text.sse")
    collect(provider_for("openai", replay), CallOptions(max_tokens=64))
    body = replay.body()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 64
    assert replay.requests[0].headers["authorization"] == "Bearer sk-test-key"


def test_gemini_sends_the_system_prompt_as_a_system_instruction():
    replay = Replay("gemini").stream("stream_text.sse")
    collect(provider_for("gemini", replay), CallOptions(max_tokens=64))
    request = replay.requests[0]
    assert ":streamGenerateContent" in request.url.path
    assert request.headers["x-goog-api-key"] == "AIza-test-key"
    body = replay.body()
    assert body["systemInstruction"]["parts"][0]["text"] == "You plan code changes."
    assert [c["role"] for c in body["contents"]] == ["user"]
    assert body["generationConfig"]["maxOutputTokens"] == 64


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_structured_reply_validates_into_the_schema(vendor):
    replay = Replay(vendor).stream("stream_json.sse")
    options = CallOptions()
    signal = provider_for(vendor, replay).structured(MESSAGES, TurnSignal, options)
    assert signal == TurnSignal(signal="HANDOVER", reason="The human must pick a store.")
    assert options.usage.completion_tokens == 18


def test_each_vendor_is_asked_for_json_its_native_way():
    for vendor in VENDORS:
        replay = Replay(vendor).stream("stream_json.sse")
        provider_for(vendor, replay).structured(MESSAGES, TurnSignal, CallOptions())
        body = replay.body()
        if vendor == "openai":
            assert body["response_format"]["type"] == "json_schema"
            assert body["response_format"]["json_schema"]["schema"]["required"] == [
                "signal",
                "reason",
            ]
        elif vendor == "glm":
            assert body["response_format"] == {"type": "json_object"}
            assert '"enum": ["CONTINUE", "HANDOVER", "STOP"]' in body["messages"][0]["content"]
        else:
            config = body["generationConfig"]
            assert config["responseMimeType"] == "application/json"
            assert config["responseJsonSchema"]["required"] == ["signal", "reason"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_malformed_json_gets_one_repair_request_showing_the_model_its_mistake(vendor):
    replay = Replay(vendor).stream("stream_bad_json.sse").stream("stream_json.sse")
    signal = provider_for(vendor, replay).structured(MESSAGES, TurnSignal, CallOptions())
    assert signal.signal == "HANDOVER"
    assert len(replay.requests) == 2
    assert "not valid" in str(replay.body(1))


@pytest.mark.parametrize("vendor", VENDORS)
def test_malformed_json_twice_is_reported_not_guessed(vendor):
    replay = Replay(vendor).stream("stream_bad_json.sse").stream("stream_bad_json.sse")
    with pytest.raises(InvalidStructuredOutput, match="did not match TurnSignal"):
        provider_for(vendor, replay).structured(MESSAGES, TurnSignal, CallOptions())


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_429_is_retryable_and_carries_retry_after(vendor):
    replay = Replay(vendor).error(429, "rate_limited.json", {"retry-after": "3"})
    pieces, error = collect(provider_for(vendor, replay), CallOptions())
    assert pieces == []
    assert isinstance(error, RetryableError)
    assert "rate limiting" in str(error) and "429" in str(error)
    assert error.retry_after == 3.0
    assert len(replay.requests) == 1  # the SDK's own retries are off: turns.py retries


def test_gemini_reads_the_retry_delay_from_the_error_body_without_a_header():
    replay = Replay("gemini").error(429, "rate_limited.json")
    _pieces, error = collect(provider_for("gemini", replay), CallOptions())
    assert isinstance(error, RetryableError)
    assert error.retry_after == 7.0


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_500_is_retryable(vendor):
    replay = Replay(vendor).error(500, "server_error.json")
    _pieces, error = collect(provider_for(vendor, replay), CallOptions())
    assert isinstance(error, RetryableError)
    assert "server error (HTTP 500)" in str(error)
    assert error.retry_after is None


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_timeout_mid_stream_keeps_the_pieces_and_raises_retryable(vendor):
    replay = Replay(vendor).cut("stream_text.sse", after=4)
    options = CallOptions()
    pieces, error = collect(provider_for(vendor, replay), options)
    assert isinstance(error, RetryableError)
    assert "timeout" in str(error)
    assert pieces and "".join(pieces).startswith("Add a")
    assert options.usage.completion_tokens == len(pieces)  # no usage chunk: pieces counted


@pytest.mark.parametrize("vendor", VENDORS)
def test_should_stop_cancels_between_pieces(vendor):
    from agents.providers.base import GenerationCancelled

    replay = Replay(vendor).stream("stream_text.sse")
    seen: list[str] = []
    options = CallOptions(should_stop=lambda: len(seen) >= 2)
    with pytest.raises(GenerationCancelled):
        for piece in provider_for(vendor, replay).stream(MESSAGES, options):
            if piece:
                seen.append(piece)
    assert len(seen) == 2


@pytest.mark.parametrize(
    ("name", "env", "reason"),
    [
        ("gemini", "GEMINI_API_KEY", "Set GEMINI_API_KEY"),
        ("glm", "GLM_API_KEY", "Set GLM_API_KEY"),
        ("openai", "OPENAI_API_KEY", "Set OPENAI_API_KEY"),
    ],
)
def test_a_remote_profile_without_its_key_is_listed_as_unavailable(settings, name, env, reason):
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GLM_API_KEY", "ZAI_API_KEY"):
        setattr(settings, var, "")
    settings.ZHIPUAI_API_KEY = ""
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    info = {p.name: p for p in list_profiles()}[name]
    assert not info.available
    assert reason in info.reason
    assert info.key_env == env

    setattr(settings, env, "a-key-for-this-test")
    info = {p.name: p for p in list_profiles()}[name]
    assert info.available, info.reason


def test_an_openai_compatible_local_server_needs_no_key(settings):
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = "http://localhost:11434/v1"
    settings.OPENAI_MODEL = "qwen2.5-coder:7b"
    provider = openai_compat.build("openai")
    assert provider.model_name == "qwen2.5-coder:7b"
    info = {p.name: p for p in list_profiles()}["openai"]
    assert info.available and info.model == "qwen2.5-coder:7b"


def test_retry_after_is_read_as_seconds_or_as_an_http_date(monkeypatch):
    import email.utils
    from types import SimpleNamespace

    from agents.providers import remote

    now = 1_750_000_000.0
    monkeypatch.setattr(remote, "time", SimpleNamespace(time=lambda: now))
    assert remote.parse_retry_after("120") == 120.0
    assert remote.parse_retry_after(None) is None
    assert remote.parse_retry_after("soon") is None
    assert remote.parse_retry_after(email.utils.formatdate(now + 30, usegmt=True)) == 30.0
    assert remote.parse_retry_after(email.utils.formatdate(now - 30, usegmt=True)) == 0.0


def test_error_text_is_scrubbed_of_configured_keys(settings):
    from agents.providers.remote import scrub, status_error

    settings.GLM_API_KEY = "glm.secret-value-123"
    assert scrub("bad key glm.secret-value-123!") == "bad key ***!"
    error = status_error("GLM", 400, {}, "GLM_API_KEY", "api_key=glm.secret-value-123 invalid")
    assert "secret" not in str(error)
    assert str(error) == "GLM refused the request (HTTP 400): api_key=*** invalid"
