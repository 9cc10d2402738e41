"""Did the code follow the plan? The implementation check on swe-dev (issue 25).

    .venv/bin/python bench/implementation_check.py [--per-repo 6] [--log FILE]
    .venv/bin/python bench/implementation_check.py --report [--per-repo 6] [--log FILE]

For each swe-dev instance of the grounding subset (bench/grounding.py's `subset`, the first
`--per-repo` of each repository), a plan and two implementations, checked by the product's
own code (conversations.implementation_diff.apply, in a child process, then
conversations.implementation.verify):

- The plan. The grounding bench's log (bench/logs/grounding-*.jsonl) holds scores, not plans:
  no steps, targets or sketches. So the plan's steps are built from gold_spans.jsonl, as
  bench/sketches.py builds its step: one step per definition the real fix changed that the
  code before the fix has ("Change `name`", its target, its code, as sketching.sketch_steps
  keeps it), plus as many steps on other definitions of the same files (the fix leaves them
  alone, by the name-level truth). A step carries the sketch the sketch bench's model wrote
  for that definition (bench/logs/sketches.jsonl, the latest that passed the check) when
  there is one whose lines are in the code; the others have none.
- The code before the fix. swe-dev packs a release, not the fix's base commit: where the
  gold patch applies to the pack (`git apply`), the pack is the code before; where it does
  not but applies in reverse (`git apply -R`: the release already holds the fix), the pack
  with the fix taken out is; where neither, the instance is left out and counted.
- The real fix: the gold patch applied to that code. The truth, by name: a step on a gold
  definition was done; a step on another definition was not.
- An unrelated change of similar size: the gold patch of another instance of the same
  repository (the nearest in changed lines) that applies to that code, either way round. Its
  truth by name: a step was done only if that instance's gold names include its target.

Scored: steps judged done under the real fix (gold steps; agreement with the name-level truth
over every step), false "done" under the unrelated change, unplanned files flagged, seconds
per check (the diff applied in its child process, then the report), with the load average.
The model is never asked here (`judge=None`): a step whose target changed unlike its sketch
stays "deviated", and is reported as such (it is where the model's one call would go).
One JSON line per instance is appended to the log with the code it ran; rows already logged
for the same code are skipped, so a run that stops resumes.
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
from plan_scores import gold_spans, pack_files  # noqa: E402

from agents.sketches import window  # noqa: E402
from conversations.implementation import DONE, FileChange, fold, verify  # noqa: E402
from conversations.implementation_diff import DiffRefused, apply, read  # noqa: E402
from rag.chunking import split_lines  # noqa: E402
from rag.languages import language_for  # noqa: E402
from rag.symbols import extract  # noqa: E402

DEFAULT_LOG = ROOT / "bench" / "logs" / "implementation_check.jsonl"
SKETCH_LOG = ROOT / "bench" / "logs" / "sketches.jsonl"
CORPUS = ROOT / "var" / "swe-dev"


def code_ref() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return head


def load() -> float:
    return round(os.getloadavg()[0], 2)


def sketches() -> dict[tuple[str, str], dict[str, Any]]:
    """(instance, path::name) → the latest sketch the sketch bench logged that passed."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    if SKETCH_LOG.exists():
        for line in SKETCH_LOG.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("passed") and row.get("after"):
                    found[(row["instance"], row["definition"])] = row
    return found


def touched_old(patch: str) -> list[str]:
    return sorted({t.old for t in read(patch) if t.old})


def before_fix(patch: str, files: dict[str, str]) -> tuple[str, dict[str, str]] | None:
    """("applies" | "reversed", the text before the fix of the files the patch touches)."""
    paths = touched_old(patch)
    have = {p: files[p] for p in paths if p in files}
    if len(have) != len(paths):
        return None
    try:
        apply(patch, have)
        return "applies", have
    except DiffRefused:
        pass
    try:
        back = apply(patch, have, reverse=True)
    except DiffRefused:
        return None
    return "reversed", {p: t for p, t in back.items() if t is not None}


def changed_lines(patch: str) -> int:
    return sum(
        1 for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def plan_steps(
    instance: str, spans: dict[str, list[str]], before: dict[str, str], kept: dict[Any, Any]
) -> list[dict[str, Any]]:
    """A step per gold definition found in the code before the fix, then as many on other
    definitions of the same files; each with `truth` (a gold definition) for scoring."""
    gold: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    for path, names in spans.items():
        text = before.get(path)
        if text is None:
            continue
        symbols = extract(path, text, language_for(path))
        if symbols is None:
            continue
        lines = split_lines(text)
        wanted = set(names)
        containers = {n.rsplit(".", 1)[0] for n in names if "." in n}
        for d in symbols.definitions:
            name = d.qualified_name
            if d.kind not in ("function", "method", "constructor", "class"):
                continue
            if name in containers:
                continue  # a class holding a gold method changes with it
            code = window(path, name, lines, (d.start_line, d.end_line), language_for(path))
            if code is None:
                continue
            step: dict[str, Any] = {
                "title": f"Change `{name}`",
                "detail": f"Make the change the task needs in `{name}` (`{path}:{code.start}`).",
                "files": [path],
                "target": {"kind": "definition", "name": name, "path": path,
                           "start": d.start_line, "end": d.end_line},
                "code": {"path": path, "start": code.start, "lines": list(code.lines)},
                "truth": name in wanted,
            }  # fmt: skip
            if name in wanted:
                sketch = kept.get((instance, f"{path}::{name}"))
                if sketch and _in_code(sketch.get("before") or [], list(code.lines)):
                    step["sketch"] = {
                        "before": sketch["before"], "after": sketch["after"],
                        "start": 0, "checked": True,
                    }  # fmt: skip
                gold.append(step)
            else:
                other.append(step)
    # As many other steps as gold ones, spread over the file (not only its first lines).
    if not gold:
        return []
    stride = max(1, len(other) // len(gold))
    return gold + other[::stride][: len(gold)]


def _in_code(before: list[str], code: list[str]) -> bool:
    want = [fold(b) for b in before if fold(b)]
    have = [fold(c) for c in code if fold(c)]
    n = len(want)
    return bool(want) and any(have[i : i + n] == want for i in range(len(have) - n + 1))


def check(patch: str, before: dict[str, str], structured: dict[str, Any]) -> tuple[dict, float]:
    """The product's check of `patch` on `before`: applied in a child process, then reported."""
    started = time.monotonic()
    paths = touched_old(patch)
    after = apply(patch, {p: before[p] for p in paths if p in before})
    changes = {}
    for path, new in after.items():
        old = before.get(path)
        if old != new:
            kind = "added" if old is None else "removed" if new is None else "modified"
            changes[path] = FileChange(path, kind, old, new)
    report = verify(structured, changes)
    return report, time.monotonic() - started


def one(row: dict[str, Any], pool: list[dict[str, Any]], kept: dict[Any, Any]) -> dict[str, Any]:
    gold = gold_spans()[row["instance_id"]]
    files = pack_files(str(CORPUS / "packs" / f"{row['pypi_name']}-{row['pypi_version']}.xml"))
    out: dict[str, Any] = {"instance": row["instance_id"], "repo": row["repo"], "code": code_ref()}
    found = before_fix(gold["gold_patch"], files)
    if found is None:
        out["fix"] = "does not apply"
        return out
    out["fix"], before = found
    steps = plan_steps(row["instance_id"], gold["gold_spans"], before, kept)
    if not steps:
        out["fix"] = "no gold definition found"
        return out
    structured = {"steps": steps, "files": [{"path": p} for p in {s["files"][0]: 0 for s in steps}]}
    out["steps"] = len(steps)
    out["gold_steps"] = sum(1 for s in steps if s["truth"])
    out["sketched"] = sum(1 for s in steps if s.get("sketch"))
    report, seconds = check(gold["gold_patch"], before, structured)
    out["real"] = score(steps, report, lambda s: s["truth"])
    out["real"]["seconds"] = round(seconds, 2)
    out["real"]["unplanned"] = report["unplanned"]
    out["real"]["changed"] = report["changed_count"]
    # The same plan without sketches: a step is done when its target changed.
    bare = {**structured, "steps": [{k: v for k, v in s.items() if k != "sketch"} for s in steps]}
    report, _ = check(gold["gold_patch"], before, bare)
    out["real_no_sketch"] = score(steps, report, lambda s: s["truth"])

    # The unrelated change: another instance of the repository, nearest in size, that applies.
    size = changed_lines(gold["gold_patch"])
    others = sorted(
        (r for r in pool if r["repo"] == row["repo"] and r["instance_id"] != row["instance_id"]),
        key=lambda r: abs(changed_lines(gold_spans()[r["instance_id"]]["gold_patch"]) - size),
    )
    merged = {**files, **before}
    for other in others:
        patch = gold_spans()[other["instance_id"]]["gold_patch"]
        there = before_fix(patch, merged)
        if there is None:
            continue
        how, base = there
        # Applied the way it applies: forward on the code, or its fix taken out (reversed).
        if how == "reversed":
            patch = reversed_patch(patch)
        other_names = gold_spans()[other["instance_id"]]["gold_spans"]
        state = {**before, **{p: merged[p] for p in touched_old(patch) if p in merged}}
        try:
            report, seconds = check(patch, state, structured)
        except DiffRefused:
            continue

        def truth(step: dict[str, Any], names: dict[str, list[str]] = other_names) -> bool:
            return step["target"]["name"] in names.get(step["target"]["path"], [])

        out["unrelated"] = score(steps, report, truth)
        out["unrelated"].update(
            instance=other["instance_id"], how=how, seconds=round(seconds, 2),
            size=changed_lines(patch), unplanned=report["unplanned"],
            changed=report["changed_count"],
        )  # fmt: skip
        break
    else:
        out["unrelated"] = None
    out["size"] = size
    out["load"] = load()
    return out


def reversed_patch(patch: str) -> str:
    """The patch taking its change out: - and + swapped, hunk headers' sides swapped."""
    import re  # noqa: PLC0415

    out = []
    header = re.compile(r"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$")
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = line[4:], lines[i + 1][4:]
            out += [f"--- {new.replace('b/', 'a/', 1)}", f"+++ {old.replace('a/', 'b/', 1)}"]
            i += 2
            continue
        found = header.match(line)
        if found:
            out.append(f"@@ -{found[2]} +{found[1]} @@{found[3]}")
        elif line.startswith("+"):
            out.append("-" + line[1:])
        elif line.startswith("-"):
            out.append("+" + line[1:])
        else:
            out.append(line)
        i += 1
    return "\n".join(out) + "\n"


def score(steps: list[dict[str, Any]], report: dict[str, Any], truth: Any) -> dict[str, Any]:
    rows = report["steps"]
    judged = [(s, r["status"]) for s, r in zip(steps, rows, strict=True)]
    true = [(s, st) for s, st in judged if truth(s)]
    false = [(s, st) for s, st in judged if not truth(s)]
    return {
        "true_steps": len(true),
        "true_done": sum(1 for _, st in true if st == DONE),
        "true_deviated": sum(1 for _, st in true if st == "deviated"),
        "false_steps": len(false),
        "false_done": sum(1 for _, st in false if st == DONE),
        "false_deviated": sum(1 for _, st in false if st == "deviated"),
        "statuses": [st for _, st in judged],
    }


# ------------------------------------------------------------------ the report


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}% ({part}/{whole})" if whole else "n/a"


def report(rows: list[dict[str, Any]]) -> str:
    used = [r for r in rows if r.get("real")]
    left = [r for r in rows if r.get("fix") == "does not apply"]
    nogold = [r for r in rows if r.get("fix") == "no gold definition found"]
    out = [
        f"Instances: {len(rows)}; checked {len(used)} "
        f"(gold patch applies to the pack: {sum(r['fix'] == 'applies' for r in used)}; "
        f"applies in reverse, the release already holds the fix: "
        f"{sum(r['fix'] == 'reversed' for r in used)}); left out, applies neither way: "
        f"{len(left)} ({', '.join(r['instance'] for r in left) or 'none'}); no gold "
        f"definition of gold_spans.jsonl found by name in the code before the fix: "
        f"{len(nogold)} ({', '.join(r['instance'] for r in nogold) or 'none'}).",
        "",
    ]
    b_steps = sum(r["real_no_sketch"]["true_steps"] for r in used)
    b_done = sum(r["real_no_sketch"]["true_done"] for r in used)
    b_other = sum(r["real_no_sketch"]["false_steps"] for r in used)
    b_false = sum(r["real_no_sketch"]["false_done"] for r in used)
    g_steps = sum(r["real"]["true_steps"] for r in used)
    g_done = sum(r["real"]["true_done"] for r in used)
    g_dev = sum(r["real"]["true_deviated"] for r in used)
    o_steps = sum(r["real"]["false_steps"] for r in used)
    o_done = sum(r["real"]["false_done"] + r["real"]["false_deviated"] for r in used)
    agree = g_done + g_dev + (o_steps - o_done)
    unrelated = [r for r in used if r.get("unrelated")]
    u_steps = sum(r["unrelated"]["false_steps"] for r in unrelated)
    u_done = sum(r["unrelated"]["false_done"] for r in unrelated)
    u_dev = sum(r["unrelated"]["false_deviated"] for r in unrelated)
    sketched = sum(r["sketched"] for r in used)
    times = [r["real"]["seconds"] for r in used] + [r["unrelated"]["seconds"] for r in unrelated]
    loads = [r["load"] for r in used if "load" in r]
    out += [
        "| measure | value |",
        "|---|---|",
        f"| real fix, plan without sketches: gold steps judged done | {pct(b_done, b_steps)} |",
        f"| real fix, plan without sketches: other steps judged done | {pct(b_false, b_other)} |",
        f"| real fix, plan without sketches: agreement with the name-level truth | "
        f"{pct(b_done + b_other - b_false, b_steps + b_other)} |",
        f"| real fix, with the sketch bench's sketches: gold steps judged done | "
        f"{pct(g_done, g_steps)} |",
        f"| real fix: gold steps judged deviated (changed unlike the model's sketch; where the "
        f"model would be asked) | {pct(g_dev, g_steps)} |",
        f"| real fix: agreement with the name-level truth over all steps (done or deviated = "
        f"changed) | {pct(agree, g_steps + o_steps)} |",
        f"| real fix: other steps judged done or deviated (false) | {pct(o_done, o_steps)} |",
        f"| unrelated change: false done | {pct(u_done, u_steps)} |",
        f"| unrelated change: false deviated | {pct(u_dev, u_steps)} |",
        f"| unrelated change found for | {len(unrelated)} of {len(used)} instances |",
        f"| unplanned files flagged, real fix (of the files it changed) | "
        f"{sum(len(r['real']['unplanned']) for r in used)} of "
        f"{sum(r['real']['changed'] for r in used)} |",
        f"| unplanned files flagged, unrelated change (of the files it changed) | "
        f"{sum(len(r['unrelated']['unplanned']) for r in unrelated)} of "
        f"{sum(r['unrelated']['changed'] for r in unrelated)} |",
        f"| steps with a sketch from bench/logs/sketches.jsonl | {sketched} |",
        f"| seconds per check (apply in a child process + report): median, max | "
        f"{statistics.median(times):.2f}, {max(times):.2f} |"
        if times
        else "| seconds | n/a |",
        f"| load average (1 min) during the run: median | {statistics.median(loads):.2f} |"
        if loads
        else "| load | n/a |",
        "",
        "| instance | fix | steps (gold) | real: statuses | unrelated (from) | unrelated: statuses |",
        "|---|---|---|---|---|---|",
    ]
    for r in used:
        u = r.get("unrelated")
        out.append(
            f"| {r['instance']} | {r['fix']} | {r['steps']} ({r['gold_steps']}) | "
            f"{' '.join(r['real']['statuses'])} | {u['instance'] if u else '—'} | "
            f"{' '.join(u['statuses']) if u else '—'} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-repo", type=int, default=6)
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    rows = [json.loads(x) for x in args.log.read_text().splitlines()] if args.log.exists() else []
    ref = code_ref()
    wanted = {r["instance_id"] for r in subset(args.per_repo)}
    if args.report:
        latest = {r["instance"]: r for r in rows if r["instance"] in wanted}
        print(report(list(latest.values())))
        return
    done = {r["instance"] for r in rows if r.get("code") == ref}
    pool = subset(args.per_repo)
    kept = sketches()
    args.log.parent.mkdir(parents=True, exist_ok=True)
    for row in pool:
        if row["instance_id"] in done:
            continue
        result = one(row, pool, kept)
        with args.log.open("a") as log:
            log.write(json.dumps(result) + "\n")
        real = result.get("real") or {}
        print(row["instance_id"], result.get("fix"), real.get("statuses"), real.get("seconds"))
    logged = [json.loads(x) for x in args.log.read_text().splitlines()]
    latest = {r["instance"]: r for r in logged if r["instance"] in wanted}
    print(report(list(latest.values())))


if __name__ == "__main__":
    main()
