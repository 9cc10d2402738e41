"""File localization on swe-dev (42 SWE-bench issues): our retrieval vs two baselines.

    .venv/bin/python bench/retrieval/swe_dev.py            # after build_corpus.sh var/swe-dev

For each pack it runs the product's own engine, rag.api (the code the indexing job and
`retrieve()` call): `index_files` (parse the XML pack → roles → chunks → MiniLM vectors for every
source chunk → FAISS + chunk BM25 + file BM25 + code map, in a temporary folder) and
`CodeIndex.rank` for each instance (query analysis, the query's embedding, every signal). It
also re-ranks each first-stage ranking with rag.rerank (what investigation finds: a method the
task calls followed down the import graph) and prints before/after acc@1/3/5 and MRR, overall
and per repo ("ours+rerank"); --keep-facts keeps the first stage and each pack's symbol table
for bench/retrieval/rerank_replay.py. It also reports coverage (share of source chunks with a vector) and query latency with and
without the query embedding. In the same run it scores:
  naive  every file cut into 2000-character pieces, MiniLM, top pieces → files
  bm25   the README's BM25 over the whole pack (bm25s lucene, stemmer; needs PyStemmer)
Vectors are cached by text under var/bench-cache/ so reruns only rank. Rankings JSONL and the
scorer's JSON go to var/bench-results/swe-dev/.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
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
    ap.add_argument("--only", default="", help="only packs whose tag contains this")
    ap.add_argument(
        "--keep-facts",
        action="store_true",
        help="keep each pack's first-stage rankings and symbols.sqlite under --out/stage1/ "
        "(to study the re-ranking without indexing again)",
    )
    ap.add_argument(
        "--naive-max-mb",
        type=float,
        default=0,
        help="run the naive baseline only on packs up to this size (0: all); it embeds every "
        "2000-character piece of every file, hours on a small CPU for the full set",
    )
    args = ap.parse_args()
    setup_django()

    scorer = load_scorer()
    instances = scorer.load_jsonl(SWE_DEV / "instances.jsonl")
    by_tag: dict[str, list[dict[str, Any]]] = defaultdict(list)
    instances = [x for x in instances if args.only in f"{x['pypi_name']}-{x['pypi_version']}"]
    for x in instances:
        by_tag[f"{x['pypi_name']}-{x['pypi_version']}"].append(x)
    methods = args.methods.split(",")
    if "ours" in methods:
        methods.insert(methods.index("ours") + 1, "ours+rerank")
    cache = VectorCache(cache_folder(args.cache))
    print(f"vector cache: {len(cache.vectors)} vectors in {cache.folder}", flush=True)
    rankings: dict[str, dict[str, list[str]]] = {m: {} for m in methods}
    timings: dict[str, float] = defaultdict(float)
    coverage: dict[str, dict[str, int]] = {}
    latency: dict[str, list[float]] = {
        "with_embedding_ms": [],
        "without_embedding_ms": [],
        "rerank_ms": [],
    }
    stage1: list[dict[str, Any]] = []
    encoded = 0
    workdir = Path(tempfile.mkdtemp(prefix="swe-dev-index-"))
    # Small packs first, so a cold cache gives usable numbers early.
    for tag in sorted(by_tag, key=lambda t: (args.corpus / "packs" / f"{t}.xml").stat().st_size):
        group = by_tag[tag]
        size_mb = (args.corpus / "packs" / f"{tag}.xml").stat().st_size / 1e6
        clock = Stopwatch()
        packed = Pack(tag, args.corpus, workdir / tag, cache, dense=not args.no_dense)
        timings["index ours"] += clock()
        encoded += packed.built.computed
        coverage[tag] = packed.coverage()
        print(f"{tag}: ours: {coverage[tag]}, {packed.built.computed} encoded", flush=True)
        if "naive" in methods and not (0 < args.naive_max_mb < size_mb):
            clock = Stopwatch()
            packed.vectors["naive"], computed = embed_cached(packed.naive_texts(), cache)
            encoded += computed
            timings["embed naive"] += clock()
            packed.build_naive()
        if args.embed_only:
            continue
        for x in group:
            clock = Stopwatch()
            for method in methods:
                if method == "ours":
                    started = time.perf_counter()
                    first = packed.rank_ours(x["query"])
                    latency["with_embedding_ms"].append(1000 * (time.perf_counter() - started))
                    rankings[method][x["instance_id"]] = first
                    started = time.perf_counter()
                    rankings["ours+rerank"][x["instance_id"]] = packed.rerank(x["query"], first)
                    latency["rerank_ms"].append(1000 * (time.perf_counter() - started))
                    if args.keep_facts:
                        stage1.append({"instance_id": x["instance_id"], "tag": tag,
                                       "query": x["query"], "ranked_files": first[:50]})  # fmt: skip
                    started = time.perf_counter()
                    packed.rank_ours(x["query"], dense=False)
                    latency["without_embedding_ms"].append(1000 * (time.perf_counter() - started))
                elif method == "naive" and "naive" in packed.vectors:
                    rankings[method][x["instance_id"]] = packed.rank_naive(x["query"])
                elif method == "bm25":
                    rankings[method][x["instance_id"]] = packed.rank_bm25(x["query"])
            timings["query"] += clock()
        if args.keep_facts:
            kept = args.out / "stage1" / tag
            kept.mkdir(parents=True, exist_ok=True)
            shutil.copy(workdir / tag / "symbols.sqlite", kept / "symbols.sqlite")
        shutil.rmtree(workdir / tag, ignore_errors=True)
    cache.flush()
    if args.embed_only:
        print(f"cache filled: {encoded} texts encoded", flush=True)
        return 0

    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "timings_s": dict(timings),
        "encoded": encoded,
        "coverage": coverage,
        "latency": {name: percentiles(values) for name, values in latency.items() if values},
        "methods": {},
    }
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
    print("query latency (ms): " + json.dumps(report["latency"]))
    total = {k: sum(c[k] for c in coverage.values()) for k in ("source_chunks", "embedded")}
    print(f"coverage: {total['embedded']}/{total['source_chunks']} source chunks embedded")
    if "ours+rerank" in rankings:
        print("\n" + rerank_table(scorer, instances, rankings, n_repo))
    if stage1:
        with (args.out / "stage1" / "rankings.jsonl").open("w") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in stage1)
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


def rerank_table(
    scorer: Any,
    instances: list[dict[str, Any]],
    rankings: dict[str, dict[str, list[str]]],
    n_repo: dict[str, int],
) -> str:
    """The first stage and its re-ranking (rag.rerank) side by side, overall and per repo."""
    lines = ["re-ranking from investigation (rag.rerank), same first stage, same run:"]
    lines += ["| subset | n | acc@1 | acc@3 | acc@5 | MRR |", "|---|---|---|---|---|---|"]
    scored = {m: scorer.score(instances, rankings[m], (1, 3, 5)) for m in ("ours", "ours+rerank")}
    subsets = [("ALL", sum(n_repo.values()))] + [(r, n) for r, n in n_repo.items()]
    for label, n in subsets:
        cells = []
        for k in ("acc@1", "acc@3", "acc@5", "mrr"):
            before, after = (
                (scored[m][0] if label == "ALL" else scored[m][1][label])[k]
                for m in ("ours", "ours+rerank")
            )
            scale, digits = (1, 3) if k == "mrr" else (100, 1)
            cells.append(f"{scale * before:.{digits}f} → {scale * after:.{digits}f}")
        lines.append(f"| {label.split('/')[-1]} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 1),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
    }


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
    """One sdist's pack, indexed by rag.api exactly as the app indexes an upload, plus the
    baselines' data."""

    def __init__(
        self, tag: str, corpus: Path, folder: Path, cache: VectorCache, dense: bool
    ) -> None:
        from rag import api

        self.tag = tag
        self.corpus = corpus
        files = api.read_pack(corpus / "packs" / f"{tag}.xml")
        done = [0]

        def progress(n: int, total: int) -> None:
            if n - done[0] >= FLUSH_EVERY or n == total:
                done[0] = n
                cache.flush()
                print(f"  encoded {n}/{total}", flush=True)

        self.built = api.index_files(
            files, folder, known=cache.vectors, progress=progress, keep_text=False, embed=dense
        )
        cache.flush()
        from rag import profile, rerank

        profile.build_into(folder, self.built.records)  # symbols and imports, as the app does
        self.facts = rerank.CodeFacts.load(folder)
        self.index = api.CodeIndex(folder)
        self.dense = dense
        self.vectors: dict[str, np.ndarray] = {}
        self.naive_files: list[str] = []
        self._naive_texts: list[str] = []
        for record in self.built.records:
            for start in range(0, len(record.content), NAIVE_PIECE):
                piece = record.content[start : start + NAIVE_PIECE]
                if piece.strip():
                    self.naive_files.append(record.path)
                    self._naive_texts.append(piece)

    def coverage(self) -> dict[str, int]:
        """Source chunks (as classified now) and how many of them have a vector."""
        source = sum(len(r.chunks) for r in self.built.records if r.role == "source")
        return {"source_chunks": source, "embedded": len(self.built.dense_ordinals)}

    def naive_texts(self) -> list[str]:
        return self._naive_texts

    def build_naive(self) -> None:
        from rag import index

        self.naive_index = index.build_dense(self.vectors["naive"])

    def rank_ours(self, query: str, dense: bool = True) -> list[str]:
        return [f.path for f in self.index.rank_files(query, 100, dense=dense and self.dense)]

    def rerank(self, query: str, first: list[str]) -> list[str]:
        from rag import rerank

        return [r.path for r in rerank.rerank(query, first, self.facts)]

    def rank_naive(self, query: str) -> list[str]:
        from rag import embeddings
        from rag.index import top_dense

        hits = top_dense(self.naive_index, embeddings.embed([query])[0], 400)
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
