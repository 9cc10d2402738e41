"""Which definitions a plan may change, before any model runs: is the one the real fix changed
among them? (issue 18, "gold definition offered", the ceiling of "gold definition targeted").

    .venv/bin/python bench/retrieval/definitions.py            # after build_corpus.sh var/swe-dev

A session's steps are held to the definitions in the code its agents were shown
(agents.citations.shown_definitions over the evidence and the retrieved chunks). The model's
own lookups vary from run to run; this bench measures the part the app decides alone, for all
42 swe-dev instances in a minute once the vectors are cached:
  chunks@k   the definitions in the k chunks `retrieve()` shows (k = 6, as sessions do, and more)
  +named     those plus what the task names (agents.investigation.task_names)
and, for each, how many definitions that is: a longer list is a harder choice for the model.
Then the order a session offers them in (agents.citations.offered_definitions: what the task
points at, then retrieval's order, reaching to the next chunks): where the real fix's
definition stands, as acc@k and MRR; a prompt lists the first 16.
An instance counts when its gold spans (../shared/bench/swe-dev/gold_spans.jsonl) name a
definition; a definition matches by file and name, or by file and last name part, as
bench/plan_scores.targets_gold scores a step.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import ROOT, SWE_DEV, VectorCache, cache_folder, setup_django  # noqa: E402

KS = (6, 12, 24)
SHOWN = 6
"""settings.PLANAGENTS_RETRIEVAL_K: the chunks a session shows."""


def gold_names(spans: dict[str, list[str]]) -> dict[str, list[str]]:
    """The definitions a fix changed, by file; a module's docstring is not one."""
    return {p: [n for n in names if n != "docstring"] for p, names in spans.items() if names}


def matches(path: str, name: str, gold: dict[str, list[str]]) -> bool:
    return any(name == g or name.split(".")[-1] == g.split(".")[-1] for g in gold.get(path, []))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / "var" / "swe-dev")
    ap.add_argument("--cache", type=Path, default=ROOT / "var" / "bench-cache")
    ap.add_argument("--only", default="", help="only packs whose tag contains this")
    ap.add_argument("--out", type=Path, default=None, help="per-instance JSONL")
    args = ap.parse_args()
    setup_django()
    from plan_scores import gold_spans  # noqa: PLC0415

    from agents.citations import Source, offered_definitions, shown_definitions  # noqa: PLC0415
    from agents.investigation.task_names import named_in_task  # noqa: PLC0415
    from agents.planning.nodes import DEFINITION_CHUNKS as FURTHER  # noqa: PLC0415
    from rag import api, profile  # noqa: PLC0415
    from rag.navigation import Navigator  # noqa: PLC0415
    from rag.paths import FileSet  # noqa: PLC0415

    instances = [
        json.loads(line) for line in (SWE_DEV / "instances.jsonl").read_text().splitlines()
    ]
    instances = [x for x in instances if args.only in f"{x['pypi_name']}-{x['pypi_version']}"]
    by_tag: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for x in instances:
        by_tag[f"{x['pypi_name']}-{x['pypi_version']}"].append(x)
    spans = gold_spans()
    cache = VectorCache(cache_folder(args.cache))
    workdir = Path(tempfile.mkdtemp(prefix="swe-dev-defs-"))
    rows: list[dict[str, Any]] = []
    for tag, group in sorted(by_tag.items()):
        folder = workdir / tag
        files = api.read_pack(args.corpus / "packs" / f"{tag}.xml")
        built = api.index_files(files, folder, known=cache.vectors, keep_text=True)
        cache.flush()
        profile.build_into(folder, built.records)
        texts = {f.path: f.content for f in files if isinstance(f.content, str)}

        def holding(needles: Any, texts: dict[str, str] = texts) -> Any:
            return ((p, t) for p, t in texts.items() if all(n in t for n in needles))

        navigator = Navigator(folder, texts=holding)
        paths = FileSet(texts)
        index = api.CodeIndex(folder)
        for x in group:
            gold = gold_names(spans[x["instance_id"]]["gold_spans"])
            if not any(gold.values()):
                continue
            row: dict[str, Any] = {"instance": x["instance_id"], "gold": gold}
            named = [
                Source(n.path, n.line, max(n.end_line, n.line), f"E{i}")
                for i, n in enumerate(named_in_task(x["query"], paths, navigator), 1)
                if n.found and n.line > 0
            ]
            for k in KS:
                chunks = [
                    Source(c.path, c.start_line, c.end_line)
                    for c in index.rank_chunks(x["query"], k)
                ]
                for label, sources in ((f"chunks@{k}", chunks), (f"+named@{k}", named + chunks)):
                    offered = shown_definitions(sources, navigator.outline)
                    hit = [n for n, d in offered.items() if matches(d.path, n, gold)]
                    row[label] = {"offered": len(offered), "gold": hit}
            # What a session offers (agents.planning.nodes.NodeContext.definitions): the
            # definitions shown, then those of the next chunks, most likely first; a prompt
            # lists the first LISTED_DEFINITIONS.
            deep = [
                Source(c.path, c.start_line, c.end_line)
                for c in index.rank_chunks(x["query"], FURTHER)
            ]
            found = offered_definitions(named + deep[:SHOWN], deep[SHOWN:], navigator.outline)
            offered = list(found.items())
            row["rank"] = next(
                (i for i, (n, d) in enumerate(offered, 1) if matches(d.path, n, gold)), None
            )
            row["offered"] = len(offered)
            rows.append(row)
            found_at = " ".join(
                f"{lab}:{bool(v['gold']):d}/{v['offered']}" for lab, v in row.items() if "@" in lab
            )
            print(x["instance_id"], f"rank {row['rank']}", found_at, flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    labels = [lab for lab in rows[0] if "@" in lab] if rows else []
    print(f"\n{len(rows)} instances whose fix changes a named definition\n")
    print("| definitions offered from | gold among them | median offered |\n|---|---|---|")
    for lab in labels:
        hit = sum(bool(r[lab]["gold"]) for r in rows)
        size = statistics.median(r[lab]["offered"] for r in rows)
        print(f"| {lab} | {hit}/{len(rows)} ({100 * hit / len(rows):.0f} %) | {size:g} |")
    ranks = [r["rank"] for r in rows]
    print(
        "\n| definitions as a session orders them | acc@1 | acc@3 | acc@5 | acc@10 | acc@16 | MRR |"
    )
    print("|---|---|---|---|---|---|---|")
    accs = " | ".join(
        f"{sum(1 for r in ranks if r and r <= k)}/{len(ranks)}" for k in (1, 3, 5, 10, 16)
    )
    mrr = sum(1 / r for r in ranks if r) / max(len(ranks), 1)
    size = statistics.median(r["offered"] for r in rows)
    print(
        f"| offered (the task's names and chunks@{SHOWN}, then chunks to @{FURTHER}; "
        f"median {size:g}) | {accs} | {mrr:.3f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
