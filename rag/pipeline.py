"""The indexing pipeline without the database: parsed files → records, chunks, vectors, indexes.

`indexing.index_codebase` runs it for a codebase and stores the result; the retrieval benches
run the very same functions on packs from disk, so what they measure is what the product does.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from rag import embeddings, symbols
from rag.chunking import TextChunk, chunk_file, split_lines
from rag.languages import language_for
from rag.lexical import document_tokens, file_tokens
from rag.parsers.repomix import ParsedFile
from rag.roles import role_for
from rag.search import CodeMap
from rag.symbols import FileSymbols

log = logging.getLogger(__name__)

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
    withheld_reason: str = ""
    """Why the file holds no content and no chunks (it looks like it holds a secret)."""
    symbols: FileSymbols | None = None
    """Its definitions, references and imports, read once for the chunks and the profile;
    None when it has no grammar, is too large to parse, could not be read, or is withheld."""


def prepare(parsed: Iterable[ParsedFile]) -> list[FileRecord]:
    """Facts and chunks for each parsed file, in pack order.

    A withheld file keeps its facts (size, lines, hash) but not its text: no chunk, vector,
    index or stored row ever holds what it says, so nothing can put it in a prompt.
    """
    records = []
    for item in parsed:
        data = item.content.encode("utf-8", "surrogatepass")
        language = language_for(item.path)
        withheld = item.withheld_reason
        found = None if withheld else parse(item.path, item.content, language)
        definitions = found.definitions if found else None
        records.append(
            FileRecord(
                path=item.path,
                content="" if withheld else item.content,
                language=language,
                role=role_for(item.path, item.content),
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                line_count=len(split_lines(item.content)),
                chunks=[] if withheld else chunk_file(item.content, language, definitions),
                withheld_reason=withheld,
                symbols=found,
            )
        )
    return records


def parse(path: str, content: str, language: str) -> FileSymbols | None:
    """The file's symbols (rag.symbols), or None; a file tree-sitter chokes on is logged and
    cut in plain windows rather than cost the codebase its index."""
    try:
        return symbols.extract(path, content, language)
    except Exception:
        log.exception("could not read the symbols of %s", path)
        return None


def searchable(records: list[FileRecord]) -> list[FileRecord]:
    """The records the search indexes cover: all but the withheld ones. Withheld files have no
    chunks, so chunk ordinals are the same counted over these or over all records."""
    return [r for r in records if not r.withheld_reason]


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
        vectors = embeddings.embed_below([t for _, t in batch])
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
