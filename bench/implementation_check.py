"""Did the code follow the plan? The implementation check on swe-dev (issue 25).

    .venv/bin/python bench/implementation_check.py [--per-repo 6] [--plans auto|grounding|gold]
                                                   [--profile local-1.5b] [--only ID,ID]
    .venv/bin/python bench/implementation_check.py --report

For each swe-dev instance of the grounding subset (bench/grounding.py's `subset`, the first
`--per-repo` of each repository), a plan and two implementations, checked by the product's
own code (conversations.implementation_diff.apply, in a child process, then
conversations.implementation.verify):

- The plan. `--plans grounding`: the plan the grounding bench's session wrote for the instance,
  read from its SQLite database (the sessions logs `--grounding-log`, by default
  bench/logs/grounding-1.5b.jsonl and var/grounding/sessions-local-1.5b.jsonl, name each
  "after" session and its data folder; bench/plan_scores.session_data reads the plan,
  read-only; a row whose session in that database is not the instance's task is an older
  run's and is passed over). The truth by name is the grounding
  bench's (plan_scores.targets_gold): a step on a definition the real fix changed was done, a
  step on another definition was not; a step on no definition has no name-level truth and is
  counted apart. `--plans gold`: the plan is built from gold_spans.jsonl, as
  bench/sketches.py builds its step: one step per definition the real fix changed that the
  code before the fix has ("Change `name`", its target, its code, as sketching.sketch_steps
  keeps it), plus as many steps on other definitions of the same files. A step carries the
  sketch the sketch bench's model wrote for that definition (bench/logs/sketches.jsonl, the
  latest that passed the check) when there is one whose lines are in the code; the others
  have none. `--plans auto` (the default): the grounding bench's plan where its database holds
  one, else the plan built from gold_spans; each row says which (`plans`), and the report
  gives each kind its own table.
- The code before the fix. swe-dev packs a release, not the fix's base commit: where the
  gold patch applies to the pack (`git apply`), the pack is the code before; where it does
  not but applies in reverse (`git apply -R`: the release already holds the fix), the pack
  with the fix taken out is; where neither, the instance is left out and counted.
- The real fix: the gold patch applied to that code.
- An unrelated change of similar size: the gold patch of another instance of the same
  repository (the nearest in changed lines) that applies to that code, either way round. Its
  truth by name: a step was done only if that instance's gold names include its target.

Scored: steps judged done under the real fix (gold steps; agreement with the name-level truth
over every step with one), false "done" under the unrelated change, unplanned files flagged,
seconds per check (the diff applied in its child process, the report, and the model's calls
when there are any), with the load average. Without `--profile` the model is never asked
(`judge=None`): a step whose target changed unlike its sketch stays "deviated". With
`--profile NAME` each deviated step is put to that profile's model as the product puts it
(implementation_checks.judge_by: the same prompt, `Equivalence` schema, a yes asked again on
the change undone, at most MAX_CALLS calls per check), straight to the provider, with no session.
One JSON line per instance, plan kind and profile is appended to the log
(bench/logs/implementation-check.jsonl) with the code it ran; rows already logged for the
same code are skipped, so a run that stops resumes. The report is written into `--out`
(bench/RESULTS-implementation-check.md) between markers of its own, leaving the rest of the
file as written.
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
from plan_scores import gold_spans, pack_files, session_data, targets_gold  # noqa: E402

from agents.sketches import window  # noqa: E402
from conversations.implementation import (  # noqa: E402
    DEVIATED,
    DONE,
    FileChange,
    Judge,
    fold,
    verify,
)
from conversations.implementation_checks import Equivalence, judge_by, judge_options  # noqa: E402
from conversations.implementation_diff import DiffRefused, apply, read  # noqa: E402
from rag.chunking import split_lines  # noqa: E402
from rag.languages import language_for  # noqa: E402
from rag.symbols import extract  # noqa: E402

DEFAULT_LOG = ROOT / "bench" / "logs" / "implementation-check.jsonl"
DEFAULT_OUT = ROOT / "bench" / "RESULTS-implementation-check.md"
GROUNDING_LOGS = [
    ROOT / "bench" / "logs" / "grounding-1.5b.jsonl",  # where this machine's runs log (--log)
    ROOT / "var" / "grounding" / "sessions-local-1.5b.jsonl",  # grounding.py's own default
]
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


def check(
    patch: str, before: dict[str, str], structured: dict[str, Any], judge: Judge | None = None
) -> tuple[dict[str, Any], float]:
    """The product's check of `patch` on `before`: applied in a child process, then reported
    (with the model's judgement of each deviated step when there is a judge)."""
    started = time.monotonic()
    paths = touched_old(patch)
    after = apply(patch, {p: before[p] for p in paths if p in before})
    changes = {}
    for path, new in after.items():
        old = before.get(path)
        if old != new:
            kind = "added" if old is None else "removed" if new is None else "modified"
            changes[path] = FileChange(path, kind, old, new)
    report = verify(structured, changes, judge=judge)
    return report, time.monotonic() - started


# ------------------------------------------------------------------ the plans


def grounding_plans(logs: list[Path], queries: dict[str, str]) -> dict[str, dict[str, Any]]:
    """instance → the plan its latest logged "after" session of the grounding bench wrote (the
    task, the structured plan, where it was read), for the sessions whose database is here,
    holds a plan, and holds it for that instance's task (`queries`: instance → its text). A
    grounding run starts a fresh database where older rows of the log still point: their
    session numbers now name other instances' sessions, and the task tells them apart."""
    found: dict[str, dict[str, Any]] = {}
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("condition", "after") != "after" or not row.get("session"):
                continue
            database = Path(str(row.get("data") or "")) / "bench.sqlite3"
            if not database.is_file() or row.get("instance") not in queries:
                continue
            try:
                data = session_data(database, int(row["session"]))
            except Exception:  # noqa: BLE001 (a database of another schema, or no such session)
                continue
            if " ".join(str(data.get("task") or "").split()) != " ".join(
                queries[row["instance"]].split()
            ):
                continue
            if isinstance(data.get("plan"), dict) and data["plan"].get("steps"):
                found[row["instance"]] = {
                    "structured": data["plan"], "task": data["task"] or "",
                    "session": row["session"], "database": str(database),
                    "code": row.get("code", ""),
                }  # fmt: skip
    return found


def on_definition(step: dict[str, Any]) -> bool:
    target = step.get("target")
    return isinstance(target, dict) and target.get("kind") == "definition"


def truths(
    steps: list[dict[str, Any]], spans: dict[str, list[str]], *, exact: bool = False
) -> list[bool | None]:
    """Per step, the name-level truth: whether it targets a definition `spans` changed; None
    for a step on no definition (no truth by name). A model's plan is judged as the grounding
    bench judges it (plan_scores.targets_gold: the same file and name, or the same last part);
    a plan built here names definitions exactly (`exact`), and another method of the same name
    in the file is not the one the fix changed."""
    if exact:
        return [
            s["target"]["name"] in spans.get(s["target"]["path"], []) if on_definition(s) else None
            for s in steps
        ]
    return [targets_gold(s["target"], spans) if on_definition(s) else None for s in steps]


class ModelJudge:
    """The product's judgement (implementation_checks.judge_by) on `profile`'s model, straight
    to the provider: a new judge per check (MAX_CALLS is per check), its calls counted."""

    def __init__(self, profile: str) -> None:
        from agents.providers import get_provider  # noqa: PLC0415

        self.profile = profile
        self.provider = get_provider(profile)
        self.calls = 0

    def for_task(self, task: str) -> Judge:
        from agents.providers.base import ProviderError  # noqa: PLC0415

        def ask(messages: list[Any]) -> Equivalence:
            self.calls += 1
            return self.provider.structured(messages, Equivalence, judge_options())

        return judge_by(ask, task, (ProviderError,))


def one(
    row: dict[str, Any],
    pool: list[dict[str, Any]],
    kept: dict[Any, Any],
    *,
    mode: str = "auto",
    grounded: dict[str, dict[str, Any]] | None = None,
    model: ModelJudge | None = None,
) -> dict[str, Any]:
    instance = row["instance_id"]
    gold = gold_spans()[instance]
    spans: dict[str, list[str]] = gold["gold_spans"]
    source = (grounded or {}).get(instance) if mode != "gold" else None
    out: dict[str, Any] = {
        "instance": instance, "repo": row["repo"], "code": code_ref(),
        "plans": "grounding" if source else "gold", "profile": model.profile if model else "",
    }  # fmt: skip
    if mode == "grounding" and source is None:
        out["fix"] = "no grounding plan"
        return out
    files = pack_files(str(CORPUS / "packs" / f"{row['pypi_name']}-{row['pypi_version']}.xml"))
    found = before_fix(gold["gold_patch"], files)
    if found is None:
        out["fix"] = "does not apply"
        return out
    out["fix"], before = found
    if source is not None:
        structured = source["structured"]
        steps = [s for s in structured.get("steps") or [] if isinstance(s, dict)]
        task = source["task"]
        out.update(session=source["session"], database=source["database"],
                   plan_code=source["code"])  # fmt: skip
    else:
        steps = plan_steps(instance, spans, before, kept)
        structured = {
            "steps": steps,
            "files": [{"path": p} for p in {s["files"][0]: 0 for s in steps}],
        }
        task = str(row.get("query") or "")
    if not steps:
        out["fix"] = "no gold definition found" if source is None else "plan has no steps"
        return out
    real_truth = truths(steps, spans, exact=source is None)
    out["steps"] = len(steps)
    out["gold_steps"] = sum(1 for t in real_truth if t)
    out["sketched"] = sum(1 for s in steps if s.get("sketch"))
    calls = model.calls if model else 0
    report, seconds = check(
        gold["gold_patch"], before, structured, model.for_task(task) if model else None
    )
    out["real"] = score(report, real_truth)
    out["real"].update(
        seconds=round(seconds, 2), unplanned=report["unplanned"],
        changed=report["changed_count"], model_calls=(model.calls - calls) if model else 0,
    )  # fmt: skip
    # The same plan without sketches: a step is done when its target changed.
    bare = {**structured, "steps": [{k: v for k, v in s.items() if k != "sketch"} for s in steps]}
    report, _ = check(gold["gold_patch"], before, bare)
    out["real_no_sketch"] = score(report, real_truth)

    # The unrelated change: another instance of the repository, nearest in size, that applies.
    size = changed_lines(gold["gold_patch"])
    others = sorted(
        (r for r in pool if r["repo"] == row["repo"] and r["instance_id"] != instance),
        key=lambda r: abs(changed_lines(gold_spans()[r["instance_id"]]["gold_patch"]) - size),
    )
    merged = {**files, **before}
    out["unrelated"] = None
    for other in others:
        patch = gold_spans()[other["instance_id"]]["gold_patch"]
        there = before_fix(patch, merged)
        if there is None:
            continue
        how, _base = there
        # Applied the way it applies: forward on the code, or its fix taken out (reversed).
        if how == "reversed":
            patch = reversed_patch(patch)
        state = {**before, **{p: merged[p] for p in touched_old(patch) if p in merged}}
        calls = model.calls if model else 0
        try:
            report, seconds = check(
                patch, state, structured, model.for_task(task) if model else None
            )
        except DiffRefused:
            continue
        other_spans = gold_spans()[other["instance_id"]]["gold_spans"]
        out["unrelated"] = score(report, truths(steps, other_spans, exact=source is None))
        out["unrelated"].update(
            instance=other["instance_id"], how=how, seconds=round(seconds, 2),
            size=changed_lines(patch), unplanned=report["unplanned"],
            changed=report["changed_count"], model_calls=(model.calls - calls) if model else 0,
        )  # fmt: skip
        break
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


def score(report: dict[str, Any], truth: list[bool | None]) -> dict[str, Any]:
    """The report's statuses against the truth by name (None: a step with no such truth)."""
    judged = [(t, r["status"], r["by"]) for t, r in zip(truth, report["steps"], strict=True)]
    true = [(st, by) for t, st, by in judged if t is True]
    false = [(st, by) for t, st, by in judged if t is False]
    return {
        "true_steps": len(true),
        "true_done": sum(1 for st, _ in true if st == DONE),
        "true_deviated": sum(1 for st, _ in true if st == DEVIATED),
        "false_steps": len(false),
        "false_done": sum(1 for st, _ in false if st == DONE),
        "false_deviated": sum(1 for st, _ in false if st == DEVIATED),
        "by_model": sum(1 for _, st, by in judged if by == "model"),
        "untruthed": [st for t, st, _ in judged if t is None],
        "statuses": [st for _, st, _ in judged],
    }


# ------------------------------------------------------------------ the report


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}% ({part}/{whole})" if whole else "n/a"


def report(rows: list[dict[str, Any]]) -> str:
    """Each kind of plan (and model) its own table: a grounding bench's plans are the model's,
    the ones built from gold_spans are this bench's."""
    kinds = sorted({(r.get("plans", "gold"), r.get("profile", "")) for r in rows})
    out = []
    for plans, profile in kinds:
        some = [
            r for r in rows if (r.get("plans", "gold"), r.get("profile", "")) == (plans, profile)
        ]
        title = (
            "the grounding bench's plans (the model's)" if plans == "grounding"
            else "plans built from gold_spans.jsonl"
        ) + (f", deviated steps judged by `{profile}`" if profile else ", no model call")  # fmt: skip
        out += [f"### {title[0].upper()}{title[1:]}", "", report_of(some), ""]
    return "\n".join(out).rstrip() + "\n"


def report_of(rows: list[dict[str, Any]]) -> str:
    used = [r for r in rows if r.get("real")]
    left = [r for r in rows if r.get("fix") == "does not apply"]
    nogold = [r for r in rows if r.get("fix") in ("no gold definition found", "plan has no steps")]
    noplan = [r for r in rows if r.get("fix") == "no grounding plan"]
    out = [
        f"Instances: {len(rows)}; checked {len(used)} "
        f"(gold patch applies to the pack: {sum(r['fix'] == 'applies' for r in used)}; "
        f"applies in reverse, the release already holds the fix: "
        f"{sum(r['fix'] == 'reversed' for r in used)}); left out, applies neither way: "
        f"{len(left)} ({', '.join(r['instance'] for r in left) or 'none'}); no step to check "
        f"(no gold definition found by name in the code before the fix, or a plan without "
        f"steps): {len(nogold)} ({', '.join(r['instance'] for r in nogold) or 'none'})"
        + (f"; no grounding plan: {len(noplan)}" if noplan else "")
        + ".",
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
    o_false = sum(r["real"]["false_done"] for r in used)
    o_done = sum(r["real"]["false_done"] + r["real"]["false_deviated"] for r in used)
    agree = g_done + g_dev + (o_steps - o_done)
    unrelated = [r for r in used if r.get("unrelated")]
    u_steps = sum(r["unrelated"]["false_steps"] for r in unrelated)
    u_done = sum(r["unrelated"]["false_done"] for r in unrelated)
    u_dev = sum(r["unrelated"]["false_deviated"] for r in unrelated)
    untruthed = [st for r in used for st in r["real"].get("untruthed", [])]
    by_model = sum(r["real"].get("by_model", 0) for r in used)
    calls = [r["real"].get("model_calls", 0) for r in used] + [
        r["unrelated"].get("model_calls", 0) for r in unrelated
    ]
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
        f"| real fix, the plan's sketches: gold steps judged done | {pct(g_done, g_steps)} |",
        f"| real fix, the plan's sketches: agreement with the name-level truth (done = done) | "
        f"{pct(g_done + o_steps - o_false, g_steps + o_steps)} |",
        f"| real fix: gold steps judged deviated (changed unlike the sketch; where the model "
        f"is asked) | {pct(g_dev, g_steps)} |",
        f"| real fix: agreement with the name-level truth over all steps (done or deviated = "
        f"changed) | {pct(agree, g_steps + o_steps)} |",
        f"| real fix: other steps judged done or deviated (false) | {pct(o_done, o_steps)} |",
        f"| real fix: steps judged done by the model's equivalence | {by_model} |",
        f"| steps on no definition (no name-level truth): their statuses | "
        f"{' '.join(f'{k} {untruthed.count(k)}' for k in sorted(set(untruthed))) or 'none'} |",
        f"| unrelated change: false done | {pct(u_done, u_steps)} |",
        f"| unrelated change: false deviated | {pct(u_dev, u_steps)} |",
        f"| unrelated change found for | {len(unrelated)} of {len(used)} instances |",
        f"| unplanned files flagged, real fix (of the files it changed) | "
        f"{sum(len(r['real']['unplanned']) for r in used)} of "
        f"{sum(r['real']['changed'] for r in used)} |",
        f"| unplanned files flagged, unrelated change (of the files it changed) | "
        f"{sum(len(r['unrelated']['unplanned']) for r in unrelated)} of "
        f"{sum(r['unrelated']['changed'] for r in unrelated)} |",
        f"| steps with a checked sketch | {sketched} |",
        f"| model calls per check: median, max | {statistics.median(calls):.0f}, {max(calls)} |"
        if calls and any(calls)
        else "| model calls | none |",
        f"| seconds per check (apply in a child process + report + model calls): median, max | "
        f"{statistics.median(times):.2f}, {max(times):.2f} |"
        if times
        else "| seconds | n/a |",
        f"| load average (1 min) during the run: median | {statistics.median(loads):.2f} |"
        if loads
        else "| load | n/a |",
        "",
        "Per instance (statuses in step order):",
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


def write_results(out: Path, per_repo: int, text: str) -> None:
    """`text` into `out` between this run's markers (per `--per-repo`), the rest kept."""
    start, end = f"<!-- bench: per-repo {per_repo} -->", f"<!-- /bench: per-repo {per_repo} -->"
    block = f"{start}\n{text.rstrip()}\n{end}"
    have = out.read_text() if out.exists() else "# Did the code follow the plan?\n"
    if start in have and end in have:
        head, rest = have.split(start, 1)
        new = head + block + rest.split(end, 1)[1]
    else:
        new = have.rstrip() + "\n\n" + block + "\n"
    out.write_text(new)


def latest(rows: list[dict[str, Any]], wanted: set[str]) -> list[dict[str, Any]]:
    """The latest row of each (instance, plan kind, profile) of the subset."""
    found = {
        (r["instance"], r.get("plans", "gold"), r.get("profile", "")): r
        for r in rows
        if r["instance"] in wanted
    }
    return list(found.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-repo", type=int, default=6)
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--plans", choices=("auto", "grounding", "gold"), default="auto")
    parser.add_argument(
        "--grounding-log", type=Path, action="append", help="default: " + ", ".join(
            str(p.relative_to(ROOT)) for p in GROUNDING_LOGS)
    )  # fmt: skip
    parser.add_argument("--profile", default="", help="the model judging deviated steps")
    parser.add_argument("--only", default="", help="comma-separated instance ids")
    parser.add_argument("--report", action="store_true", help="write the report from the log")
    args = parser.parse_args()
    rows = [json.loads(x) for x in args.log.read_text().splitlines()] if args.log.exists() else []
    pool = subset(args.per_repo)
    wanted = {r["instance_id"] for r in pool}
    if not args.report:
        logs = args.grounding_log or GROUNDING_LOGS
        queries = {r["instance_id"]: str(r.get("query") or "") for r in pool}
        grounded = grounding_plans(logs, queries) if args.plans != "gold" else {}
        print(f"grounding plans: {len(grounded)} ({', '.join(sorted(grounded))}) from "
              f"{', '.join(map(str, logs))}", flush=True)  # fmt: skip
        model = ModelJudge(args.profile) if args.profile else None
        ref = code_ref()
        done = {
            (r["instance"], r.get("plans", "gold"), r.get("profile", ""))
            for r in rows
            if r.get("code") == ref
        }
        only = set(args.only.split(",")) - {""}
        kept = sketches()
        args.log.parent.mkdir(parents=True, exist_ok=True)
        for row in pool:
            plans = (
                "grounding" if row["instance_id"] in grounded and args.plans != "gold" else "gold"
            )
            if (only and row["instance_id"] not in only) or (
                (row["instance_id"], plans, args.profile) in done
            ):
                continue
            result = one(row, pool, kept, mode=args.plans, grounded=grounded, model=model)
            with args.log.open("a") as log:
                log.write(json.dumps(result) + "\n")
            rows.append(result)
            real = result.get("real") or {}
            print(row["instance_id"], result["plans"], result.get("fix"), real.get("statuses"),
                  real.get("seconds"), flush=True)  # fmt: skip
    text = report(latest(rows, wanted))
    write_results(args.out, args.per_repo, text)
    print(text)


if __name__ == "__main__":
    main()
