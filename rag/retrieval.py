"""The one way agents and people find code: hybrid search plus path checks.

`retrieve` fuses dense (FAISS) and lexical (BM25) rankings with reciprocal rank fusion, nudges
files the query names, and prefers source over tests, docs and generated or vendored files.
Everything an agent cites comes back as a Hit with a real path and real line numbers.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath

from rag import embeddings, index
from rag.chunking import split_lines
from rag.lexical import tokenize
from rag.models import Chunk, Codebase, CodeFile
from rag.parsers.repomix import normalize_path

log = logging.getLogger(__name__)

RRF_K = 60
"""The usual reciprocal-rank-fusion constant: rank r contributes 1 / (RRF_K + r)."""
CANDIDATES = 40
ROLE_WEIGHT = {
    "source": 1.0,
    "config": 0.9,
    "test": 0.8,
    "docs": 0.8,
    "data": 0.7,
    "generated": 0.5,
    "vendored": 0.5,
}
PATH_BONUS = 1.0 / RRF_K
_PATHISH = re.compile(r"[\w./\\-]*\w\.\w+|[\w.-]+(?:/[\w.-]+)+")


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


def retrieve(codebase: Codebase, query: str, k: int = 6) -> list[Hit]:
    """The k chunks of `codebase` that best answer `query`; [] until it is indexed."""
    if not query.strip() or k <= 0:
        return []
    if codebase.status != Codebase.Status.READY or not codebase.chunk_count:
        log.warning("retrieve() on codebase %s that is %s", codebase.pk, codebase.status)
        return []
    pool = max(CANDIDATES, k * 4)
    dense = index.search_dense(codebase.pk, embeddings.embed([query])[0], pool)
    lexical = index.search_lexical(codebase.pk, tokenize(query), pool)

    fused: dict[int, float] = defaultdict(float)
    sources: dict[int, set[str]] = defaultdict(set)
    for name, ranking in (("dense", dense), ("lexical", lexical)):
        for rank, (ordinal, _) in enumerate(ranking, start=1):
            fused[ordinal] += 1.0 / (RRF_K + rank)
            sources[ordinal].add(name)

    named = _files_named_in(codebase, query)
    if named:
        extra = Chunk.objects.filter(codebase=codebase, file__path__in=named)
        for ordinal in extra.values_list("ordinal", flat=True)[:pool]:
            fused[ordinal] += 0.0
    if not fused:
        return []

    chunks = {
        c.ordinal: c
        for c in Chunk.objects.filter(codebase=codebase, ordinal__in=list(fused)).select_related(
            "file"
        )
    }
    hits = []
    for ordinal, score in fused.items():
        chunk = chunks.get(ordinal)
        if chunk is None:
            continue  # the index is newer or older than the rows; skip what does not match
        reasons = sorted(sources[ordinal])
        if chunk.file.path in named:
            score += PATH_BONUS
            reasons.append("path match")
        score *= ROLE_WEIGHT.get(chunk.file.role, 1.0)
        hits.append(
            Hit(
                path=chunk.file.path,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                text=chunk.text,
                score=round(score, 6),
                reason=_reason(reasons),
            )
        )
    hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
    return hits[:k]


def _reason(reasons: list[str]) -> str:
    kinds = "+".join(r for r in ("dense", "lexical") if r in reasons)
    extra = [r for r in reasons if r not in ("dense", "lexical")]
    return ", ".join([kinds] * bool(kinds) + extra)


def _files_named_in(codebase: Codebase, query: str) -> set[str]:
    """Paths of files the query mentions by path or by file name (e.g. "api.py")."""
    mentions = {_clean(m).lower() for m in _PATHISH.findall(query)}
    mentions.discard("")
    if not mentions:
        return set()
    named = set()
    for path in CodeFile.objects.filter(codebase=codebase).values_list("path", flat=True):
        lowered = path.lower()
        for mention in mentions:
            if lowered == mention or lowered.endswith("/" + mention):
                named.add(path)
    return named


def _clean(path: str) -> str:
    path = path.strip().strip("`'\"<>()[]{},;")
    path = re.sub(r"(#L\d+(-L?\d+)?|:\d+(-\d+)?)$", "", path)
    return normalize_path(path)


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
