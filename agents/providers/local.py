"""The embedded model: a GGUF file from a PyPI package, served in process by llama.cpp's own
server (xllamacpp, a prebuilt wheel).

One `Server` per model per process, with PLANAGENTS_LLM_SLOTS slots that decode together
(continuous batching), so two sessions stream at the same time. Each slot keeps the KV cache
of its last prompt and the server sends a request to the slot whose cache shares the longest
prefix with it, spilling evicted prompts to host RAM (PLANAGENTS_LLM_CACHE_MB); an agent's
follow-up turn therefore re-reads only what is new (docs/decisions.md, "Slots").

The server's streaming call blocks its caller, so each generation runs it on a short-lived
thread that hands chunks over a queue: the consumer can time out or stop at any moment, and
the chunk callback then answers True, which makes the server drop the task at its next chunk
(prompt-progress chunks included, so a stop also lands while a long prompt is being read).
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from .base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    LLMProvider,
    ProviderError,
    ProviderUnavailable,
    T,
    ToolCall,
    ToolReply,
    ToolSpec,
)
from .weights import ModelSpec, ensure_weights

log = logging.getLogger(__name__)

# How often a waiting call checks whether its caller gave up or the server went quiet.
_POLL_SECONDS = 0.1
# Tokens per prompt batch: the server reports progress (and so can be stopped) once per batch.
_BATCH = 256
_INSTALL_HINT = "Run: scripts/setup.sh (it installs xllamacpp from pyproject.toml)"


class ModelLoadError(ProviderUnavailable):
    """llama.cpp refused to load verified weights (memory, a damaged install)."""


class LocalModelTimeout(ProviderError):
    """The embedded server sent nothing (no prompt progress, no token) for too long."""


@dataclass
class LoadedModel:
    """A running server for one model, and how to read its state over its loopback port."""

    server: Any
    spec: ModelSpec
    path: Path
    slots: int
    threads: int
    load_seconds: float
    # The server also listens on 127.0.0.1 (an OpenAI-style HTTP API): a random key per
    # process keeps other local users off it. In-process calls do not need it.
    api_key: str

    def slot_states(self) -> list[dict[str, Any]]:
        """The server's own view of its slots (GET /slots): processing or not, cached tokens."""
        import json

        request = urllib.request.Request(
            f"{self.server.listening_address}/slots",
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
            states: list[dict[str, Any]] = json.loads(response.read())
        return states

    def metrics(self) -> dict[str, float]:
        """The server's counters (its Prometheus text, read in process), e.g.
        `llamacpp:n_decode_total`, `llamacpp:prompt_tokens_cached_total`."""
        values = {}
        for line in str(self.server.handle_metrics()).splitlines():
            name, _, value = line.partition(" ")
            if name and not name.startswith("#") and value:
                values[name] = float(value)
        return values


_models: dict[str, LoadedModel] = {}
_load_lock = threading.Lock()


def is_loaded(profile: str) -> bool:
    """Whether this process already runs the model of local profile `profile` (so its next
    call starts reading the prompt at once, rather than loading the weights first). Only
    looks: never loads, unpacks or hashes anything."""
    from . import PROFILES  # the profile table imports this module only when a call needs it

    row = next((p for p in PROFILES if p.name == profile), None)
    if row is not None and row.weights is not None and settings.PLANAGENTS_LLM_SERVER:
        return True  # the machine's model server holds it: nothing loads in this process
    return row is not None and row.model in _models


def load_model(spec: ModelSpec) -> LoadedModel:
    """The process-wide server for `spec`, unpacking, verifying and loading it on first use."""
    loaded = _models.get(spec.name)
    if loaded is not None:
        return loaded
    with _load_lock:
        loaded = _models.get(spec.name)
        if loaded is not None:
            return loaded
        try:
            import xllamacpp
        except ImportError as exc:
            raise ProviderUnavailable(f"xllamacpp is not installed. {_INSTALL_HINT}") from exc
        path = ensure_weights(spec)
        api_key = secrets.token_urlsafe(24)
        params = server_params(xllamacpp, spec, path, api_key=api_key)
        slots, threads = params.n_parallel, params.cpuparams.n_threads
        started = time.monotonic()
        try:
            server = start_server(xllamacpp, params)
        except RuntimeError as exc:
            raise ModelLoadError(
                f"llama.cpp could not load {spec.name} from {path} ({exc}). The file passed its "
                "sha256 check, so memory is the usual cause: free some, or lower "
                f"PLANAGENTS_LLM_CTX ({settings.PLANAGENTS_LLM_CTX}) or PLANAGENTS_LLM_SLOTS "
                f"({slots}). If it persists, reinstall: pip install --force-reinstall xllamacpp"
            ) from exc
        loaded = LoadedModel(
            server, spec, path, slots, threads, time.monotonic() - started, api_key
        )
        log.info(
            "loaded %s in %.1fs (%d slots, %d threads)",
            spec.name,
            loaded.load_seconds,
            slots,
            threads,
        )
        _models[spec.name] = loaded
        return loaded


def server_params(
    xllamacpp: Any, spec: ModelSpec, path: Path, *, api_key: str, port: int = 0
) -> Any:
    """llama.cpp's server settings for `spec`, one place for the in-process server and the
    shared one (`manage.py llm_server`): slots, context, batch, threads, prompt cache, the key
    that keeps other local users off its port (0: any free port), the model's name."""
    slots = settings.PLANAGENTS_LLM_SLOTS
    threads = settings.PLANAGENTS_LLM_THREADS
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = {spec.name}  # what /v1/models answers, checked by the clients
    params.n_parallel = slots
    # llama.cpp splits n_ctx evenly between slots; the setting is what one call may use.
    params.n_ctx = settings.PLANAGENTS_LLM_CTX * slots
    params.n_batch = _BATCH
    params.n_ubatch = _BATCH
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.cache_ram_mib = settings.PLANAGENTS_LLM_CACHE_MB
    params.verbosity = 3 if log.isEnabledFor(logging.DEBUG) else -1
    params.ui = False
    params.endpoint_metrics = True  # counters for tests and benches
    params.api_keys = [api_key]
    params.hostnames = ["127.0.0.1"]
    params.port = port
    return params


def start_server(xllamacpp: Any, params: Any) -> Any:
    """A llama.cpp server for `params`, its threads below the web server's priority."""
    from planagents.nice import in_niced_thread

    return in_niced_thread(
        lambda: xllamacpp.Server(params), settings.PLANAGENTS_LLM_NICE, "llama-server-start"
    )


class LocalLlamaProvider(LLMProvider):
    prefills = True  # llama.cpp's server continues a trailing assistant message
    queued = True  # this machine's cores: one line for every session (agents.model_queue)

    def __init__(self, profile: str, model_spec: ModelSpec) -> None:
        self.profile = profile
        self.model_name = model_spec.name
        self.spec = model_spec
        # llama.cpp's chat template turns tool declarations into the model's own tool-call
        # format and its replies back into calls; off by default: the Qwen2.5-Coder models
        # wrote their calls as text, so the grammar-held JSON plan stays
        # (bench/RESULTS-native-tools.md).
        self.native_tools = settings.PLANAGENTS_LOCAL_NATIVE_TOOLS

    def stream(self, messages: list[ChatMessage], options: CallOptions) -> Iterator[str]:
        # Small models loop on a phrase without a penalty.
        return self._generate(messages, options, {"repeat_penalty": 1.1})

    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        # The server turns the schema into a grammar (LLGuidance), so every sampled token keeps
        # the text a valid prefix of a schema-shaped object. A repeat penalty on quotes and
        # braces only hurts there.
        extra = {"json_schema": schema.model_json_schema(), "repeat_penalty": 1.0}
        return self._generate(messages, options, extra)

    def stream_tool_calls(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        options: CallOptions,
        *,
        choice: str = "auto",
    ) -> Iterator[str]:
        """The reply to a call offering `tools`, read by llama.cpp's chat template: the calls
        arrive as OpenAI-shaped `tool_calls` deltas, each keyed by its index, the name first
        and the arguments in fragments. `choice` "required" makes llama.cpp hold the reply to
        the template's tool-call format with a grammar."""
        from .remote import openai_tools

        text: list[str] = []
        calls: dict[int, tuple[str, str]] = {}

        def collect(pieces: list[dict[str, Any]]) -> None:
            for piece in pieces:
                index = int(piece.get("index") or 0)
                name, arguments = calls.get(index, ("", ""))
                function = piece.get("function") or {}
                calls[index] = (
                    function.get("name") or name,
                    arguments + (function.get("arguments") or ""),
                )

        extra = {"tools": openai_tools(tools), "tool_choice": choice, "repeat_penalty": 1.0}
        text.extend(self._generate(messages, options, extra, collect))
        yield ToolReply("".join(text), tuple(ToolCall(n, a) for n, a in calls.values())).to_json()

    def _generate(
        self,
        messages: list[ChatMessage],
        options: CallOptions,
        extra: dict[str, Any],
        tool_calls: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> Iterator[str]:
        should_stop = options.should_stop or (lambda: False)
        if should_stop():
            raise GenerationCancelled("Stopped before the model started.")
        body = {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_progress": True,
            "cache_prompt": True,
            **extra,
        }
        call = self._open(body)
        counted = _Counted()
        try:
            for chunk in call.chunks(
                should_stop, settings.PLANAGENTS_LLM_LOCAL_TIMEOUT, self.model_name
            ):
                if "error" in chunk:
                    raise self._refused(chunk["error"])
                counted.update(chunk, options)
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if tool_calls is not None and delta.get("tool_calls"):
                        tool_calls(delta["tool_calls"])
                    piece = delta.get("content")
                    if piece:
                        counted.piece(options)
                        yield piece
                        if should_stop():
                            raise GenerationCancelled("Stopped by the user.")
        finally:
            # Whatever ended this loop (done, stop, timeout, the consumer closing us), the
            # server drops the task at its next chunk instead of writing on for nobody.
            call.cancel()

    def _open(self, body: dict[str, Any]) -> _Call:
        """Start one streaming request on this process's own server for the model."""
        return _InProcessCall(load_model(self.spec).server, body)

    def _refused(self, error: dict[str, Any]) -> ProviderError:
        if error.get("type") == "exceed_context_size_error":
            return ProviderError(
                f"The prompt is {error.get('n_prompt_tokens')} tokens but {self.model_name} "
                f"reads at most {error.get('n_ctx')} (PLANAGENTS_LLM_CTX); retrieve fewer "
                "chunks or shorten the task."
            )
        return ProviderError(f"{self.model_name} refused the request: {error.get('message')}")


class _Counted:
    """Usage for one call. Progress chunks say how much of the prompt is read so far, cached
    tokens included (so a stopped call counts what it read, and agents.budget's call clock
    sees a long prompt being read as progress, not as a stall); the final usage chunk corrects
    the token counts (one chunk may hold two tokens when a character spans them)."""

    def __init__(self) -> None:
        self.prompt = 0
        self.completion = 0

    def piece(self, options: CallOptions) -> None:
        self.completion += 1
        options.usage.completion_tokens += 1

    def update(self, chunk: dict[str, Any], options: CallOptions) -> None:
        progress = chunk.get("prompt_progress")
        if progress:
            read = progress.get("processed", progress.get("total", 0))
            self._prompt(max(self.prompt, int(read)), options)
        usage = chunk.get("usage")
        if usage:
            self._prompt(int(usage.get("prompt_tokens", 0)), options)
            completion = int(usage.get("completion_tokens", 0))
            options.usage.completion_tokens += completion - self.completion
            self.completion = completion
            details = usage.get("prompt_tokens_details") or {}
            options.usage.cached_tokens += int(details.get("cached_tokens", 0))

    def _prompt(self, total: int, options: CallOptions) -> None:
        options.usage.prompt_tokens += total - self.prompt
        self.prompt = total


_DONE = object()


class _Call:
    """One streaming request on its own thread; its chunks arrive on a queue."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.stop = threading.Event()
        # Daemon: a call the server is still finishing must not keep the process alive.
        threading.Thread(target=self._guarded, name="llama-call", daemon=True).start()

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as exc:  # handed to the consumer, which raises it as a ProviderError
            self.queue.put(exc)
        finally:
            self.queue.put(_DONE)

    def _run(self) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        """The caller is done with this request: the server drops it."""
        self.stop.set()

    def chunks(
        self, should_stop: Callable[[], bool], timeout: float, model: str
    ) -> Iterator[dict[str, Any]]:
        last = time.monotonic()
        while True:
            try:
                item = self.queue.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                item = None
            # Asked whatever came: prompt-progress chunks can follow each other faster than
            # the poll, and a stop must land while the prompt is read too.
            if should_stop():
                raise GenerationCancelled("Stopped by the user.") from None
            if item is None:
                if time.monotonic() - last > timeout:
                    raise LocalModelTimeout(
                        f"{model} sent nothing for {timeout:.0f} s (PLANAGENTS_LLM_LOCAL_TIMEOUT): "
                        "the machine is too busy or every slot is taken by a long reply. Try "
                        "again, raise PLANAGENTS_LLM_LOCAL_TIMEOUT or PLANAGENTS_LLM_SLOTS, or use a "
                        "remote profile."
                    ) from None
                continue
            if item is _DONE:
                return
            if isinstance(item, ProviderError):
                raise item
            if isinstance(item, Exception):
                raise ProviderError(f"The local model failed while writing: {item}") from item
            last = time.monotonic()
            yield item


class _InProcessCall(_Call):
    """A request to this process's server: its chunk callback answers True once the caller is
    done, which makes the server drop the task at its next chunk."""

    def __init__(self, server: Any, body: dict[str, Any]) -> None:
        self.server, self.body = server, body
        super().__init__()

    def _run(self) -> None:
        self.server.handle_chat_completions(self.body, self._on_chunk)

    def _on_chunk(self, chunk: dict[str, Any]) -> bool:
        self.queue.put(chunk)
        return self.stop.is_set()  # True: the server stops this task
