"""Retrieval latency at 100k chunks, query embedding included.

    .venv/bin/python bench/retrieval/latency.py [--chunks 100000] [--queries 50]

The index is synthetic (random unit vectors, generated identifiers, 5 chunks a file) so no
corpus is needed; everything per query is real: MiniLM embeds the query, FAISS searches all
vectors exactly, BM25 scores chunks and files, and `rag.search` fuses and ranks the files.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, setup_django  # noqa: E402

QUERIES = [
    "where is the session token refreshed after login",
    "KeyError in parse_header when the file is empty",
    "add rate limiting to the API",
    "DataArray.rolling ignores the center argument",
    'Traceback: File "pkg/io/reader.py", line 40, in read_rows\nValueError: bad row',
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    args = ap.parse_args()
    setup_django()

    from rag import embeddings, index
    from rag.query import analyze
    from rag.search import CodeMap, search

    rng = np.random.default_rng(0)
    words = [f"{a}_{b}" for a in ("get", "set", "parse", "load", "save", "check", "make", "run")
             for b in ("user", "token", "row", "header", "file", "rate", "limit", "session",
                       "cache", "plot", "array", "frame", "config", "unit", "card")]  # fmt: skip
    n_files = args.chunks // 5
    paths = [f"pkg/mod{n // 50}/file_{n}.py" for n in range(n_files)]
    chunk_files = [n // 5 for n in range(args.chunks)]
    symbols = [[f"{words[n % len(words)]}_{n % 997}"] for n in range(args.chunks)]
    documents = [
        [*paths[chunk_files[n]].replace("/", " ").replace(".", " ").split(), *symbols[n],
         *rng.choice(words, 20).tolist()]
        for n in range(args.chunks)
    ]  # fmt: skip
    vectors = rng.standard_normal((args.chunks, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    built = time.perf_counter()
    dense = index.build_dense(vectors)
    chunk_lexical = index.build_lexical(documents)
    files = [sum(documents[f * 5 : f * 5 + 5], []) for f in range(n_files)]
    file_lexical = index.build_lexical(files)
    cmap = CodeMap.build(
        paths, ["source"] * n_files, chunk_files, symbols, list(range(args.chunks))
    )
    print(f"built a {args.chunks}-chunk index in {time.perf_counter() - built:.1f}s", flush=True)

    embeddings.embed(["warm up"])
    timings, searching = [], []
    for n in range(args.queries):
        query = QUERIES[n % len(QUERIES)]
        started = time.perf_counter()
        terms = analyze(query)
        vector = embeddings.embed([terms.text])[0]
        embedded = time.perf_counter()
        search(cmap, terms, vector, dense, chunk_lexical, file_lexical)
        timings.append((time.perf_counter() - started) * 1000)
        searching.append((time.perf_counter() - embedded) * 1000)
    timings.sort()
    searching.sort()
    result = {
        "chunks": args.chunks,
        "queries": args.queries,
        "p50_ms": round(statistics.median(timings), 1),
        "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 1),
        "max_ms": round(timings[-1], 1),
        "search_only_p50_ms": round(statistics.median(searching), 1),
        "search_only_p95_ms": round(searching[int(0.95 * (len(searching) - 1))], 1),
    }
    print(json.dumps(result, indent=1))
    out = ROOT / "var" / "bench-results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "latency.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
