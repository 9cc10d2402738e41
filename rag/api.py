"""Index a codebase into a folder and search it, with no database: the engine behind the app's
indexing job and `retrieve()`, and behind the benches, so a bench measures what the app does.

    from rag import api

    built = api.index_pack("repo.xml", "var/idx")   # a Repomix pack or a zip: a path or bytes
    code = api.CodeIndex("var/idx")
    code.rank_files("KeyError in Cart.total", k=5)   # [RankedFile(path, role, score, signals…)]
    code.rank_chunks("KeyError in Cart.total", k=6)  # [RankedChunk(path, start_line, …, text)]

Indexing writes the lexical side first (BM25 over chunks and files, the code map): from then on
the folder answers queries. Vectors follow in blocks, each block written as it is done, so a
search made meanwhile uses the vectors there are. Every chunk of every source file gets a
vector; vendored and generated files, tests, docs and data are found lexically, by symbol and
by path. Nothing here needs Django settings or a database.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planagents.nice import in_niced_thread
from rag import embeddings, index
from rag.chunking import embedding_text
from rag.lexical import tokenize
from rag.parsers import parse_upload
from rag.parsers.repomix import ParsedFile
from rag.pipeline import FileRecord, code_map, file_documents, lexical_documents, prepare, text_key
from rag.pipeline import searchable as searchable_records
from rag.query import QueryTerms, analyze
from rag.roles import classify
from rag.search import CodeMap, FileScore, Result, search

DENSE_ROLES = frozenset({"source"})
"""Roles whose chunks get a vector: all of them, with no cap per file or per codebase."""
BLOCK = 1024
"""Vectors are computed and written this many at a time (each block batched by length)."""
CHUNK_DECAY = 0.5
"""The n-th chunk of a file scores file_score / (1 + CHUNK_DECAY * n): a strong file may show
several chunks, but the next file's best chunk soon outranks its weaker ones."""
_REASON = {"symbols": "symbol match", "paths": "path match", "names": "file name match"}

Progress = Callable[[int, int], None]
Ready = Callable[["Built"], None]


@dataclass
class Built:
    """What `index_files` made."""

    folder: Path
    records: list[FileRecord]
    """Every file, in upload order, with its role (withheld files too, without content)."""
    dense_ordinals: list[int]
    """The chunk ordinal of each row of the dense index."""
    computed: int
    """Vectors computed; the others were reused from `known`."""
    lexical_seconds: float
    """From the start until the folder could answer queries (lexically)."""
    seconds: float

    @property
    def roles(self) -> dict[str, int]:
        """How many files have each role."""
        return dict(Counter(r.role for r in self.records).most_common())

    @property
    def chunk_count(self) -> int:
        return sum(len(r.chunks) for r in self.records)


def read_pack(source: str | Path | bytes, name: str = "pack") -> list[ParsedFile]:
    """The files of a Repomix pack (any style) or a zip, given its path or its bytes."""
    if isinstance(source, bytes):
        return parse_upload([(name, source)]).files
    path = Path(source)
    return parse_upload([(path.name, path.read_bytes())]).files


def index_pack(source: str | Path | bytes, folder: str | Path, **options: Any) -> Built:
    """Index a pack or zip (a path or bytes) into `folder`; options as for `index_files`."""
    return index_files(read_pack(source), folder, **options)


def index_files(
    files: Sequence[ParsedFile],
    folder: str | Path,
    *,
    role_overrides: Mapping[str, str] | None = None,
    known: dict[str, np.ndarray] | None = None,
    progress: Progress | None = None,
    keep_text: bool = True,
    vectors_behind: bool = True,
    embed: bool = True,
    on_lexical: Ready | None = None,
) -> Built:
    """Index `files` into `folder`, replacing whatever index it held.

    role_overrides  path or folder prefix ("lib/") → role, the uploader's word over ours
    known           text key → vector from an earlier build (or a cache): reused, and the
                    vectors computed here are added to it
    progress        progress(vectors done, vectors to do) after each batch
    keep_text       write chunks.json, so `CodeIndex.rank_chunks` can show text (the app
                    reads chunk text from its database instead)
    vectors_behind  write the lexical side first and the vectors block by block behind it;
                    otherwise write everything once the vectors are done (the folder keeps
                    answering from its previous index meanwhile)
    embed           False: no vectors at all (a lexical-only index, for tests and benches)
    on_lexical      on_lexical(built) once the folder answers queries (with vectors_behind,
                    before any vector is computed; `built.computed` is 0 then): the app
                    stores the rows and opens the codebase here. An exception raised by it or
                    by `progress` stops the build where it is.
    """
    started = time.perf_counter()
    folder = Path(folder)
    known = {} if known is None else known

    def parse() -> tuple[list[FileRecord], list[FileRecord], list[tuple[int, str]]]:
        records = prepare(files)
        for record, role in zip(
            records, classify([(r.path, r.content) for r in records], role_overrides), strict=True
        ):
            record.role = role
        searchable = searchable_records(records)
        return records, searchable, dense_plan(searchable) if embed else []

    # Parsing and chunking (a minute of one core on astropy) run below people's turns too.
    records, searchable, plan = in_niced_thread(parse, embeddings.index_nice(), "index-parse")
    # Reused vectors go first, so the rows written at any moment are a prefix of the plan.
    plan.sort(key=lambda item: text_key(item[1]) not in known)
    ordinals = [o for o, _ in plan]
    keys = [text_key(t) for _, t in plan]

    def write_lexical_side() -> None:
        index.write_lexical(folder, lexical_documents(searchable))
        index.write_lexical(folder, file_documents(searchable), index.FILES_POINTER)
        if keep_text:
            index.write_chunks(folder, chunk_store(searchable))
        index.write_map(folder, code_map(searchable, ordinals).to_json())

    lexical_seconds = 0.0
    if vectors_behind:
        (folder / index.DENSE_FILE).unlink(missing_ok=True)  # rows of the old map
        write_lexical_side()
        lexical_seconds = time.perf_counter() - started
    rows = _filled(keys, known)
    if vectors_behind and rows:
        index.write_dense(folder, np.vstack(rows))
    if vectors_behind and on_lexical:
        on_lexical(Built(folder, records, ordinals, 0, lexical_seconds, lexical_seconds))
    todo = list(dict.fromkeys(k for k in keys[len(rows) :] if k not in known))
    texts = dict(zip(keys, (t for _, t in plan), strict=True))
    done = 0
    for start in range(0, len(todo), BLOCK):
        block = todo[start : start + BLOCK]

        def save(batch: list[int], vectors: np.ndarray, block: list[str] = block) -> None:
            nonlocal done
            for n, vector in zip(batch, vectors, strict=True):
                known[block[n]] = vector
            done += len(batch)
            if progress:
                progress(done, len(todo))

        embeddings.embed_many([texts[k] for k in block], save)
        if vectors_behind:
            filled = _filled(keys, known)
            index.write_dense(folder, np.vstack(filled))
            index.write_vectors(folder, keys[: len(filled)], np.vstack(filled))
    vectors = (
        np.vstack([known[k] for k in keys])
        if keys
        else np.zeros((0, embeddings.dimension()), dtype=np.float32)
    )
    index.write_dense(folder, vectors)
    if not vectors_behind:
        write_lexical_side()  # the map last: it is what ties rows to chunks
        lexical_seconds = time.perf_counter() - started
    index.write_vectors(folder, keys, vectors)
    built = Built(
        folder, records, ordinals, len(todo), lexical_seconds, time.perf_counter() - started
    )
    if on_lexical and not vectors_behind:
        on_lexical(built)
    return built


def vector_counts(folder: str | Path | int) -> tuple[int, int]:
    """(vectors written, vectors the index will have) of an index folder: equal once the
    vectors that fill in behind the lexical index are all there; (0, 0) for no index."""
    data = index.load_map(index.index_dir(folder))
    if data is None:
        return 0, 0
    total = len(data.get("dense_ordinals", []))
    dense = index.load_dense(index.index_dir(folder)) if total else None
    return (min(dense.ntotal, total) if dense is not None else 0), total


def _filled(keys: list[str], known: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The vectors of the longest prefix of `keys` that has them all."""
    rows = []
    for key in keys:
        if key not in known:
            break
        rows.append(known[key])
    return rows


def dense_plan(records: Sequence[FileRecord]) -> list[tuple[int, str]]:
    """(chunk ordinal, text to embed) for every chunk of every file whose role is embedded,
    files' first chunks first, then their second, and so on: a partly filled index covers the
    head of every file (imports, signatures) before the depths of the longest ones."""
    by_depth: list[tuple[int, int, str]] = []
    ordinal = 0
    for record in records:
        for depth, chunk in enumerate(record.chunks):
            if record.role in DENSE_ROLES:
                by_depth.append((depth, ordinal, embedding_text(record.path, chunk)))
            ordinal += 1
    by_depth.sort(key=lambda item: item[:2])
    return [(ordinal, text) for _, ordinal, text in by_depth]


def chunk_store(records: Sequence[FileRecord]) -> dict[str, list[Any]]:
    """Each chunk's file number, first and last line and text, by ordinal."""
    return {
        "file": [n for n, r in enumerate(records) for _ in r.chunks],
        "lines": [[c.start_line, c.end_line] for r in records for c in r.chunks],
        "text": [c.text for r in records for c in r.chunks],
    }


@dataclass(frozen=True)
class RankedFile:
    path: str
    role: str
    score: float
    reasons: list[str]
    """The signals that ranked the file, the strongest first."""
    signals: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Signal → (the file's rank in it, from 1; the signal's score for it)."""


@dataclass(frozen=True)
class RankedChunk:
    path: str
    start_line: int
    end_line: int
    text: str
    score: float
    reason: str


@dataclass
class Ranking:
    """One query's ranking of a codebase's files, with what the query was taken to say."""

    cmap: CodeMap
    terms: QueryTerms
    result: Result
    embedded: bool
    """Whether the dense signal took part (vectors exist and the query was embedded)."""

    def files(self, k: int) -> list[RankedFile]:
        return [
            RankedFile(
                self.cmap.paths[f.file],
                self.cmap.roles[f.file],
                round(f.score, 6),
                list(f.reasons),
                dict(f.signals),
            )
            for f in self.result.files[:k]
        ]

    def chunks(
        self, k: int, chunks_of: Callable[[int], list[tuple[int, str]]]
    ) -> list[tuple[float, int, FileScore]]:
        """(score, chunk ordinal, file) of the k best chunks, best first: the chunks that
        matched in the best files, and for a file that matched as a whole (by name, path or
        file-level BM25) its chunk sharing most words with the query. `chunks_of(file)` gives
        a file's (ordinal, text) pairs."""
        wanted: list[tuple[float, int, FileScore]] = []
        words = set(self.terms.tokens)
        for file in self.result.files[: max(k, 8)]:
            for n, ordinal in enumerate(file.chunks[:k]):
                wanted.append((file.score / (1 + CHUNK_DECAY * n), ordinal, file))
            if not file.chunks:
                scored = [
                    (len(words & set(tokenize(text))), -ordinal, ordinal)
                    for ordinal, text in chunks_of(file.file)
                ]
                if scored:
                    wanted.append((file.score, max(scored)[2], file))
        wanted.sort(key=lambda item: -item[0])
        return wanted[:k]

    def reason(self, ordinal: int, file: FileScore) -> str:
        """Why a chunk is shown: how it matched ("dense+lexical") and what else its file did."""
        found = (("dense", self.result.dense), ("lexical", self.result.lexical))
        kinds = [name for name, ordinals in found if ordinal in ordinals]
        if not kinds and "files" in file.reasons:
            kinds = ["lexical"]
        extra = [_REASON[r] for r in file.reasons if r in _REASON]
        return ", ".join(["+".join(kinds)] * bool(kinds) + extra) or "related file"


class CodeIndex:
    """A codebase's index folder, for queries. Cheap to create: the indexes are loaded (and
    cached per process until their files change) on first use."""

    def __init__(self, folder: str | Path | int) -> None:
        self.folder = index.index_dir(folder)

    def code_map(self) -> CodeMap | None:
        # One CodeMap per loaded map.json, so what rag.search derives from it (kept on the
        # CodeMap) is built once per version of the index, not once per query.
        found = index.with_derived(self.folder, index.MAP_FILE, CodeMap.from_json)
        return None if found is None else found[1]

    def rank(
        self, query: str, *, dense: bool = True, cmap: CodeMap | None = None
    ) -> Ranking | None:
        """Rank the codebase's files for `query`; None when there is no index (or no query).
        `dense=False` leaves the query unembedded (lexical, symbol and path signals only)."""
        cmap = cmap or self.code_map()
        if cmap is None or not query.strip():
            return None
        terms = analyze(query)
        dense_index = index.load_dense(self.folder) if dense else None
        vector = None
        if dense_index is not None and dense_index.ntotal and cmap.dense_ordinals:
            vector = embeddings.embed([terms.text])[0]
        result = search(
            cmap,
            terms,
            vector,
            dense_index,
            index.load_lexical(self.folder),
            index.load_lexical(self.folder, index.FILES_POINTER),
        )
        return Ranking(cmap, terms, result, vector is not None)

    def rank_files(self, query: str, k: int = 10, *, dense: bool = True) -> list[RankedFile]:
        """The k files most likely to need reading (or changing) for `query`, with why."""
        ranking = self.rank(query, dense=dense)
        return [] if ranking is None or k <= 0 else ranking.files(k)

    def rank_chunks(self, query: str, k: int = 6, *, dense: bool = True) -> list[RankedChunk]:
        """The k chunks that best answer `query` (needs an index built with keep_text)."""
        ranking = self.rank(query, dense=dense)
        found = index.with_derived(self.folder, index.CHUNKS_FILE, _chunks_by_file)
        if ranking is None or found is None or k <= 0:
            return []
        store, by_file = found

        def chunks_of(file: int) -> list[tuple[int, str]]:
            return [(o, store["text"][o]) for o in by_file.get(file, [])]

        hits = []
        for score, ordinal, file in ranking.chunks(k, chunks_of):
            start, end = store["lines"][ordinal]
            hits.append(
                RankedChunk(
                    ranking.cmap.paths[file.file],
                    start,
                    end,
                    store["text"][ordinal],
                    round(score, 6),
                    ranking.reason(ordinal, file),
                )
            )
        return hits


def _chunks_by_file(store: dict[str, Any]) -> dict[int, list[int]]:
    """File number → its chunk ordinals."""
    by_file: dict[int, list[int]] = {}
    for ordinal, file in enumerate(store["file"]):
        by_file.setdefault(file, []).append(ordinal)
    return by_file
