"""Vietnamese task titles vs their English originals, on swe-dev packs.

    .venv/bin/python bench/retrieval/vietnamese.py

vi_queries.jsonl holds 10 swe-dev issue titles (English, as filed) and Vietnamese translations
written for this bench. Each is ranked with our retrieval three ways: English, Vietnamese as
typed (the glossary bridge switched off), and Vietnamese through `rag.vietnamese.bridge`.
Packs are indexed by rag.api as in swe_dev.py, with vectors from its cache (run that first).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, SWE_DEV, VectorCache, cache_folder, setup_django  # noqa: E402


def main() -> int:
    setup_django()
    from swe_dev import Pack, load_scorer

    import rag.query

    scorer = load_scorer()
    instances = {x["instance_id"]: x for x in scorer.load_jsonl(SWE_DEV / "instances.jsonl")}
    rows = [json.loads(line) for line in (Path(__file__).parent / "vi_queries.jsonl").open()]
    cache = VectorCache(cache_folder(ROOT / "var" / "bench-cache"))
    workdir = Path(tempfile.mkdtemp(prefix="vi-index-"))
    packs: dict[str, Pack] = {}
    rankings: dict[str, dict[str, list[str]]] = {"en": {}, "vi_raw": {}, "vi_bridged": {}}
    bridge = rag.query.bridge
    for row in rows:
        x = instances[row["instance_id"]]
        tag = f"{x['pypi_name']}-{x['pypi_version']}"
        if tag not in packs:
            packs[tag] = Pack(tag, ROOT / "var" / "swe-dev", workdir / tag, cache, dense=True)
        pack = packs[tag]
        for name, text, bridged in (
            ("en", row["en"], True),
            ("vi_raw", row["vi"], False),
            ("vi_bridged", row["vi"], True),
        ):
            rag.query.bridge = bridge if bridged else (lambda t: t)  # type: ignore[assignment]
            rankings[name][row["instance_id"]] = pack.rank_ours(text)
        rag.query.bridge = bridge
    subset = [instances[row["instance_id"]] for row in rows]
    lines = ["| query | acc@1 | acc@3 | acc@5 | acc@10 | MRR |", "|---|---|---|---|---|---|"]
    result = {}
    for name, ranking in rankings.items():
        overall, _, per, _ = scorer.score(subset, ranking, (1, 3, 5, 10))
        result[name] = {"overall": overall, "per_instance": per}
        accs = " | ".join(f"{100 * overall[f'acc@{k}']:.0f}" for k in (1, 3, 5, 10))
        lines.append(f"| {name} | {accs} | {overall['mrr']:.3f} |")
    print("\n".join(lines))
    out = ROOT / "var" / "bench-results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "vietnamese.json").write_text(json.dumps(result, indent=1))
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
