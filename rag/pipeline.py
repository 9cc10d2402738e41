"""The indexing pipeline without the database: parsed files → records, chunks, vectors, indexes.

`indexing.index_codebase` runs it for a codebase and stores the result; the retrieval benches
run the very same functions on packs from disk, so what they measure is what the product does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from rag import embeddings
from rag.chunking import TextChunk, chunk_file, embedding_text, split_lines
from rag.languages import language_for
from rag.lexical import document_tokens, file_tokens
from rag.parsers.repomix import ParsedFile
from rag.roles import role_for
from rag.search import CodeMap

DENSE_ROLES = frozenset({"source"})
"""Roles whose chunks get a dense vector. Everything else is still found lexically and by path.

MiniLM on a small CPU embeds ~5–20 chunks a second; a repository like astropy has 40 000
chunks, most of them tests, docs, data and vendored C. Embedding only the source keeps a big
upload to minutes instead of hours, and on the swe-dev bench costs nothing (the files that
fixes change are source; tests and docs are down-weighted anyway).
"""
DENSE_BUDGET = 4000
"""At most this many chunks get a dense vector. Past it, files are taken round-robin: every
source file's first chunk, then every file's second, and so on, so each file keeps its head
(imports, class and function signatures) in the dense index and indexing time stays bounded."""
EMBED_BATCH = 64


@dataclass
class FileRecord:
    path: str
    content: str
    language: str
    role: str
    sha256: str
    size: int
    line_count: int
    chunks: list[TextChunk]


def prepare(parsed: Iterable[ParsedFile]) -> list[FileRecord]:
    """Facts and chunks for each parsed file, in pack order."""
    records = []
    for item in parsed:
        data = item.content.encode("utf-8", "surrogatepass")
        language = language_for(item.path)
        records.append(
            FileRecord(
                path=item.path,
                content=item.content,
                language=language,
                role=role_for(item.path, item.content),
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                line_count=len(split_lines(item.content)),
                chunks=chunk_file(item.content, language),
            )
        )
    return records


def chunk_texts(records: list[FileRecord], budget: int | None = None) -> list[tuple[int, str]]:
    """(ordinal, text to embed) for the chunks that get a dense vector, in ordinal order."""
    budget = DENSE_BUDGET if budget is None else budget
    by_depth: list[tuple[int, int, int, int]] = []  # (depth, file, ordinal, chunk)
    ordinal = 0
    for n, record in enumerate(records):
        for depth, _ in enumerate(record.chunks):
            if record.role in DENSE_ROLES:
                by_depth.append((depth, n, ordinal, depth))
            ordinal += 1
    chosen = sorted(by_depth)[:budget]
    chosen.sort(key=lambda item: item[2])
    return [
        (ordinal, embedding_text(records[n].path, records[n].chunks[c]))
        for _, n, ordinal, c in chosen
    ]


def text_key(text: str) -> str:
    """The cache key of an embedded text: equal texts (under one model) share one vector."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


Progress = Callable[[int, int], None]


def embed_texts(
    texts: list[str],
    known: dict[str, np.ndarray] | None = None,
    progress: Progress | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for `texts`, reusing `known` (text key → vector); returns them and how many
    had to be computed. Texts that repeat within `texts` are embedded once."""
    known = {} if known is None else known
    keys = [text_key(t) for t in texts]
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in known and key not in todo:
            todo[key] = text
    pending = list(todo.items())
    for start in range(0, len(pending), EMBED_BATCH):
        batch = pending[start : start + EMBED_BATCH]
        vectors = embeddings.embed([t for _, t in batch])
        for (key, _), vector in zip(batch, vectors, strict=True):
            known[key] = vector
        if progress:
            progress(min(start + EMBED_BATCH, len(pending)), len(pending))
    if not texts:
        return np.zeros((0, embeddings.dimension()), dtype=np.float32), 0
    return np.vstack([known[key] for key in keys]).astype(np.float32), len(pending)


def lexical_documents(records: list[FileRecord]) -> list[list[str]]:
    """Tokens for the chunk-level BM25 index, one list per chunk ordinal."""
    return [document_tokens(r.path, c.text) for r in records for c in r.chunks]


def file_documents(records: list[FileRecord]) -> list[list[str]]:
    """Tokens for the file-level BM25 index, one list per file."""
    return [file_tokens(r.path, r.content) for r in records]


def code_map(records: list[FileRecord], dense_ordinals: list[int]) -> CodeMap:
    return CodeMap.build(
        paths=[r.path for r in records],
        roles=[r.role for r in records],
        chunk_files=[n for n, r in enumerate(records) for _ in r.chunks],
        chunk_symbols=[c.symbols for r in records for c in r.chunks],
        dense_ordinals=dense_ordinals,
    )
