"""Shared pieces of the retrieval benches: Django setup, an on-disk vector cache, timing."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SWE_DEV = Path(os.environ.get("SWE_DEV_DIR", "/work/shared/bench/swe-dev"))


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import django

    django.setup()
    from planagents.nice import people_busy_when

    people_busy_when(None)  # no database here to ask, and a bench measures alone


class VectorCache:
    """Text key → vector, kept in .npz shards under `folder` so reruns skip the encoder.

    Keys are `rag.pipeline.text_key` of the exact text embedded, so a cached vector is only
    reused for the very same text under the same model and window (the folder name says which).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.vectors: dict[str, np.ndarray] = {}
        self._unsaved: dict[str, np.ndarray] = {}
        for shard in sorted(folder.glob("shard-*.npz")):
            data = np.load(shard)
            for key, vector in zip(data["keys"], data["vectors"], strict=True):
                self.vectors[str(key)] = vector
        self._loaded = set(self.vectors)

    def flush(self) -> None:
        new = {k: v for k, v in self.vectors.items() if k not in self._loaded}
        if not new:
            return
        name = self.folder / f"shard-{time.time_ns()}.npz"
        tmp = name.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(list(new)), vectors=np.vstack(list(new.values())))
        tmp.rename(name)
        self._loaded |= set(new)


def cache_folder(base: Path) -> Path:
    from rag import embeddings

    name = f"{Path(embeddings.model_name()).name}-{embeddings.MAX_TOKENS}"
    return base / name


class Stopwatch:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.start
