"""Search indexes on disk: FAISS for vectors, bm25s for identifiers, one folder per codebase.

Every function takes the folder, or a codebase id for PLANAGENTS_INDEX_DIR/<codebase_id>/
(the app's layout; rag.api works on any folder, with no Django settings needed). Layout:
  dense.faiss     IndexFlatIP over unit vectors; row n is the Chunk with ordinal n
  lexical.json    points at the current bm25s folder (swapped atomically, like dense.faiss)
  lexical-<hex>/  the bm25s index itself
  files.json      points at files-<hex>/, a bm25s index with one document per file
  map.json        the CodeMap: paths, roles, chunk → file, symbols, dense row → chunk
  vectors.npz     text key → vector of every embedded chunk, so a re-index of a changed
                  upload only embeds the chunks whose text changed
  chunks.json     (rag.api only) each chunk's file, lines and text, for answers without a database

Files are written under a temporary name and moved into place with os.replace, so a reader
sees the old index or the new one, never half of one. Loaded indexes are cached per process
(`cached`, the "rag.index" cache of planagents.caches: least recently used dropped first past
PLANAGENTS_INDEX_CACHE_MB) and reloaded when the file's mtime changes (another process
rebuilt it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import bm25s
import faiss
import numpy as np

from planagents import caches

DENSE_FILE = "dense.faiss"
LEXICAL_POINTER = "lexical.json"
FILES_POINTER = "files.json"
MAP_FILE = "map.json"
VECTORS_FILE = "vectors.npz"

CHUNKS_FILE = "chunks.json"

JSON_IN_MEMORY = 8
"""Bytes a loaded JSON file takes in Python per byte on disk: measured 5.6-6.1 for map.json
and 8.6 for bm25s' vocabulary on the grounding bench's indexes (tracemalloc)."""

_cache = caches.lru("rag.index")
_loading = threading.RLock()
T = TypeVar("T")

Where = int | str | Path
"""A codebase id (the app's folder for it) or a folder."""


def index_dir(where: Where) -> Path:
    if isinstance(where, int):
        from django.conf import settings

        return Path(settings.PLANAGENTS_INDEX_DIR) / str(where)
    return Path(where)


def build_dense(vectors: np.ndarray) -> faiss.Index:
    index = faiss.IndexFlatIP(vectors.shape[1])
    if len(vectors):
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def build_lexical(documents: list[list[str]]) -> bm25s.BM25:
    retriever = bm25s.BM25()
    retriever.index(documents, show_progress=False)
    return retriever


def top_dense(index: Any, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, cosine similarity) pairs, best first."""
    if index is None or index.ntotal == 0 or k <= 0:
        return []
    scores, ids = index.search(query.reshape(1, -1).astype(np.float32), min(k, index.ntotal))
    return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


def top_lexical(retriever: Any, tokens: list[str], k: int) -> list[tuple[int, float]]:
    """(document, BM25 score) pairs with a positive score, best first."""
    if retriever is None:
        return []
    known = [t for t in tokens if t in retriever.vocab_dict]
    if not known:
        return []
    scores = retriever.get_scores(known)
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(i), float(scores[i])) for i in top if scores[i] > 0]


def write_dense(where: Where, vectors: np.ndarray) -> None:
    folder = index_dir(where)
    folder.mkdir(parents=True, exist_ok=True)
    index = build_dense(vectors)
    fd, tmp = tempfile.mkstemp(prefix=".dense-", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        faiss.write_index(index, tmp)
        os.replace(tmp, folder / DENSE_FILE)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_lexical(where: Where, documents: list[list[str]], pointer: str = LEXICAL_POINTER) -> None:
    folder = index_dir(where)
    folder.mkdir(parents=True, exist_ok=True)
    prefix = pointer.removesuffix(".json")
    name = f"{prefix}-{secrets.token_hex(6)}"
    build_lexical(documents).save(str(folder / name), show_progress=False)
    _atomic_write_text(folder / pointer, json.dumps({"folder": name}))
    for old in folder.glob(f"{prefix}-*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)


def write_map(where: Where, data: dict[str, Any]) -> None:
    folder = index_dir(where)
    folder.mkdir(parents=True, exist_ok=True)
    _atomic_write_text(folder / MAP_FILE, json.dumps(data))


def write_vectors(where: Where, keys: list[str], vectors: np.ndarray) -> None:
    folder = index_dir(where)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".vectors-", suffix=".npz", dir=folder)
    os.close(fd)
    try:
        np.savez(tmp, keys=np.array(keys, dtype="U32"), vectors=vectors.astype(np.float32))
        os.replace(tmp, folder / VECTORS_FILE)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_vectors(where: Where) -> dict[str, np.ndarray]:
    """The vectors of the last build by text key, or {} when there is none (or it is unreadable)."""
    path = index_dir(where) / VECTORS_FILE
    try:
        data = np.load(path)
        return dict(zip((str(k) for k in data["keys"]), data["vectors"], strict=True))
    except (OSError, ValueError, KeyError):
        return {}


def load_dense(where: Where) -> Any:
    return cached(where, DENSE_FILE, _read_dense)


def load_lexical(where: Where, pointer: str = LEXICAL_POINTER) -> Any:
    return cached(where, pointer, _read_lexical)


def load_map(where: Where) -> dict[str, Any] | None:
    return cached(where, MAP_FILE, _read_json)


def write_chunks(where: Where, data: dict[str, Any]) -> None:
    folder = index_dir(where)
    folder.mkdir(parents=True, exist_ok=True)
    _atomic_write_text(folder / CHUNKS_FILE, json.dumps(data))


def load_chunks(where: Where) -> dict[str, Any] | None:
    return cached(where, CHUNKS_FILE, _read_json)


def delete(where: Where) -> None:
    folder = index_dir(where)
    shutil.rmtree(folder, ignore_errors=True)
    _cache.discard_where(lambda key: isinstance(key, tuple) and key[0] == str(folder))


def search_dense(where: Where, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, cosine similarity) pairs, best first."""
    return top_dense(load_dense(where), query, k)


def search_lexical(where: Where, tokens: list[str], k: int) -> list[tuple[int, float]]:
    """(ordinal, BM25 score) pairs with a positive score, best first."""
    return top_lexical(load_lexical(where), tokens, k)


def cached(
    where: Where,
    filename: str,
    reader: Callable[[Path], tuple[T, int]],
    kind: str = "",
) -> T | None:
    """What `reader(path)` makes of the index file `filename` (None when there is no such
    file), loaded once per version of the file. `reader` returns it with the bytes it takes in
    memory, which count against the cache's bound; `kind` tells apart two readings of one file
    (rag.rerank's facts and rag.navigation's catalogue both read symbols.sqlite)."""
    entry = _entry(where, filename, reader, kind)
    return None if entry is None else entry.value  # type: ignore[no-any-return]


def with_derived(where: Where, filename: str, build: Callable[[Any], T]) -> tuple[Any, T] | None:
    """The loaded file `filename` (as `load_map`, `load_chunks`… give it) and `build(loaded)`,
    built once per version of the file and kept with it, so it leaves memory when the file
    does: a cache of its own for what is derived from an index would keep alive what this one
    let go. (Its bytes are not counted: what rag derives is small beside its source.)"""
    with _loading:
        entry = _entry(where, filename, _READERS[filename])
        if entry is None:
            return None
        key = _name(build)
        if key not in entry.derived:
            entry.derived[key] = build(entry.value)
        return entry.value, entry.derived[key]


@dataclass
class _Entry:
    mtime: int
    value: Any
    derived: dict[str, Any] = field(default_factory=dict)
    """What `with_derived` built from `value`, by builder."""


def _entry(
    where: Where, filename: str, reader: Callable[[Path], tuple[Any, int]], kind: str = ""
) -> _Entry | None:
    path = index_dir(where) / filename
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    key = (str(path.parent), filename, kind)
    # One load at a time: two queries arriving together on a cold index load it once.
    with _loading:
        found: _Entry | None = _cache.get(key)
        if found is not None and found.mtime == mtime:
            return found
        value, size = reader(path)
        entry = _Entry(mtime, value)
        _cache.put(key, entry, size)
        return entry


def _name(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def _read_dense(path: Path) -> tuple[faiss.Index, int]:
    loaded = faiss.read_index(str(path))
    return loaded, int(loaded.ntotal) * int(loaded.d) * 4


def _read_json(path: Path) -> tuple[Any, int]:
    text = path.read_text()
    return json.loads(text), len(text) * JSON_IN_MEMORY


def _read_lexical(pointer: Path) -> tuple[bm25s.BM25, int]:
    folder = pointer.parent / json.loads(pointer.read_text())["folder"]
    loaded = bm25s.BM25.load(str(folder), show_progress=False)
    # Its arrays take in memory what they take on disk; its vocabulary is a JSON dict.
    size = sum(
        f.stat().st_size * (1 if f.suffix == ".npy" else JSON_IN_MEMORY) for f in folder.iterdir()
    )
    return loaded, size


_READERS: dict[str, Callable[[Path], tuple[Any, int]]] = {
    DENSE_FILE: _read_dense,
    LEXICAL_POINTER: _read_lexical,
    FILES_POINTER: _read_lexical,
    MAP_FILE: _read_json,
    CHUNKS_FILE: _read_json,
}


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
