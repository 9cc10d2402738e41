"""The embedded provider while the model reads a long prompt: each batch read counts as
progress in the call's usage (so the call clock sees a slow read, not a stall), and a stop lands
at once, mid-read. The llama.cpp server is replaced at its boundary by one that reads a batch
every few hundredths of a second and reports it, as `return_progress` makes the real one do."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agents.providers import local
from agents.providers.base import CallOptions, ChatMessage, GenerationCancelled
from agents.providers.local import LocalLlamaProvider
from agents.providers.weights import QWEN_CODER_15B


class SlowReader:
    """handle_chat_completions as llama.cpp's: progress chunks per batch, then the reply;
    the callback returning True drops the task."""

    def __init__(self, batches: int, seconds: float) -> None:
        self.batches, self.seconds = batches, seconds
        self.dropped = threading.Event()

    def handle_chat_completions(self, body: dict[str, Any], on_chunk: Any) -> None:
        total = 256 * self.batches
        for done in range(1, self.batches + 1):
            time.sleep(self.seconds)
            progress = {"total": total, "cache": 0, "processed": 256 * done, "time_ms": 1}
            if on_chunk({"choices": [], "prompt_progress": progress}):
                self.dropped.set()
                return
        for word in ("Count", " failures."):
            if on_chunk({"choices": [{"delta": {"content": word}}]}):
                self.dropped.set()
                return
        on_chunk({"choices": [], "usage": {"prompt_tokens": total, "completion_tokens": 2}})


@pytest.fixture
def server(monkeypatch):
    def install(reader: SlowReader) -> LocalLlamaProvider:
        loaded = type("Loaded", (), {"server": reader})()
        monkeypatch.setattr(local, "load_model", lambda spec: loaded)
        return LocalLlamaProvider("local-1.5b", QWEN_CODER_15B)

    return install


def test_each_batch_read_counts_as_progress_in_the_calls_usage(server):
    provider = server(SlowReader(batches=4, seconds=0.05))
    seen: list[int] = []
    options = CallOptions()
    options.should_stop = lambda: seen.append(options.usage.prompt_tokens) or False
    text = "".join(provider.stream([ChatMessage("user", "Add rate limiting.")], options))

    assert text == "Count failures."
    read_while_reading = sorted(set(seen) - {0})
    assert read_while_reading[:3] == [256, 512, 768]  # it grew batch by batch
    assert (options.usage.prompt_tokens, options.usage.completion_tokens) == (1024, 2)


def test_a_stop_lands_mid_read_and_the_server_drops_the_task(server):
    reader = SlowReader(batches=200, seconds=0.05)  # 10 s of reading
    provider = server(reader)
    stop_at = time.monotonic() + 0.3
    options = CallOptions(should_stop=lambda: time.monotonic() >= stop_at)
    started = time.monotonic()
    with pytest.raises(GenerationCancelled):
        list(provider.stream([ChatMessage("user", "Add rate limiting.")], options))
    assert time.monotonic() - started < 1.0  # within a second of the stop, not the 10 s read
    assert reader.dropped.wait(2)
    assert 0 < options.usage.prompt_tokens < 200 * 256  # what it read, not the whole prompt
