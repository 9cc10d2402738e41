"""Per-codebase search indexes on disk: FAISS for vectors, bm25s for identifiers.

Layout under PLANAGENTS_INDEX_DIR/<codebase_id>/:
  dense.faiss     IndexFlatIP over unit vectors; row n is the Chunk with ordinal n
  lexical.json    points at the current bm25s folder (swapped atomically, like dense.faiss)
  lexical-<hex>/  the bm25s index itself

Files are written under a temporary name and moved into place with os.replace, so a reader
sees the old index or the new one, never half of one. Loaded indexes are cached per process
and reloaded when the file's mtime changes (another process rebuilt it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import bm25s
import faiss
import numpy as np
from django.conf import settings

DENSE_FILE = "dense.faiss"
LEXICAL_POINTER = "lexical.json"

_lock = threading.Lock()
_cache: dict[tuple[int, str], tuple[int, Any]] = {}


def index_dir(codebase_id: int) -> Path:
    return Path(settings.PLANAGENTS_INDEX_DIR) / str(codebase_id)


def write_dense(codebase_id: int, vectors: np.ndarray) -> None:
    folder = index_dir(codebase_id)
    folder.mkdir(parents=True, exist_ok=True)
    index = faiss.IndexFlatIP(vectors.shape[1])
    if len(vectors):
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    fd, tmp = tempfile.mkstemp(prefix=".dense-", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        faiss.write_index(index, tmp)
        os.replace(tmp, folder / DENSE_FILE)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_lexical(codebase_id: int, documents: list[list[str]]) -> None:
    folder = index_dir(codebase_id)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"lexical-{secrets.token_hex(6)}"
    retriever = bm25s.BM25()
    retriever.index(documents, show_progress=False)
    retriever.save(str(folder / name), show_progress=False)
    _atomic_write_text(folder / LEXICAL_POINTER, json.dumps({"folder": name}))
    for old in folder.glob("lexical-*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)


def delete(codebase_id: int) -> None:
    shutil.rmtree(index_dir(codebase_id), ignore_errors=True)
    with _lock:
        for key in [key for key in _cache if key[0] == codebase_id]:
            del _cache[key]


def search_dense(codebase_id: int, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(ordinal, cosine similarity) pairs, best first."""
    index = _load(codebase_id, DENSE_FILE, lambda path: faiss.read_index(str(path)))
    if index is None or index.ntotal == 0:
        return []
    scores, ids = index.search(query.reshape(1, -1).astype(np.float32), min(k, index.ntotal))
    return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


def search_lexical(codebase_id: int, tokens: list[str], k: int) -> list[tuple[int, float]]:
    """(ordinal, BM25 score) pairs with a positive score, best first."""
    retriever = _load(codebase_id, LEXICAL_POINTER, _read_lexical)
    if retriever is None:
        return []
    known = [t for t in tokens if t in retriever.vocab_dict]
    if not known:
        return []
    scores = retriever.get_scores(known)
    top = np.argsort(-scores)[:k]
    return [(int(i), float(scores[i])) for i in top if scores[i] > 0]


def _read_lexical(pointer: Path) -> bm25s.BM25:
    folder = pointer.parent / json.loads(pointer.read_text())["folder"]
    return bm25s.BM25.load(str(folder), show_progress=False)


def _load(codebase_id: int, filename: str, reader: Any) -> Any:
    path = index_dir(codebase_id) / filename
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    key = (codebase_id, filename)
    with _lock:
        cached = _cache.get(key)
        if cached and cached[0] == mtime:
            return cached[1]
        loaded = reader(path)
        _cache[key] = (mtime, loaded)
        return loaded


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
