"""Change sketches alone, on the definitions the real fixes changed (issue 18).

    .venv/bin/python bench/sketches.py [--per-repo 6] [--profile local-1.5b] [--log FILE]
    .venv/bin/python bench/sketches.py --report [--log FILE]

The grounding bench judges whole sessions, where a sketch is only as good as the step before
it: a wrong definition, and no sketch can overlap the fix. This bench asks the one question a
sketch answers: given the task and the code of a definition the real fix changed, does the
model's sketch pass the app's check, and does it touch the lines the fix touched?

For each swe-dev instance of the subset (the first `--per-repo` of each repository, the
grounding bench's order), the first definition of `gold_spans.jsonl` found in the packed
release. The sketch is written by the product's own code (agents.planning.sketching.
write_sketch: prompt, schema, check, one redo), calling the provider directly with the options
a session's turn uses. The step is what a plan that targets the right definition would say:
"Change `name` in `path`", citing the fix's first line (which picks the window of a long
definition, as a cited line does in a session).

Scored per definition: passed the check on the first call, passed after the redo, overlaps
the real fix (a "before" line the real patch has, as bench/plan_scores.py counts it for whole
plans), calls and seconds. One JSON line per definition is appended to the log with the code
it ran (`git describe`); rows already logged for the same code are skipped, so a run that
stops resumes. Run it alone on the machine: the load average is logged with each row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402

django.setup()

from grounding import subset  # noqa: E402
from plan_scores import fold, gold_spans, pack_files, patch_lines  # noqa: E402

from agents.planning.sketching import SKETCH_TOKENS, Brief, write_sketch  # noqa: E402
from agents.providers import get_provider  # noqa: E402
from agents.providers.base import CallOptions, structured_reply  # noqa: E402
from agents.sketches import window  # noqa: E402
from rag.chunking import split_lines  # noqa: E402
from rag.languages import language_for  # noqa: E402
from rag.symbols import extract  # noqa: E402

DEFAULT_LOG = ROOT / "bench" / "logs" / "sketches.jsonl"


def code_ref() -> str:
    """The commit, plus "+dirty" and a hash of the diff when agents/ has uncommitted changes."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    diff = subprocess.run(
        ["git", "diff", "HEAD", "--", "agents"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    if not diff:
        return head
    import hashlib  # noqa: PLC0415

    return f"{head}+dirty-{hashlib.sha1(diff.encode()).hexdigest()[:8]}"


def gold_definition(row: dict[str, Any], files: dict[str, str]) -> dict[str, Any] | None:
    """The first definition the real fix changed that the packed release has, preferring one
    holding a line of the fix: its path, name, lines, language, and that line (`near`). The
    line is found by its text, not the patch's numbers: the pack is a release, not the fix's
    base commit, and often already holds the fix (bench/plan_scores.py: patch_lines)."""
    gold = gold_spans()[row["instance_id"]]
    fix = patch_lines(gold["gold_patch"])
    candidates: list[dict[str, Any]] = []
    for path, names in gold["gold_spans"].items():
        text = files.get(path)
        if not names or text is None:
            continue
        language = language_for(path)
        symbols = extract(path, text, language)
        if symbols is None:
            continue
        lines = split_lines(text)
        for name in names:
            for d in symbols.definitions:
                if d.qualified_name != name:
                    continue
                near = next(
                    (n for n in range(d.start_line, d.end_line + 1)
                     if fold(lines[n - 1]) in fix.get(path, set())),
                    None,
                )  # fmt: skip
                candidates.append({
                    "path": path, "name": name, "span": (d.start_line, d.end_line),
                    "lines": lines, "language": language, "near": near,
                })  # fmt: skip
                break
    return next((c for c in candidates if c["near"]), candidates[0] if candidates else None)


def one(row: dict[str, Any], provider: Any, corpus: Path) -> dict[str, Any] | None:
    files = pack_files(str(corpus / "packs" / f"{row['pypi_name']}-{row['pypi_version']}.xml"))
    found = gold_definition(row, files)
    if found is None:
        return None
    code = window(
        found["path"], found["name"], found["lines"], found["span"], found["language"],
        found["near"],
    )  # fmt: skip
    if code is None:
        return None
    step = {
        "title": f"Change `{found['name']}`",
        "detail": f"Make the change the task needs in `{found['name']}` "
        f"(`{found['path']}:{found['near'] or code.start}`).",
        "files": [found["path"]],
    }
    calls: list[float] = []

    def ask(attempt: int, messages: list[Any], schema: type) -> Any:
        started = time.monotonic()
        options = CallOptions(max_tokens=SKETCH_TOKENS)  # as agents.turns makes a turn's
        try:
            return structured_reply(
                messages, schema, lambda m: "".join(provider.stream_structured(m, schema, options))
            )
        finally:
            calls.append(time.monotonic() - started)

    first_pass: list[bool] = []

    def asked(attempt: int, messages: list[Any], schema: type) -> Any:
        if attempt == 2:
            first_pass.append(False)
        return ask(attempt, messages, schema)

    sketch = write_sketch(Brief(row["query"], step, 1), code, asked)
    fix = patch_lines(gold_spans()[row["instance_id"]]["gold_patch"]).get(found["path"], set())
    before = {fold(b) for b in sketch.get("before") or []}
    return {
        "instance": row["instance_id"],
        "definition": f"{found['path']}::{found['name']}",
        "excerpt": [code.start, code.end],
        "passed_first": sketch["checked"] and not first_pass,
        "passed": sketch["checked"],
        "overlap": bool(before & fix),
        "calls": len(calls),
        "seconds": round(sum(calls), 1),
        "problem": sketch.get("problem", ""),
        "before": sketch.get("before"),
        "after": sketch.get("after"),
    }


def report(rows: list[dict[str, Any]]) -> str:
    out = [
        "| code | definitions | passed first call | passed (with redo) | overlaps the fix | "
        "passed and overlaps | calls | median s per definition | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by_code: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_code.setdefault(r["code"], []).append(r)
    for code, mine in by_code.items():
        n = len(mine)
        first = sum(r["passed_first"] for r in mine)
        passed = sum(r["passed"] for r in mine)
        overlap = sum(r["overlap"] for r in mine)
        both = sum(r["overlap"] and r["passed"] for r in mine)
        out.append(
            f"| {code} | {n} | {first}/{n} | {passed}/{n} | {overlap}/{n} | {both}/{n} | "
            f"{sum(r['calls'] for r in mine)} | {statistics.median(r['seconds'] for r in mine)} | "
            f"{statistics.median(r['load'] for r in mine):.2f} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-repo", type=int, default=6)
    parser.add_argument("--profile", default="local-1.5b")
    parser.add_argument("--corpus", type=Path, default=ROOT / "var" / "swe-dev")
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--only", default="", help="comma-separated instance ids")
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    rows = (
        [json.loads(line) for line in args.log.read_text().splitlines() if line.strip()]
        if args.log.exists()
        else []
    )
    if args.report:
        print(report(rows))
        return
    code = code_ref()
    done = {(r["instance"], r["profile"]) for r in rows if r["code"] == code}
    provider = get_provider(args.profile)
    only = {i for i in args.only.split(",") if i}
    for row in subset(args.per_repo):
        if (only and row["instance_id"] not in only) or (row["instance_id"], args.profile) in done:
            continue
        result = one(row, provider, args.corpus)
        if result is None:
            print(f"{row['instance_id']}: no gold definition in the pack", flush=True)
            continue
        result.update(code=code, profile=args.profile, load=round(os.getloadavg()[0], 2))
        args.log.parent.mkdir(parents=True, exist_ok=True)
        with args.log.open("a") as log:
            log.write(json.dumps(result) + "\n")
        print(
            f"{result['instance']} {result['definition']}: passed={result['passed']} "
            f"first={result['passed_first']} overlap={result['overlap']} "
            f"{result['seconds']} s load {result['load']}",
            flush=True,
        )
    print(report([json.loads(x) for x in args.log.read_text().splitlines() if x.strip()]))


if __name__ == "__main__":
    main()
