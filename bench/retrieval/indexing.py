"""Cold and incremental index time through rag.api (the code the indexing job runs), against
the pipeline as it was before issue 10, in the same run.

    .venv/bin/python bench/retrieval/indexing.py [--pack var/swe-dev/packs/pylint-2.9.0.xml]
                                                 [--files 12] [--rounds 2]

before  roles per file, vectors for source chunks up to a budget of 4000 (round-robin over
        files), embedded 64 at a time in pack order, then BM25 and the map written
after   rag.api.index_files: roles per file and per tree, a vector for every source chunk,
        batched by length, the lexical side written first and the vectors behind it

Both run cold (no vectors to reuse), alternating round by round so a change in the machine's
load hits both alike; the report gives medians and their ratio, the time until the folder
answers lexically, and a re-index after a one-file change (only that file's chunks are
embedded). The pack is cut to its first --files source files so a run takes minutes on a
loaded 2-core machine. Results go to var/bench-results/indexing.json.
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

OLD_BUDGET = 4000
OLD_BATCH = 64


def index_before(files: list, folder: Path) -> float:  # type: ignore[type-arg]
    """The pipeline before issue 10, cold, into `folder`; seconds."""
    from rag import embeddings, index, pipeline
    from rag.chunking import embedding_text

    started = time.perf_counter()
    records = pipeline.prepare(files)
    by_depth = []
    ordinal = 0
    for n, record in enumerate(records):
        for depth, chunk in enumerate(record.chunks):
            if record.role == "source":
                by_depth.append((depth, n, ordinal, embedding_text(record.path, chunk)))
            ordinal += 1
    chosen = sorted(sorted(by_depth)[:OLD_BUDGET], key=lambda item: item[2])
    texts = [text for *_, text in chosen]
    parts = [embeddings.embed(texts[s : s + OLD_BATCH]) for s in range(0, len(texts), OLD_BATCH)]
    vectors = np.vstack(parts) if parts else np.zeros((0, 384), dtype=np.float32)
    index.write_dense(folder, vectors)
    index.write_lexical(folder, pipeline.lexical_documents(records))
    index.write_lexical(folder, pipeline.file_documents(records), index.FILES_POINTER)
    index.write_map(folder, pipeline.code_map(records, [o for _, _, o, _ in chosen]).to_json())
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = ROOT / "var" / "swe-dev" / "packs" / "pylint-2.9.0.xml"
    ap.add_argument("--pack", type=Path, default=default)
    ap.add_argument("--files", type=int, default=12, help="source files to keep (0: all)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    setup_django()

    from rag import api, embeddings, index
    from rag.parsers.repomix import ParsedFile
    from rag.roles import role_for

    parsed = api.read_pack(args.pack)
    keep = [f for f in parsed if role_for(f.path, f.content) == "source" and f.content.strip()]
    if args.files:
        keep = keep[: args.files]
    files = [ParsedFile(f.path, f.content) for f in keep]
    embeddings.embed(["warm up"])  # load the model outside the timings
    tmp = Path(tempfile.mkdtemp(prefix="bench-indexing-"))
    before: list[float] = []
    after: list[float] = []
    lexical: list[float] = []
    built = None
    for n in range(args.rounds):
        before.append(index_before(files, tmp / f"before-{n}"))
        built = api.index_files(files, tmp / f"after-{n}", keep_text=False)
        after.append(built.seconds)
        lexical.append(built.lexical_seconds)
        print(f"round {n + 1}: before {before[-1]:.1f}s, after {after[-1]:.1f}s", flush=True)
    assert built is not None

    # Incremental: change one file, reuse the last build's vectors.
    changed = list(files)
    changed[0] = ParsedFile(
        changed[0].path, changed[0].content + "\n\ndef added_by_the_bench():\n    return 42\n"
    )
    folder = tmp / f"after-{args.rounds - 1}"
    rebuilt = api.index_files(changed, folder, known=index.load_vectors(folder), keep_text=False)

    chunks = len(built.dense_ordinals)
    result = {
        "pack": args.pack.name,
        "files": len(files),
        "chunks_embedded": chunks,
        "cold_before_s_median": round(statistics.median(before), 2),
        "cold_after_s_median": round(statistics.median(after), 2),
        "cold_ratio_after_to_before": round(
            statistics.median(after) / statistics.median(before), 3
        ),
        "after_chunks_per_s": round(chunks / statistics.median(after), 1),
        "lexical_ready_s_median": round(statistics.median(lexical), 2),
        "reindex_one_file_s": round(rebuilt.seconds, 2),
        "reindex_vectors_computed": rebuilt.computed,
        "reindex_speedup": round(statistics.median(after) / rebuilt.seconds, 1),
        "rounds": {"before_s": before, "after_s": after, "lexical_ready_s": lexical},
    }
    print(json.dumps(result, indent=1))
    out = ROOT / "var" / "bench-results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "indexing.json").write_text(json.dumps(result, indent=1))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
