"""Ranking files and chunks from the index's raw hits, without the database.

Signals, each a ranking of files, fused with weighted reciprocal rank fusion:
  dense     a file's best chunk by cosine similarity to the query (MiniLM)
  chunks    a file's best chunk by BM25 over split identifiers
  files     whole-file BM25 (path tokens + split identifiers of the file)
  symbols   definitions in the file whose names the query mentions, weighted by rarity
  paths     files (or modules) the query names by path, file name or dotted module name
The fused score is then weighted by the file's role (source up; tests, docs, data down).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag.index import top_dense, top_lexical
from rag.query import QueryTerms

RRF_K = 60
"""The usual reciprocal-rank-fusion constant: rank r contributes 1 / (RRF_K + r)."""
SIGNAL_WEIGHT = {
    "dense": 2.0,
    "chunks": 0.6,
    "files": 1.0,
    "symbols": 1.2,
    "names": 0.5,
    "paths": 1.5,
}
"""Set on swe-dev (see docs/retrieval.md) with few, round values, to avoid fitting 42 issues."""
ROLE_WEIGHT = {
    "source": 1.0,
    "config": 0.6,
    "test": 0.5,
    "docs": 0.4,
    "data": 0.3,
    "generated": 0.3,
    "vendored": 0.3,
}
DENSE_POOL = 300
LEXICAL_POOL = 300
SYMBOL_DEPTH = 30
"""Only the files with the best symbol matches count: a long list would just add noise."""


@dataclass
class CodeMap:
    """What ranking needs to know about a codebase: files, roles and where symbols live."""

    paths: list[str]
    roles: list[str]
    chunk_files: list[int]
    """File number of each chunk ordinal."""
    dense_ordinals: list[int]
    """Chunk ordinal of each row of the dense index (only some roles are embedded)."""
    symbols: dict[str, list[int]] = field(default_factory=dict)
    """Lower-cased defined name → chunk ordinals that define it."""
    modules: dict[str, int] = field(default_factory=dict)
    """Dotted module name (`pkg.sub.mod`) → file number."""

    @classmethod
    def build(
        cls,
        paths: list[str],
        roles: list[str],
        chunk_files: list[int],
        chunk_symbols: list[list[str]],
        dense_ordinals: list[int],
    ) -> CodeMap:
        symbols: dict[str, list[int]] = defaultdict(list)
        for ordinal, names in enumerate(chunk_symbols):
            for name in names:
                key = name.lower()
                if not symbols[key] or symbols[key][-1] != ordinal:
                    symbols[key].append(ordinal)
        modules = {}
        for n, path in enumerate(paths):
            if path.endswith((".py", ".pyi", ".pyx")):
                dotted = path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
                modules[dotted] = n
        return cls(paths, roles, chunk_files, dense_ordinals, dict(symbols), modules)

    def to_json(self) -> dict[str, Any]:
        return {
            "paths": self.paths,
            "roles": self.roles,
            "chunk_files": self.chunk_files,
            "dense_ordinals": self.dense_ordinals,
            "symbols": self.symbols,
            "modules": self.modules,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CodeMap:
        return cls(**data)


@dataclass
class FileScore:
    file: int
    score: float
    reasons: list[str]
    chunks: list[int]
    """The file's chunk ordinals that matched, best first."""


@dataclass
class Result:
    files: list[FileScore]
    dense: set[int]
    """Chunk ordinals the dense search returned."""
    lexical: set[int]
    """Chunk ordinals the chunk-level BM25 search returned."""


def search(
    cmap: CodeMap,
    terms: QueryTerms,
    query_vector: np.ndarray | None,
    dense_index: Any,
    chunk_lexical: Any,
    file_lexical: Any,
) -> Result:
    """Run every signal against the loaded indexes and rank the files."""
    dense = []
    if query_vector is not None and cmap.dense_ordinals:
        rows = top_dense(dense_index, query_vector, DENSE_POOL)
        dense = [(cmap.dense_ordinals[row], score) for row, score in rows]
    chunks = top_lexical(chunk_lexical, terms.tokens, LEXICAL_POOL)
    files = top_lexical(file_lexical, terms.tokens, LEXICAL_POOL)
    return Result(
        rank_files(cmap, terms, dense, chunks, files),
        {o for o, _ in dense},
        {o for o, _ in chunks},
    )


def rank_files(
    cmap: CodeMap,
    terms: QueryTerms,
    dense: list[tuple[int, float]],
    chunks: list[tuple[int, float]],
    files: list[tuple[int, float]],
) -> list[FileScore]:
    """Files best first. `dense`/`chunks` are (chunk ordinal, score), `files` (file, score)."""
    rankings: dict[str, list[int]] = {}
    matched: dict[int, list[int]] = defaultdict(list)

    rankings["dense"] = _files_by_best_chunk(cmap, dense, matched)
    rankings["chunks"] = _files_by_best_chunk(cmap, chunks, matched)
    rankings["files"] = [f for f, score in files if score > 0]
    rankings["symbols"] = _files_by_symbols(cmap, terms, matched)
    rankings["names"] = _files_by_names(cmap, terms)
    rankings["paths"] = _files_by_paths(cmap, terms)

    fused: dict[int, float] = defaultdict(float)
    reasons: dict[int, list[str]] = defaultdict(list)
    for name, ranking in rankings.items():
        for rank, file in enumerate(ranking, start=1):
            fused[file] += SIGNAL_WEIGHT[name] / (RRF_K + rank)
            if rank <= 20:
                reasons[file].append(name)
    scored = [
        FileScore(
            file,
            score * ROLE_WEIGHT.get(cmap.roles[file], 1.0),
            reasons[file],
            list(dict.fromkeys(matched.get(file, []))),
        )
        for file, score in fused.items()
    ]
    scored.sort(key=lambda s: (-s.score, cmap.paths[s.file]))
    return scored


def _files_by_best_chunk(
    cmap: CodeMap, hits: list[tuple[int, float]], matched: dict[int, list[int]]
) -> list[int]:
    order: list[int] = []
    seen: set[int] = set()
    for ordinal, _ in hits:  # hits come best first, so a file's first hit is its best
        file = cmap.chunk_files[ordinal]
        matched[file].append(ordinal)
        if file not in seen:
            seen.add(file)
            order.append(file)
    return order


def _files_by_symbols(cmap: CodeMap, terms: QueryTerms, matched: dict[int, list[int]]) -> list[int]:
    n_files = max(len(cmap.paths), 1)
    scores: dict[int, float] = defaultdict(float)
    where: dict[int, list[int]] = defaultdict(list)
    for name, weight in terms.identifiers.items():
        ordinals = cmap.symbols.get(name.lower())
        if not ordinals:
            continue
        defining = {cmap.chunk_files[o] for o in ordinals}
        idf = math.log(1 + n_files / len(defining))
        for ordinal in ordinals:
            file = cmap.chunk_files[ordinal]
            where[file].append(ordinal)
        for file in defining:
            scores[file] += weight * idf
    best = sorted(scores, key=lambda f: -scores[f])[:SYMBOL_DEPTH]
    for file in best:
        matched[file].extend(where[file])
    return best


_NAME_SPLIT = re.compile(r"[/.\-]")
_GENERIC_NAMES = frozenset({"py", "__init__", "src", "lib", "core", "utils", "util", "base"})


def _files_by_names(cmap: CodeMap, terms: QueryTerms) -> list[int]:
    """Files whose folder or file names the query uses as words (`pyreverse`, `qdp`), rare
    names counting more than common ones."""
    by_name = _name_index(cmap)
    n_files = max(len(cmap.paths), 1)
    scores: dict[int, float] = defaultdict(float)
    for word in terms.words:
        files = by_name.get(word)
        if files:
            weight = math.log(1 + n_files / len(files))
            for file in files:
                scores[file] += weight
    return sorted(scores, key=lambda f: (-scores[f], f))[:SYMBOL_DEPTH]


_NAME_INDEXES: dict[int, tuple[CodeMap, dict[str, list[int]]]] = {}


def _name_index(cmap: CodeMap) -> dict[str, list[int]]:
    """Folder/file name → files, built once per loaded code map (not once per query)."""
    cached = _NAME_INDEXES.get(id(cmap))
    if cached is not None and cached[0] is cmap:
        return cached[1]
    by_name: dict[str, list[int]] = defaultdict(list)
    for file, path in enumerate(cmap.paths):
        for name in set(_NAME_SPLIT.split(path.lower())) - _GENERIC_NAMES:
            by_name[name].append(file)
    if len(_NAME_INDEXES) > 64:
        _NAME_INDEXES.clear()
    _NAME_INDEXES[id(cmap)] = (cmap, dict(by_name))
    return _NAME_INDEXES[id(cmap)][1]


def _files_by_paths(cmap: CodeMap, terms: QueryTerms) -> list[int]:
    found: list[int] = []
    if terms.paths:
        for n, path in enumerate(cmap.paths):
            lowered = path.lower()
            for mention in terms.paths:
                if (
                    lowered == mention
                    or lowered.endswith("/" + mention)
                    or ("/" in lowered and mention.endswith("/" + lowered))
                ):
                    found.append(n)
                    break
    for dotted in terms.modules:
        parts = dotted.split(".")
        for end in range(len(parts), 1, -1):
            file = cmap.modules.get(".".join(parts[:end]))
            if file is not None:
                if file not in found:
                    found.append(file)
                break
    return found


def path_matches(cmap: CodeMap, terms: QueryTerms) -> set[int]:
    return set(_files_by_paths(cmap, terms))
