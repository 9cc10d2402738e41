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

DENSE_FILE = "dense.faiss"
LEXICAL_POINTER = "lexical.json"
FILES_POINTER = "files.json"
MAP_FILE = "map.json"
VECTORS_FILE = "vectors.npz"

CHUNKS_FILE = "chunks.json"

_lock = threading.Lock()
_cache: dict[tuple[str, str], tuple[int, Any]] = {}

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
    return _load(where, DENSE_FILE, lambda path: faiss.read_index(str(path)))


def load_lexical(where: Where, pointer: str = LEXICAL_POINTER) -> Any:
    return _load(where, pointer, _read_lexical)


def load_map(where: Where) -> dict[str, Any] | None:
    return _load(where, MAP_FILE, lambda path: json.loads(path.read_text()))


def write_chunks(where: Where, data: dict[str, Any]) -> None:
    folder = index_dir(where)
    folder.mkdir(parents=True, exist_ok=True)
    _atomic_write_text(folder / CHUNKS_FILE, json.dumps(data))


def load_chunks(where: Where) -> dict[str, Any] | None:
    return _load(where, CHUNKS_FILE, lambda path: json.loads(path.read_text()))


def delete(where: Where) -> None:
    folder = index_dir(where)
    shutil.rmtree(folder, ignore_errors=True)
    with _lock:
        for key in [key for key in _cache if key[0] == str(folder)]:
            del _cache[key]


def search_dense(where: Where, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, cosine similarity) pairs, best first."""
    return top_dense(load_dense(where), query, k)


def search_lexical(where: Where, tokens: list[str], k: int) -> list[tuple[int, float]]:
    """(ordinal, BM25 score) pairs with a positive score, best first."""
    return top_lexical(load_lexical(where), tokens, k)


def _read_lexical(pointer: Path) -> bm25s.BM25:
    folder = pointer.parent / json.loads(pointer.read_text())["folder"]
    return bm25s.BM25.load(str(folder), show_progress=False)


def _load(where: Where, filename: str, reader: Any) -> Any:
    path = index_dir(where) / filename
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    key = (str(path.parent), filename)
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
