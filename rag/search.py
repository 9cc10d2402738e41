"""Ranking files and chunks from the index's raw hits, without the database.

Signals, each a ranking of files, fused with weighted reciprocal rank fusion:
  dense     a file's best chunk by cosine similarity to the query (MiniLM)
  chunks    a file's best chunk by BM25 over split identifiers
  files     whole-file BM25 (path tokens + split identifiers of the file)
  symbols   definitions in the file whose names the query mentions, weighted by rarity
  names     folder and file names the query uses as words
  paths     files (or modules) the query names by path, file name or dotted module name
The fused score is then weighted by the file's role (source up; tests, docs, data down;
vendored and generated code far down). Every file comes back with each signal's rank and score.

What is *not* evidence: a bare file name that many files share or that names no project source
(`__init__.py`, `conf.py`, `index.rst` in a reproduction), a dotted name that only reaches a
package's `__init__` (the name after it lives in a sibling module), and stack-trace frames in
files outside the codebase (the user's script, installed libraries) — their words are dropped
from every signal, since they describe someone else's code. Of our frames only the innermost
of each traceback (where the error surfaced) names its file; the callers above it add words.
A frame in our own package whose file is not in this version (moved, renamed) keeps its words
but names no file.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from rag.index import top_dense, top_lexical
from rag.lexical import path_tokens
from rag.query import Frame, QueryTerms

RRF_K = 20
"""Rank r in a signal contributes weight / (RRF_K + r). The usual 60 (Cormack et al., fusing
long TREC runs) gives the 20th file 76 % of the first's credit, so a file merely present in
one more short list (symbols, names: ≤ 30 files) beat one ranked first by three signals; with
20 the head of each list carries the evidence (the 20th gets 51 %). On swe-dev every k from 10
to 20 did as well or better than 60 on every measure (docs/retrieval.md)."""
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
    "generated": 0.1,
    "vendored": 0.1,
}
"""Vendored and generated files need about ten times the evidence of project source: a change
to this project does not edit someone else's release or a tool's output."""
SYMBOL_MIN_WEIGHT = 0.5
"""Only names the query uses as code (snake_case, CamelCase, calls, code spans, dotted names:
weight ≥ 0.6 in rag.query) count as symbol evidence; a plain word that happens to name a
function somewhere ("note", "option") is lexical evidence, which BM25 already counts."""
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
        return cls(paths, roles, chunk_files, dense_ordinals, dict(symbols), module_names(paths))

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

    @cached_property
    def lookups(self) -> dict[str, dict[str, list[int]]]:
        """Folder/file name → files ("names"), last path segment → files ("paths"), top-level
        package → its __init__ ("packages"): built on first use, kept as long as the map."""
        by_name: dict[str, list[int]] = defaultdict(list)
        by_last: dict[str, list[int]] = defaultdict(list)
        for file, path in enumerate(self.paths):
            lowered = path.lower()
            for name in set(_NAME_SPLIT.split(lowered)) - _GENERIC_NAMES:
                by_name[name].append(file)
            by_last[lowered.rsplit("/", 1)[-1]].append(file)
        # Top-level packages (`seaborn` for seaborn/__init__.py), lower case → their __init__.
        packages = {
            dotted.lower(): [file]
            for dotted, file in self.modules.items()
            if "." not in dotted and self.paths[file].endswith("__init__.py")
        }
        return {"names": dict(by_name), "paths": dict(by_last), "packages": packages}


def module_names(paths: list[str]) -> dict[str, int]:
    """Dotted module name → file number, for every Python file: by its full path
    (`src.pkg.mod`) and by its name from the import root (`pkg.mod`: the folders above the
    topmost package, one without an `__init__.py`, are not part of the name)."""
    packages = {p.rsplit("/", 1)[0] for p in paths if p.endswith(("/__init__.py", "/__init__.pyi"))}
    modules: dict[str, int] = {}
    for n, path in enumerate(paths):
        if not path.endswith((".py", ".pyi", ".pyx")):
            continue
        parts = path.rsplit(".", 1)[0].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        top = len(parts) - 1
        while top > 0 and "/".join(parts[:top]) in packages:
            top -= 1  # the folder above is a package too: the name starts higher up
        for dotted in (".".join(parts), ".".join(parts[top:])):
            if dotted:
                modules.setdefault(dotted, n)
    return modules


@dataclass
class FileScore:
    file: int
    score: float
    reasons: list[str]
    """The signals that ranked the file, the one that gave it most first."""
    chunks: list[int]
    """The file's chunk ordinals that matched, best first."""
    signals: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Signal → (the file's rank in it, from 1; the signal's own score for the file)."""


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
    terms = with_frames(cmap, terms)
    dense = []
    if query_vector is not None and cmap.dense_ordinals and dense_index is not None:
        rows = top_dense(dense_index, query_vector, DENSE_POOL)
        # A dense index still filling in (rag.api) may hold fewer rows than the map lists.
        dense = [
            (cmap.dense_ordinals[row], score)
            for row, score in rows
            if row < len(cmap.dense_ordinals)
        ]
    chunks = top_lexical(chunk_lexical, terms.tokens, LEXICAL_POOL)
    files = top_lexical(file_lexical, terms.tokens, LEXICAL_POOL)
    return Result(
        rank_files(cmap, terms, dense, chunks, files),
        {o for o, _ in dense},
        {o for o, _ in chunks},
    )


def with_frames(cmap: CodeMap, terms: QueryTerms) -> QueryTerms:
    """`terms` with the words of the stack-trace frames in our code counted as the query's own,
    and the file of each traceback's innermost frame of ours as a path it names; frames in
    other code (the user's script, installed libraries) are left out altogether."""
    if not terms.frames:
        return terms
    inside: list[int] = []
    ours: list[Frame] = []
    packages = cmap.lookups["packages"]
    innermost: dict[int, int | None] = {}  # traceback → file of its innermost frame of ours
    for frame in terms.frames:
        file = _frame_file(cmap, frame.path)
        if file is not None or packages.keys() & set(frame.path.split("/")[:-1]):
            # Ours. One whose file is missing is our package at another version (the file
            # moved or was renamed since): its words still describe our code.
            ours.append(frame)
            innermost[frame.trace] = file
            if file is not None:
                inside.append(file)
    # The error surfaced in the innermost frame of ours: that file is path evidence. The
    # frames above it are its callers (API entry points, dispatch), which a fix rarely edits.
    named = [file for file in innermost.values() if file is not None]
    identifiers = dict(terms.identifiers)
    for frame in ours:
        for name, weight in frame.identifiers.items():
            identifiers[name] = max(identifiers.get(name, 0.0), weight)
    return replace(
        terms,
        tokens=terms.tokens
        + [t for file in dict.fromkeys(inside) for t in path_tokens(cmap.paths[file])]
        + [t for frame in ours for t in frame.tokens],
        paths=list(dict.fromkeys(terms.paths + [cmap.paths[f].lower() for f in named])),
        identifiers=identifiers,
        words=terms.words.union(*(frame.words for frame in ours)),
        frames=[],
    )


def _frame_file(cmap: CodeMap, path: str) -> int | None:
    """The codebase file a frame's path ends with (`.../site-packages/pkg/mod.py` is
    `pkg/mod.py`), or None. A file at the top of the codebase needs the whole path to match."""
    for file in _path_index(cmap).get(path.rsplit("/", 1)[-1], []):
        lowered = cmap.paths[file].lower()
        if path == lowered or ("/" in lowered and path.endswith("/" + lowered)):
            return file
    return None


def rank_files(
    cmap: CodeMap,
    terms: QueryTerms,
    dense: list[tuple[int, float]],
    chunks: list[tuple[int, float]],
    files: list[tuple[int, float]],
) -> list[FileScore]:
    """Files best first. `dense`/`chunks` are (chunk ordinal, score), `files` (file, score)."""
    terms = with_frames(cmap, terms)
    rankings: dict[str, list[tuple[int, float]]] = {}
    matched: dict[int, list[int]] = defaultdict(list)

    rankings["dense"] = _files_by_best_chunk(cmap, dense, matched)
    rankings["chunks"] = _files_by_best_chunk(cmap, chunks, matched)
    rankings["files"] = [(f, score) for f, score in files if score > 0]
    rankings["symbols"] = _files_by_symbols(cmap, terms, matched)
    rankings["names"] = _files_by_names(cmap, terms)
    rankings["paths"] = _files_by_paths(cmap, terms)

    fused: dict[int, float] = defaultdict(float)
    signals: dict[int, dict[str, tuple[int, float]]] = defaultdict(dict)
    for name, ranking in rankings.items():
        for rank, (file, score) in enumerate(ranking, start=1):
            fused[file] += SIGNAL_WEIGHT[name] / (RRF_K + rank)
            signals[file][name] = (rank, round(score, 6))
    scored = [
        FileScore(
            file,
            score * ROLE_WEIGHT.get(cmap.roles[file], 1.0),
            sorted(signals[file], key=lambda n: -SIGNAL_WEIGHT[n] / (RRF_K + signals[file][n][0])),
            list(dict.fromkeys(matched.get(file, []))),
            signals[file],
        )
        for file, score in fused.items()
    ]
    scored.sort(key=lambda s: (-s.score, cmap.paths[s.file]))
    return scored


def _files_by_best_chunk(
    cmap: CodeMap, hits: list[tuple[int, float]], matched: dict[int, list[int]]
) -> list[tuple[int, float]]:
    order: list[tuple[int, float]] = []
    seen: set[int] = set()
    for ordinal, score in hits:  # hits come best first, so a file's first hit is its best
        file = cmap.chunk_files[ordinal]
        matched[file].append(ordinal)
        if file not in seen:
            seen.add(file)
            order.append((file, score))
    return order


def _files_by_symbols(
    cmap: CodeMap, terms: QueryTerms, matched: dict[int, list[int]]
) -> list[tuple[int, float]]:
    n_files = max(len(cmap.paths), 1)
    scores: dict[int, float] = defaultdict(float)
    where: dict[int, list[int]] = defaultdict(list)
    for name, weight in terms.identifiers.items():
        ordinals = cmap.symbols.get(name.lower())
        if not ordinals or weight < SYMBOL_MIN_WEIGHT:
            continue
        defining = {cmap.chunk_files[o] for o in ordinals}
        idf = math.log(1 + n_files / len(defining))
        for ordinal in ordinals:
            file = cmap.chunk_files[ordinal]
            where[file].append(ordinal)
        for file in defining:
            scores[file] += weight * idf
    best = sorted(scores, key=lambda f: (-scores[f], f))[:SYMBOL_DEPTH]
    for file in best:
        matched[file].extend(where[file])
    return [(file, scores[file]) for file in best]


_NAME_SPLIT = re.compile(r"[/.\-]")
_GENERIC_NAMES = frozenset({"py", "__init__", "src", "lib", "core", "utils", "util", "base"})


def _files_by_names(cmap: CodeMap, terms: QueryTerms) -> list[tuple[int, float]]:
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
    best = sorted(scores, key=lambda f: (-scores[f], f))[:SYMBOL_DEPTH]
    return [(file, scores[file]) for file in best]


def _name_index(cmap: CodeMap) -> dict[str, list[int]]:
    return cmap.lookups["names"]


def _path_index(cmap: CodeMap) -> dict[str, list[int]]:
    return cmap.lookups["paths"]


def _files_by_paths(cmap: CodeMap, terms: QueryTerms) -> list[tuple[int, float]]:
    """Files the query names: by a path (`pkg/mod.py`, `.../site-packages/pkg/mod.py`), by a
    file name only this one file has, or by a dotted module name (`pkg.mod.Class`)."""
    found: dict[int, float] = {}
    for mention in terms.paths:
        name = mention.rsplit("/", 1)[-1]
        candidates = [
            file
            for file in _path_index(cmap).get(name, [])
            if (lowered := cmap.paths[file].lower()) == mention
            or lowered.endswith("/" + mention)
            or ("/" in lowered and mention.endswith("/" + lowered))
        ]
        # A bare file name is evidence only when it is this codebase's own: one file has it,
        # and that file is source. `conf.py`, `__init__.py` or `index.rst` in a reproduction
        # name the reporter's files, not ours.
        if "/" not in mention and (len(candidates) != 1 or cmap.roles[candidates[0]] != "source"):
            continue
        for file in candidates:
            found.setdefault(file, 1.0)
    for dotted in terms.modules:
        for file in _files_named_by_module(cmap, dotted):
            found.setdefault(file, 1.0)
    return list(found.items())


def _files_named_by_module(cmap: CodeMap, dotted: str) -> list[int]:
    """The file a dotted name points into. A name that reaches a package only
    (`astropy.io.fits.Card` → `astropy/io/fits/__init__.py`) points at the package's modules
    that define what comes next (`Card`), not at the `__init__` that re-exports it."""
    parts = dotted.split(".")
    for end in range(len(parts), 1, -1):
        file = cmap.modules.get(".".join(parts[:end]))
        if file is None:
            continue
        path = cmap.paths[file]
        if not path.endswith(("/__init__.py", "/__init__.pyi")):
            return [file]
        if end == len(parts):
            return []  # the package itself: its modules are all candidates, none in particular
        folder = path.rsplit("/", 1)[0] + "/"
        defining = sorted(
            {
                cmap.chunk_files[o]
                for o in cmap.symbols.get(parts[end].lower(), [])
                if cmap.paths[cmap.chunk_files[o]].startswith(folder)
            }
        )
        return defining[:3]
    return []


def path_matches(cmap: CodeMap, terms: QueryTerms) -> set[int]:
    return {file for file, _ in _files_by_paths(cmap, with_frames(cmap, terms))}
