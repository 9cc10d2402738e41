"""The embedded model: a GGUF file from a PyPI package, run in-process by llama.cpp.

One `Llama` per model per process (loading costs seconds and hundreds of MB), and every call
holds MODEL_LOCK because a llama.cpp context cannot serve two generations at once.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from django.conf import settings

from .base import (
    MODEL_LOCK,
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    LLMProvider,
    ProviderError,
    ProviderUnavailable,
    T,
)
from .weights import ModelSpec, ensure_weights

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

# How often a call waiting for the model checks whether its caller gave up.
_LOCK_POLL_SECONDS = 0.1


class _Loaded:
    """A loaded model and what is needed to count prompt tokens the way llama.cpp will."""

    def __init__(self, llama: Llama, load_seconds: float) -> None:
        self.llama = llama
        self.load_seconds = load_seconds
        self.formatter: Any = None
        template = llama.metadata.get("tokenizer.chat_template")
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            model = llama._model
            eos, bos = llama.token_eos(), llama.token_bos()
            self.formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=model.token_get_text(eos) if eos != -1 else "",
                bos_token=model.token_get_text(bos) if bos != -1 else "",
            )

    def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        if self.formatter is not None:
            try:
                prompt = self.formatter(messages=messages).prompt
                return len(self.llama.tokenize(prompt.encode(), add_bos=False, special=True))
            except Exception:  # a template quirk must not fail the call; fall through
                log.debug("chat template failed while counting tokens", exc_info=True)
        text = "\n".join(m["content"] for m in messages)
        return len(self.llama.tokenize(text.encode(), add_bos=True, special=False))


_models: dict[str, _Loaded] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_models() -> None:
    # Free the models while llama_cpp's module globals still exist; left to Llama.__del__
    # at interpreter teardown it prints a TypeError traceback on exit.
    for loaded in _models.values():
        with contextlib.suppress(Exception):
            loaded.llama.close()
    _models.clear()


def load_model(spec: ModelSpec) -> _Loaded:
    """The process-wide instance of `spec`, loading (and unpacking) it on first use."""
    loaded = _models.get(spec.name)
    if loaded is not None:
        return loaded
    with _load_lock:
        loaded = _models.get(spec.name)
        if loaded is not None:
            return loaded
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ProviderUnavailable(
                "llama-cpp-python is not installed. Run: scripts/install_llama.sh"
            ) from exc
        path = ensure_weights(spec)
        started = time.monotonic()
        try:
            llama = Llama(
                model_path=str(path),
                n_ctx=settings.PLANAGENTS_LLM_CTX,
                n_batch=512,
                n_threads=settings.PLANAGENTS_LLM_THREADS,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderUnavailable(f"llama.cpp could not load {spec.name}: {exc}") from exc
        loaded = _Loaded(llama, time.monotonic() - started)
        log.info("loaded %s in %.1fs", spec.name, loaded.load_seconds)
        _models[spec.name] = loaded
        return loaded


class LocalLlamaProvider(LLMProvider):
    def __init__(self, profile: str, model_spec: ModelSpec) -> None:
        self.profile = profile
        self.model_name = model_spec.name
        self.spec = model_spec

    def stream(self, messages: list[ChatMessage], options: CallOptions) -> Iterator[str]:
        return self._generate(messages, options, response_format=None)

    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        # llama-cpp-python turns the JSON schema into a GBNF grammar, so every sampled token
        # keeps the text a valid prefix of a schema-shaped object.
        response_format = {"type": "json_object", "schema": schema.model_json_schema()}
        return self._generate(messages, options, response_format=response_format)

    def _generate(
        self,
        messages: list[ChatMessage],
        options: CallOptions,
        response_format: dict[str, Any] | None,
    ) -> Iterator[str]:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        should_stop = options.should_stop or (lambda: False)
        _acquire(should_stop)
        try:
            # Loading under the lock too: llama.cpp is not known to be safe loading one model
            # while another decodes, and the first load is a one-off of about a second.
            loaded = load_model(self.spec)
            n_ctx = loaded.llama.n_ctx()
            prompt_tokens = loaded.count_prompt_tokens(chat)
            options.usage.prompt_tokens += prompt_tokens
            if prompt_tokens >= n_ctx:
                raise ProviderError(
                    f"The prompt is {prompt_tokens} tokens but {self.model_name} reads at most "
                    f"{n_ctx} (PLANAGENTS_LLM_CTX); retrieve fewer chunks or shorten the task."
                )
            try:
                chunks = loaded.llama.create_chat_completion(
                    messages=chat,  # type: ignore[arg-type]
                    max_tokens=options.max_tokens,
                    temperature=options.temperature,
                    # Small models loop on a phrase without a penalty; in JSON mode the grammar
                    # already bounds the text and a penalty on quotes and braces only hurts.
                    repeat_penalty=1.0 if response_format else 1.1,
                    stream=True,
                    response_format=response_format,  # type: ignore[arg-type]
                )
            except (ValueError, RuntimeError) as exc:
                raise ProviderError(f"{self.model_name} could not start: {exc}") from exc
            yield from _deltas(chunks, options, should_stop)  # type: ignore[arg-type]
        finally:
            MODEL_LOCK.release()


def _acquire(should_stop: Callable[[], bool]) -> None:
    # Waiting for another agent's turn can take a minute: keep listening for a stop meanwhile.
    while not MODEL_LOCK.acquire(timeout=_LOCK_POLL_SECONDS):
        if should_stop():
            raise GenerationCancelled("Stopped while waiting for the model.")
    if should_stop():
        MODEL_LOCK.release()
        raise GenerationCancelled("Stopped before the model started.")


def _deltas(
    chunks: Iterator[dict[str, Any]], options: CallOptions, should_stop: Callable[[], bool]
) -> Iterator[str]:
    try:
        for chunk in chunks:
            choice = chunk["choices"][0]
            piece = choice.get("delta", {}).get("content")
            if piece:
                # Each content chunk of a llama.cpp stream is one sampled token.
                options.usage.completion_tokens += 1
                yield piece
            if should_stop():
                raise GenerationCancelled("Stopped by the user.")
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(f"The local model failed while writing: {exc}") from exc
    finally:
        # Closing runs llama.cpp's cleanup now, while this call still holds MODEL_LOCK.
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
