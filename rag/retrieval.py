"""The one way agents and people find code: hybrid search plus path checks.

`retrieve` ranks files first (rag.search: dense + chunk BM25 + file BM25 + symbol, file name
and path matches, fused by reciprocal rank and weighted by role), then shows the best chunks of
the best files. Everything an agent cites comes back as a Hit with a real path and real lines.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from rag import embeddings, index
from rag.chunking import split_lines
from rag.lexical import tokenize
from rag.models import Chunk, Codebase, CodeFile
from rag.query import analyze, clean_path
from rag.search import CodeMap, FileScore, Result, search

log = logging.getLogger(__name__)

CHUNK_DECAY = 0.5
"""The n-th chunk of a file scores file_score / (1 + CHUNK_DECAY * n): a strong file may show
several chunks, but the next file's best chunk soon outranks its weaker ones."""
_REASON = {"symbols": "symbol match", "paths": "path match", "names": "file name match"}


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    text: str
    score: float
    reason: str

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class FileHit:
    path: str
    score: float
    reason: str


@dataclass
class _Ranked:
    cmap: CodeMap
    result: Result
    tokens: list[str]


def retrieve(codebase: Codebase, query: str, k: int = 6) -> list[Hit]:
    """The k chunks of `codebase` that best answer `query`; [] until it is indexed."""
    ranked = _rank(codebase, query, k)
    if ranked is None:
        return []
    cmap, files = ranked.cmap, ranked.result.files
    wanted: list[tuple[float, int, FileScore]] = []
    missing: list[FileScore] = []
    for file in files[: max(k, 8)]:
        if not file.chunks:
            missing.append(file)
        for n, ordinal in enumerate(file.chunks[:k]):
            wanted.append((file.score / (1 + CHUNK_DECAY * n), ordinal, file))
    best = _best_chunks_of(codebase, cmap, missing, ranked.tokens)
    for file in missing:
        if file.file in best:
            wanted.append((file.score, best[file.file], file))
    wanted.sort(key=lambda item: -item[0])
    wanted = wanted[:k]
    rows = {
        c.ordinal: c
        for c in Chunk.objects.filter(
            codebase=codebase, ordinal__in=[o for _, o, _ in wanted]
        ).select_related("file")
    }
    hits = []
    for score, ordinal, file in wanted:
        chunk = rows.get(ordinal)
        if chunk is None or chunk.file.path != cmap.paths[file.file]:
            continue  # the index is newer or older than the rows; skip what does not match
        found = (("dense", ranked.result.dense), ("lexical", ranked.result.lexical))
        kinds = [name for name, ordinals in found if ordinal in ordinals]
        extra = [_REASON[r] for r in file.reasons if r in _REASON]
        if not kinds and "files" in file.reasons:
            kinds = ["lexical"]
        hits.append(
            Hit(
                path=chunk.file.path,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                text=chunk.text,
                score=round(score, 6),
                reason=", ".join(["+".join(kinds)] * bool(kinds) + extra) or "related file",
            )
        )
    return hits


def retrieve_files(codebase: Codebase, query: str, k: int = 10) -> list[FileHit]:
    """The k files of `codebase` most likely to need reading (or changing) for `query`."""
    ranked = _rank(codebase, query, k)
    if ranked is None:
        return []
    return [
        FileHit(
            ranked.cmap.paths[f.file],
            round(f.score, 6),
            ", ".join(f.reasons) or "related file",
        )
        for f in ranked.result.files[:k]
    ]


def _rank(codebase: Codebase, query: str, k: int) -> _Ranked | None:
    if not query.strip() or k <= 0:
        return None
    if codebase.status != Codebase.Status.READY or not codebase.chunk_count:
        log.warning("retrieve() on codebase %s that is %s", codebase.pk, codebase.status)
        return None
    data = index.load_map(codebase.pk)
    cmap = _code_map(data) if data is not None else _legacy_map(codebase)
    terms = analyze(query)
    vector = embeddings.embed([terms.text])[0] if cmap.dense_ordinals else None
    result = search(
        cmap,
        terms,
        vector,
        index.load_dense(codebase.pk),
        index.load_lexical(codebase.pk),
        index.load_lexical(codebase.pk, index.FILES_POINTER),
    )
    return _Ranked(cmap, result, terms.tokens)


_MAPS: dict[int, tuple[dict[str, Any], CodeMap]] = {}


def _code_map(data: dict[str, Any]) -> CodeMap:
    """One CodeMap per loaded map.json (index.py caches the dict until the file changes), so
    what rag.search derives from it is built once, not once per query."""
    cached = _MAPS.get(id(data))
    if cached is None or cached[0] is not data:
        if len(_MAPS) > 64:
            _MAPS.clear()
        cached = _MAPS[id(data)] = (data, CodeMap.from_json(data))
    return cached[1]


def _legacy_map(codebase: Codebase) -> CodeMap:
    """The code map of a codebase indexed before maps were written (every chunk embedded, in
    ordinal order, and no file-level index); re-indexing it writes a real one."""
    log.info("codebase %s has no code map; building one from its rows", codebase.pk)
    files = list(CodeFile.objects.filter(codebase=codebase).values_list("pk", "path", "role"))
    number = {pk: n for n, (pk, _, _) in enumerate(files)}
    chunks = list(
        Chunk.objects.filter(codebase=codebase)
        .order_by("ordinal")
        .values_list("file_id", "symbols")
    )
    dense = index.load_dense(codebase.pk)
    embedded = list(range(len(chunks))) if dense is not None and dense.ntotal == len(chunks) else []
    return CodeMap.build(
        paths=[path for _, path, _ in files],
        roles=[role for _, _, role in files],
        chunk_files=[number[file_id] for file_id, _ in chunks],
        chunk_symbols=[list(symbols or []) for _, symbols in chunks],
        dense_ordinals=embedded,
    )


def _best_chunks_of(
    codebase: Codebase, cmap: CodeMap, files: list[FileScore], tokens: list[str]
) -> dict[int, int]:
    """For files that matched as a whole (by name or file-level BM25), their chunk sharing the
    most query tokens."""
    wanted = set(tokens)
    best: dict[int, int] = {}
    for file in files:
        chunks = Chunk.objects.filter(codebase=codebase, file__path=cmap.paths[file.file])
        scored = [
            (len(wanted & set(tokenize(c.text))), -c.ordinal, c.ordinal)
            for c in chunks.only("ordinal", "text")
        ]
        if scored:
            best[file.file] = max(scored)[2]
    return best


_clean = clean_path


def resolve_path(codebase: Codebase, path: str) -> str | None:
    """The codebase's real path for `path` ("./x", "/x", "x\\y", "x:12" all work), or None."""
    cleaned = _clean(path)
    if not cleaned:
        return None
    files = CodeFile.objects.filter(codebase=codebase)
    exact = files.filter(path=cleaned).values_list("path", flat=True).first()
    if exact is not None:
        return exact
    folded = list(files.filter(path__iexact=cleaned).values_list("path", flat=True)[:2])
    return folded[0] if len(folded) == 1 else None


def file_exists(codebase: Codebase, path: str) -> bool:
    return resolve_path(codebase, path) is not None


def closest_paths(codebase: Codebase, path: str, n: int = 3) -> list[str]:
    """Up to n real paths that look most like `path`, for "did you mean …?" suggestions."""
    cleaned = _clean(path)
    if not cleaned:
        return []
    paths = list(CodeFile.objects.filter(codebase=codebase).values_list("path", flat=True))
    by_path = difflib.get_close_matches(cleaned, paths, n=n, cutoff=0.5)
    name = PurePosixPath(cleaned).name
    same_name = [p for p in paths if PurePosixPath(p).name == name and p not in by_path]
    return (by_path + same_name)[:n]


def read_lines(codebase: Codebase, path: str, start: int = 1, end: int | None = None) -> str | None:
    """Lines start..end (1-based, inclusive) of a file, or None when the file does not exist."""
    real = resolve_path(codebase, path)
    if real is None:
        return None
    content = CodeFile.objects.get(codebase=codebase, path=real).content
    lines = split_lines(content)
    return "\n".join(lines[max(start, 1) - 1 : end])
