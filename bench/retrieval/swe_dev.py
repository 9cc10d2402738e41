"""File localization on swe-dev (42 SWE-bench issues): our retrieval vs two baselines.

    .venv/bin/python bench/retrieval/swe_dev.py            # after build_corpus.sh var/swe-dev

For each pack it runs the product's pipeline (parse the XML pack → roles → chunks → MiniLM
vectors for source chunks → FAISS + chunk BM25 + file BM25 + code map) and ranks files for each
instance with `rag.search.search`, the function `retrieve()` uses. In the same run it scores:
  naive  every file cut into 2000-character pieces, MiniLM, top pieces → files
  bm25   the README's BM25 over the whole pack (bm25s lucene, stemmer; needs PyStemmer)
Vectors are cached by text under var/bench-cache/ so reruns only rank. Rankings JSONL and the
scorer's JSON go to var/bench-results/swe-dev/.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, SWE_DEV, Stopwatch, VectorCache, cache_folder, setup_django  # noqa: E402

NAIVE_PIECE = 2000
FLUSH_EVERY = 512


def load_scorer() -> Any:
    spec = importlib.util.spec_from_file_location("swe_dev_score", SWE_DEV / "score.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / "var" / "swe-dev")
    ap.add_argument("--cache", type=Path, default=ROOT / "var" / "bench-cache")
    ap.add_argument("--out", type=Path, default=ROOT / "var" / "bench-results" / "swe-dev")
    ap.add_argument("--methods", default="ours,naive,bm25", help="comma-separated subset")
    ap.add_argument("--embed-only", action="store_true", help="fill the vector cache and stop")
    ap.add_argument("--no-dense", action="store_true", help="ours without the dense signal")
    ap.add_argument(
        "--naive-max-mb",
        type=float,
        default=0,
        help="run the naive baseline only on packs up to this size (0: all); it embeds every "
        "2000-character piece of every file, hours on a small CPU for the full set",
    )
    args = ap.parse_args()
    setup_django()

    from rag import embeddings

    scorer = load_scorer()
    instances = scorer.load_jsonl(SWE_DEV / "instances.jsonl")
    by_tag: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for x in instances:
        by_tag[f"{x['pypi_name']}-{x['pypi_version']}"].append(x)
    methods = args.methods.split(",")
    cache = VectorCache(cache_folder(args.cache))
    print(f"vector cache: {len(cache.vectors)} vectors in {cache.folder}", flush=True)
    rankings: dict[str, dict[str, list[str]]] = {m: {} for m in methods}
    timings: dict[str, float] = defaultdict(float)
    encoded = 0
    # Small packs first, so a cold cache gives usable numbers early.
    for tag in sorted(by_tag, key=lambda t: (args.corpus / "packs" / f"{t}.xml").stat().st_size):
        group = by_tag[tag]
        clock = Stopwatch()
        packed = Pack(tag, args.corpus)
        timings["parse+chunk"] += clock()
        size_mb = (args.corpus / "packs" / f"{tag}.xml").stat().st_size / 1e6
        for method in methods:
            if method == "bm25" or (method == "naive" and 0 < args.naive_max_mb < size_mb):
                continue
            texts = packed.dense_texts() if method == "ours" else packed.naive_texts()
            if args.no_dense and method == "ours":
                continue
            clock = Stopwatch()
            vectors, computed = embed_cached(texts, cache)
            encoded += computed
            timings[f"embed {method}"] += clock()
            print(f"{tag}: {method}: {len(texts)} texts, {computed} encoded", flush=True)
            packed.vectors[method] = vectors
        if args.embed_only:
            continue
        clock = Stopwatch()
        packed.build()
        timings["index"] += clock()
        for x in group:
            clock = Stopwatch()
            query_vector = None
            if "ours" in methods or "naive" in methods:
                query_vector = embeddings.embed([x["query"]])[0]
            for method in methods:
                if method == "ours":
                    rankings[method][x["instance_id"]] = packed.rank_ours(
                        x["query"], None if args.no_dense else query_vector
                    )
                elif method == "naive" and "naive" in packed.vectors:
                    rankings[method][x["instance_id"]] = packed.rank_naive(query_vector)
                elif method == "bm25":
                    rankings[method][x["instance_id"]] = packed.rank_bm25(x["query"])
            timings["query"] += clock()
    cache.flush()
    if args.embed_only:
        print(f"cache filled: {encoded} texts encoded", flush=True)
        return 0

    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"timings_s": dict(timings), "encoded": encoded, "methods": {}}
    n_repo: dict[str, int] = defaultdict(int)
    for x in instances:
        n_repo[x["repo"]] += 1
    for method in methods:
        path = args.out / f"{method}.jsonl"
        with path.open("w") as handle:
            for x in instances:
                ranked = rankings[method].get(x["instance_id"], [])
                handle.write(json.dumps({"instance_id": x["instance_id"], "ranked_files": ranked}))
                handle.write("\n")
        overall, repos, per, _ = scorer.score(instances, rankings[method], (1, 3, 5, 10))
        report["methods"][method] = {"overall": overall, "per_repo": repos, "per_instance": per}
        rows = [(r, n_repo[r], m) for r, m in repos.items()] + [("ALL", len(instances), overall)]
        print(f"\n## {method}\n" + scorer.table(rows, (1, 3, 5, 10)))
    print("\n" + summary(report, n_repo))
    if "naive" in methods and len(rankings["naive"]) < len(instances):
        subset = [x for x in instances if x["instance_id"] in rankings["naive"]]
        report["naive_subset"] = {
            m: scorer.score(subset, rankings[m], (1, 3, 5, 10))[0] for m in methods
        }
        lines = [f"naive ran on {len(subset)} instances; all methods on that subset:"]
        lines += ["| method | acc@1 | acc@3 | acc@5 | acc@10 | MRR |", "|---|---|---|---|---|---|"]
        for m, o in report["naive_subset"].items():
            accs = " | ".join(f"{100 * o[f'acc@{k}']:.1f}" for k in (1, 3, 5, 10))
            lines.append(f"| {m} | {accs} | {o['mrr']:.3f} |")
        print("\n" + "\n".join(lines))
    print("\ntimings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    return 0


def summary(report: dict[str, Any], n_repo: dict[str, int]) -> str:
    lines = ["| method | subset | n | acc@1 | acc@3 | acc@5 | acc@10 | MRR |", "|" + "---|" * 8]
    for method, result in report["methods"].items():
        rows = [("ALL", sum(n_repo.values()), result["overall"])]
        rows += [(r.split("/")[-1], n_repo[r], m) for r, m in result["per_repo"].items()]
        for label, n, m in rows:
            accs = " | ".join(f"{100 * m[f'acc@{k}']:.1f}" for k in (1, 3, 5, 10))
            lines.append(f"| {method} | {label} | {n} | {accs} | {m['mrr']:.3f} |")
    return "\n".join(lines)


def embed_cached(texts: list[str], cache: VectorCache) -> tuple[np.ndarray, int]:
    from rag.pipeline import embed_texts

    done = [0]

    def progress(n: int, total: int) -> None:
        if n - done[0] >= FLUSH_EVERY or n == total:
            done[0] = n
            cache.flush()
            print(f"  encoded {n}/{total}", flush=True)

    return embed_texts(texts, cache.vectors, progress)


class Pack:
    """One sdist's pack, indexed the way the product indexes it, plus the baselines' data."""

    def __init__(self, tag: str, corpus: Path) -> None:
        from rag import pipeline
        from rag.parsers.repomix import parse_repomix

        self.tag = tag
        self.corpus = corpus
        self.records = pipeline.prepare(
            parse_repomix((corpus / "packs" / f"{tag}.xml").read_bytes())
        )
        self.dense = pipeline.chunk_texts(self.records)
        self.vectors: dict[str, np.ndarray] = {}
        self.naive_files: list[str] = []
        self._naive_texts: list[str] = []
        for record in self.records:
            for start in range(0, len(record.content), NAIVE_PIECE):
                piece = record.content[start : start + NAIVE_PIECE]
                if piece.strip():
                    self.naive_files.append(record.path)
                    self._naive_texts.append(piece)

    def dense_texts(self) -> list[str]:
        return [text for _, text in self.dense]

    def naive_texts(self) -> list[str]:
        return self._naive_texts

    def build(self) -> None:
        from rag import index, pipeline

        started = time.perf_counter()
        dim = 384
        ours = self.vectors.get("ours", np.zeros((0, dim), dtype=np.float32))
        self.dense_index = index.build_dense(ours)
        self.chunk_lexical = index.build_lexical(pipeline.lexical_documents(self.records))
        self.file_lexical = index.build_lexical(pipeline.file_documents(self.records))
        ordinals = [o for o, _ in self.dense] if len(ours) else []
        self.cmap = pipeline.code_map(self.records, ordinals)
        if "naive" in self.vectors:
            self.naive_index = index.build_dense(self.vectors["naive"])
        self.build_seconds = time.perf_counter() - started

    def rank_ours(self, query: str, query_vector: np.ndarray | None) -> list[str]:
        from rag.query import analyze
        from rag.search import search

        ranked = search(
            self.cmap,
            analyze(query),
            query_vector,
            self.dense_index,
            self.chunk_lexical,
            self.file_lexical,
        )
        return [self.cmap.paths[s.file] for s in ranked.files[:100]]

    def rank_naive(self, query_vector: np.ndarray) -> list[str]:
        from rag.index import top_dense

        hits = top_dense(self.naive_index, query_vector, 400)
        return list(dict.fromkeys(self.naive_files[row] for row, _ in hits))[:100]

    def rank_bm25(self, query: str) -> list[str]:
        import bm25s
        import Stemmer

        if not hasattr(self, "_bm25"):
            self._stemmer = Stemmer.Stemmer("porter")
            files = json.loads((self.corpus / "packs" / f"{self.tag}.json").read_text())["files"]
            self._bm25_paths = list(files)
            tokens = bm25s.tokenize(
                [p + "\n" + files[p] for p in self._bm25_paths],
                stopwords="en",
                stemmer=self._stemmer,
                show_progress=False,
            )
            self._bm25 = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
            self._bm25.index(tokens, show_progress=False)
        q = bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False)
        res, _ = self._bm25.retrieve(q, k=len(self._bm25_paths), show_progress=False)
        return [self._bm25_paths[i] for i in res[0]][:100]


if __name__ == "__main__":
    raise SystemExit(main())
