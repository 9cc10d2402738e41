"""The one way agents and people find code: hybrid search plus path checks.

`retrieve` ranks files first (rag.search: dense + chunk BM25 + file BM25 + symbol, file name
and path matches, fused by reciprocal rank and weighted by role), then shows the best chunks of
the best files. Everything an agent cites comes back as a Hit with a real path and real lines.
The ranking is rag.api's, the very code the benches measure; only chunk text comes from the
database here.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag import index
from rag.api import CodeIndex, Ranking
from rag.chunking import split_lines
from rag.models import Chunk, Codebase, CodeFile
from rag.paths import FileSet
from rag.query import clean_path
from rag.rerank import CodeFacts, rerank
from rag.search import CodeMap

log = logging.getLogger(__name__)


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
    signals: dict[str, tuple[int, float]] = field(default_factory=dict, compare=False)
    """Why the file ranked: signal → (its rank there, from 1; the signal's score)."""


def retrieve(codebase: Codebase, query: str, k: int = 6) -> list[Hit]:
    """The k chunks of `codebase` that best answer `query`; [] until it is indexed."""
    ranking = _rank(codebase, query, k)
    if ranking is None:
        return []
    cmap = ranking.cmap

    def chunks_of(file: int) -> list[tuple[int, str]]:
        rows = Chunk.objects.filter(codebase=codebase, file__path=cmap.paths[file])
        return list(rows.values_list("ordinal", "text"))

    wanted = ranking.chunks(k, chunks_of)
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
        hits.append(
            Hit(
                path=chunk.file.path,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                text=chunk.text,
                score=round(score, 6),
                reason=ranking.reason(ordinal, file),
            )
        )
    return hits


def retrieve_files(codebase: Codebase, query: str, k: int = 10) -> list[FileHit]:
    """The k files of `codebase` most likely to need reading (or changing) for `query`, each
    with the signals that ranked it."""
    ranking = _rank(codebase, query, k)
    if ranking is None:
        return []
    return [
        FileHit(f.path, f.score, ", ".join(f.reasons) or "related file", f.signals)
        for f in ranking.files(k)
    ]


def rerank_paths(codebase: Codebase, task: str, paths: list[str]) -> list[str]:
    """`paths` (retrieved files, best first) re-ranked with what investigation finds: a method
    the task calls, followed down the imports from the best file (rag.rerank)."""
    facts = CodeFacts.load(index.index_dir(codebase.pk))
    return [r.path for r in rerank(task, list(dict.fromkeys(paths)), facts)]


def _rank(codebase: Codebase, query: str, k: int) -> Ranking | None:
    if not query.strip() or k <= 0:
        return None
    if codebase.status != Codebase.Status.READY or not codebase.chunk_count:
        log.warning("retrieve() on codebase %s that is %s", codebase.pk, codebase.status)
        return None
    code = CodeIndex(codebase.pk)
    return code.rank(query, cmap=code.code_map() or _legacy_map(codebase))


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


_clean = clean_path


def resolve_path(codebase: Codebase, path: str) -> str | None:
    """The codebase's real path for `path` ("./x", "/x", "x\\y", "x:12", "X", a unique tail of
    the path all work: rag.paths.FileSet.resolve), or None."""
    cleaned = _clean(path)
    if not cleaned:
        return None
    files = CodeFile.objects.filter(codebase=codebase)
    if files.filter(path=cleaned).exists():
        return cleaned
    return FileSet(files.values_list("path", flat=True)).resolve(cleaned).path


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
