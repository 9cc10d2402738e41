"""MiniLM encoder speed on this machine: torch threads × batch size × length-sorted batches ×
max sequence length, in interleaved rounds (so a change in the machine's load hits every
configuration alike), medians and ratios to the configuration the app used before.

    .venv/bin/python bench/retrieval/encoder.py [--texts 192] [--rounds 3]

Texts are real chunks (this repository's Python, cut and labelled as the indexer does). Every
configuration is also checked for quality: the cosine of its vectors to the reference ones
(1 thread, batch 32, 128 pieces). Results go to var/bench-results/encoder.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT  # noqa: E402

CONFIGS = {
    # name: (threads, batch, sorted by length, max sequence length)
    "before: 1 thread, batch 32, pack order, 128": (1, 32, False, 128),
    "1 thread, batch 32, by length, 128": (1, 32, True, 128),
    "2 threads, batch 32, by length, 128": (2, 32, True, 128),
    "1 thread, batch 8, by length, 128": (1, 8, True, 128),
    "1 thread, batch 64, by length, 128": (1, 64, True, 128),
    "1 thread, batch 32, by length, 256": (1, 32, True, 256),
}


def chunk_texts(limit: int) -> list[str]:
    from rag.chunking import chunk_file, embedding_text
    from rag.languages import language_for
    from rag.pipeline import parse

    texts = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        if any(part in {".venv", "var", "node_modules"} for part in path.parts):
            continue
        rel = path.relative_to(ROOT).as_posix()
        text, language = path.read_text(), language_for(rel)
        found = parse(rel, text, language)
        for chunk in chunk_file(text, language, found.definitions if found else None):
            texts.append(embedding_text(rel, chunk))
    random.Random(0).shuffle(texts)
    return texts[:limit]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=192)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from rag import embeddings

    texts = chunk_texts(args.texts)
    model = embeddings.get_model()

    def run(threads: int, batch: int, by_length: bool, seq: int) -> tuple[float, np.ndarray]:
        torch.set_num_threads(threads)
        model.max_seq_length = seq
        order = (
            [n for group in embeddings.batches_by_length(texts, batch) for n in group]
            if by_length
            else list(range(len(texts)))
        )
        started = time.perf_counter()
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            part = order[start : start + batch]
            out[part] = model.encode(
                [texts[n] for n in part],
                batch_size=batch,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return len(texts) / (time.perf_counter() - started), out

    _, reference = run(1, 32, False, 128)
    rates: dict[str, list[float]] = {name: [] for name in CONFIGS}
    cosine: dict[str, float] = {}
    for n in range(args.rounds):
        for name, config in CONFIGS.items():
            rate, vectors = run(*config)
            rates[name].append(rate)
            cosine[name] = float(np.min(np.sum(vectors * reference, axis=1)))
        print(f"round {n + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
    torch.set_num_threads(embeddings.threads())
    model.max_seq_length = embeddings.MAX_TOKENS
    base = statistics.median(rates[next(iter(CONFIGS))])
    result = {
        name: {
            "median_texts_per_s": round(statistics.median(values), 2),
            "ratio_to_before": round(statistics.median(values) / base, 2),
            "rounds": [round(v, 2) for v in values],
            "min_cosine_to_reference": round(cosine[name], 4),
        }
        for name, values in rates.items()
    }
    lines = ["| configuration | texts/s (median) | ratio | min cosine |", "|---|---|---|---|"]
    for name, r in result.items():
        lines.append(
            f"| {name} | {r['median_texts_per_s']} | {r['ratio_to_before']} "
            f"| {r['min_cosine_to_reference']} |"
        )
    print("\n".join(lines))
    out = ROOT / "var" / "bench-results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "encoder.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
