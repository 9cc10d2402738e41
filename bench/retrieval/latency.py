"""Retrieval latency at 100k chunks, query embedding included.

    .venv/bin/python bench/retrieval/latency.py [--chunks 100000] [--queries 50]

The index is synthetic (random unit vectors, generated identifiers, 5 chunks a file), written
to a temporary folder, so no corpus is needed; everything per query is real and is the app's
own path, `rag.api.CodeIndex.rank`: the query is analysed, MiniLM embeds it, FAISS searches all
vectors exactly, BM25 scores chunks and files, and `rag.search` fuses and ranks the files. The
same queries are also timed without the query embedding (`dense=False`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
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

    from rag import api, embeddings, index
    from rag.lexical import document_tokens
    from rag.search import CodeMap

    rng = np.random.default_rng(0)
    words = [f"{a}_{b}" for a in ("get", "set", "parse", "load", "save", "check", "make", "run")
             for b in ("user", "token", "row", "header", "file", "rate", "limit", "session",
                       "cache", "plot", "array", "frame", "config", "unit", "card")]  # fmt: skip
    n_files = args.chunks // 5
    paths = [f"pkg/mod{n // 50}/file_{n}.py" for n in range(n_files)]
    chunk_files = [n // 5 for n in range(args.chunks)]
    symbols = [[f"{words[n % len(words)]}_{n % 997}"] for n in range(args.chunks)]
    # Tokenised as the indexer does (identifiers split), so query words meet document words.
    documents = [
        document_tokens(paths[chunk_files[n]], " ".join([*symbols[n], *rng.choice(words, 20)]))
        for n in range(args.chunks)
    ]
    vectors = rng.standard_normal((args.chunks, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    built = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    index.write_dense(folder, vectors)
    index.write_lexical(folder, documents)
    files = [sum(documents[f * 5 : f * 5 + 5], []) for f in range(n_files)]
    index.write_lexical(folder, files, index.FILES_POINTER)
    cmap = CodeMap.build(
        paths, ["source"] * n_files, chunk_files, symbols, list(range(args.chunks))
    )
    index.write_map(folder, cmap.to_json())
    code = api.CodeIndex(folder)
    print(f"built a {args.chunks}-chunk index in {time.perf_counter() - built:.1f}s", flush=True)

    embeddings.embed(["warm up"])
    code.rank(QUERIES[0])  # load the indexes outside the timings
    timings, searching = [], []
    for n in range(args.queries):
        query = QUERIES[n % len(QUERIES)]
        started = time.perf_counter()
        ranking = code.rank(query)
        timings.append((time.perf_counter() - started) * 1000)
        assert ranking is not None and ranking.embedded
        started = time.perf_counter()
        code.rank(query, dense=False)
        searching.append((time.perf_counter() - started) * 1000)
    shutil.rmtree(folder, ignore_errors=True)
    timings.sort()
    searching.sort()
    result = {
        "chunks": args.chunks,
        "queries": args.queries,
        "p50_ms": round(statistics.median(timings), 1),
        "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 1),
        "max_ms": round(timings[-1], 1),
        "without_embedding_p50_ms": round(statistics.median(searching), 1),
        "without_embedding_p95_ms": round(searching[int(0.95 * (len(searching) - 1))], 1),
    }
    print(json.dumps(result, indent=1))
    out = ROOT / "var" / "bench-results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "latency.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
