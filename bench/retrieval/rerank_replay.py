"""Re-rank a kept first stage again (rag.rerank), without indexing: before/after on swe-dev.

    .venv/bin/python bench/retrieval/swe_dev.py --keep-facts      # once: keeps stage1/
    .venv/bin/python bench/retrieval/rerank_replay.py [--out var/bench-results/swe-dev]

swe_dev.py reports the same before/after in its own run; this replays that run's first-stage
rankings (stage1/rankings.jsonl) with each pack's symbol table and import graph
(stage1/<pack>/symbols.sqlite), so a change to the re-ranking is measured in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, SWE_DEV  # noqa: E402
from swe_dev import load_scorer, rerank_table  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "var" / "bench-results" / "swe-dev")
    ap.add_argument("--show", action="store_true", help="list the instances the re-ranking moved")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from rag.rerank import CodeFacts, rerank

    scorer = load_scorer()
    instances = scorer.load_jsonl(SWE_DEV / "instances.jsonl")
    gold = {x["instance_id"]: x["gold_files"] for x in instances}
    rows = [json.loads(line) for line in (args.out / "stage1" / "rankings.jsonl").open()]
    rankings: dict[str, dict[str, list[str]]] = {"ours": {}, "ours+rerank": {}}
    for row in rows:
        facts = CodeFacts.load(args.out / "stage1" / row["tag"])
        first = row["ranked_files"]
        after = [r.path for r in rerank(row["query"], first, facts)]
        rankings["ours"][row["instance_id"]] = first
        rankings["ours+rerank"][row["instance_id"]] = after
        if args.show and after[:5] != first[:5]:
            wanted = set(gold[row["instance_id"]])
            print(row["instance_id"], marked(first, wanted), "→", marked(after, wanted))
    n_repo: dict[str, int] = defaultdict(int)
    for x in instances:
        n_repo[x["repo"]] += 1
    print(rerank_table(scorer, instances, rankings, n_repo))
    return 0


def marked(paths: list[str], gold: set[str]) -> list[str]:
    """The top five file names, the gold ones starred."""
    return [("*" if p in gold else "") + p.rsplit("/", 1)[-1] for p in paths[:5]]


if __name__ == "__main__":
    raise SystemExit(main())
