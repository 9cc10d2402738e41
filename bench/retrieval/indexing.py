"""Indexing throughput and incremental re-index speed, through the real indexing job.

    .venv/bin/python bench/retrieval/indexing.py [--pack var/swe-dev/packs/pylint-2.9.0.xml]

1. Raw encoder rate: `embeddings.embed` over exactly the texts the pipeline embeds.
2. End to end: `index_codebase` (parse → roles → chunk → embed → FAISS + BM25 + map → rows in a
   throwaway SQLite database), with no vectors to reuse. Ratio = end-to-end rate / raw rate.
3. Change one file and run `index_codebase` again: only that file's changed chunks are embedded.
   Speedup = full index time / re-index time.
The pack is cut to its first --files source files so the run takes minutes on a small CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, setup_django  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = ROOT / "var" / "swe-dev" / "packs" / "pylint-2.9.0.xml"
    ap.add_argument("--pack", type=Path, default=default)
    ap.add_argument("--files", type=int, default=40, help="source files to keep (0: all)")
    args = ap.parse_args()
    setup_django()

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_test_environment

    from rag import embeddings, pipeline
    from rag.indexing import index_codebase
    from rag.models import Codebase
    from rag.parsers.repomix import parse_repomix

    tmp = Path(tempfile.mkdtemp(prefix="bench-indexing-"))
    settings.DATA_DIR = tmp
    settings.PLANAGENTS_INDEX_DIR = tmp / "indexes"
    connection.settings_dict["TEST"]["NAME"] = str(tmp / "bench.sqlite3")
    setup_test_environment()
    connection.creation.create_test_db(verbosity=0)

    parsed = parse_repomix(args.pack.read_bytes())
    records = pipeline.prepare(parsed)
    keep = [r for r in records if r.role in pipeline.DENSE_ROLES and r.chunks]
    if args.files:
        keep = keep[: args.files]
    files = {r.path: r.content for r in keep}
    texts = [t for _, t in pipeline.chunk_texts(pipeline.prepare(_parsed(files)))]
    print(f"pack {args.pack.name}: {len(files)} files, {len(texts)} chunks to embed", flush=True)

    embeddings.embed(texts[:8])  # load the model outside the timings
    started = time.perf_counter()
    for start in range(0, len(texts), pipeline.EMBED_BATCH):
        embeddings.embed(texts[start : start + pipeline.EMBED_BATCH])
    raw = time.perf_counter() - started

    owner = get_user_model().objects.create_user("bench")
    codebase = Codebase.objects.create(owner=owner, name="bench", upload_path="uploads/bench")
    folder = tmp / "uploads" / "bench"
    folder.mkdir(parents=True)
    (folder / "001-pack.json").write_text(json.dumps({"files": files}))
    started = time.perf_counter()
    index_codebase(codebase.pk)
    full = time.perf_counter() - started
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error

    changed = dict(files)
    first = next(iter(changed))
    changed[first] += "\n\ndef added_by_the_bench():\n    return 42\n"
    (folder / "001-pack.json").write_text(json.dumps({"files": changed}))
    started = time.perf_counter()
    index_codebase(codebase.pk)
    incremental = time.perf_counter() - started
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error

    result = {
        "files": len(files),
        "chunks_embedded": len(texts),
        "raw_encoder_s": round(raw, 2),
        "raw_rate_per_s": round(len(texts) / raw, 1),
        "end_to_end_s": round(full, 2),
        "end_to_end_rate_per_s": round(len(texts) / full, 1),
        "throughput_ratio": round(raw / full, 3),
        "reindex_one_file_s": round(incremental, 2),
        "reindex_speedup": round(full / incremental, 1),
    }
    print(json.dumps(result, indent=1))
    out = ROOT / "var" / "bench-results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "indexing.json").write_text(json.dumps(result, indent=1))
    return 0


def _parsed(files: dict[str, str]) -> list:  # type: ignore[type-arg]
    from rag.parsers.repomix import ParsedFile

    return [ParsedFile(path, content) for path, content in files.items()]


if __name__ == "__main__":
    raise SystemExit(main())
