"""How well planning sessions on the real local model are grounded in the code and say what
to change (issues 11 and 18).

    .venv/bin/python bench/grounding.py --index-only     # index the subset's packs first
    .venv/bin/python bench/grounding.py [--per-repo 6] [--profile local-1.5b] [--before-ref REV]
                                        [--after-ref HEAD]

Runs planning mode end to end, approving the checkpoint, on a fixed subset of
../shared/bench/swe-dev: the first `--per-repo` instances of each repository in
instances.jsonl order (24 instances, all four repositories, by default), round-robin over the
repositories, so a partial run still covers all four. Each instance runs twice, interleaved:
"before" is the code at `--before-ref` (a git worktree under var/, its own data dir and
database, run as it shipped), "after" the code at `--after-ref` the same way, or the working
tree when no `--after-ref` is given. Run a bench that spans hours with `--after-ref HEAD`:
edits to the working tree during the run then change nothing it measures. Both are scored by
today's code (bench/plan_scores.py, which calls agents.plan_quality like the plan page does).
Every row records the commit it ran (`code`; `+dirty` when the working tree had uncommitted
changes); a resumed run reruns the sessions whose code is not the one asked for, and the
report counts only the rows of the codes asked for.

Per session: gold file in the plan's Files; a step targeting a definition the real fix changed
(gold_spans.jsonl); a sketch whose "before" lines share a line with the real patch; invented
paths (in Files and in every section) and names; non-objections in Decisions; steps on real
definitions; sketches that matched the code; steps citing an existing path:line; LLM calls,
tokens, wall time. Results go to bench/RESULTS-grounding.md (rewritten after every session, so
a partial run yields numbers) and one JSON line per session to the log (`--log`); a run that
stops is resumed by running the same command again (sessions already logged are skipped).
Each "after" session's calls (sizes and times, no prompts) are appended to
bench/logs/trace-PROFILE.jsonl, the history bench/estimate.py replays.

Each session runs in its own process (`--one`) on one persistent data dir and SQLite
database per condition (`--data`, `--data`-before), so each pack is indexed once per code
version. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import estimate as estimate_bench  # noqa: E402

INSTANCES = ROOT.parent / "shared" / "bench" / "swe-dev" / "instances.jsonl"
CONDITIONS = ("before", "after")


def subset(per_repo: int) -> list[dict[str, Any]]:
    """The first `per_repo` instances of each repository, round-robin over repositories."""
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in INSTANCES.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            by_repo[row["repo"]].append(row)
    picked = [rows[:per_repo] for rows in by_repo.values()]
    return [rows[i] for i in range(per_repo) for rows in picked if i < len(rows)]


# ------------------------------------------------------------------ one session (child)


def one(
    instance_id: str, condition: str, corpus: Path, limit: float, profile: str = "local"
) -> dict[str, Any]:
    os.environ["PLANAGENTS_EVIDENCE_STEPS"] = (
        "0" if condition == "before" else os.environ.get("PLANAGENTS_EVIDENCE_STEPS", "6")
    )
    sys.path.insert(0, str(ROOT / "bench"))
    import llm_session  # noqa: PLC0415 (sets up Django on PLANAGENTS_BENCH_DATA)

    from conversations import services  # noqa: PLC0415
    from conversations.models import PlanningSession  # noqa: PLC0415

    row = llm_session._instance(instance_id)
    user, codebase, indexing = indexed(corpus, row)

    started = time.monotonic()
    session = services.start_session(
        user,
        codebase=codebase,
        task=row["query"],
        mode=PlanningSession.Mode.PLANNING,
        agent_a_profile=profile,
        agent_b_profile=profile,
    )
    _, checkpoint, done = llm_session.drive(user, [session.pk], started, limit=limit)
    session.refresh_from_db()
    result = {
        "instance": instance_id,
        "repo": row["repo"],
        "condition": condition,
        "profile": profile,
        "session": session.pk,
        "status": session.status,
        "seconds": round(done[session.pk], 1),
        "checkpoint_s": round(checkpoint.get(session.pk, float("nan")), 1),
        "indexing_s": round(indexing, 1),
        "calls": session.calls_used,
        "tokens": session.tokens_used,
        **measure(session, row["gold_files"]),
    }
    if session.status == PlanningSession.Status.RUNNING:
        services.stop(user, session.pk)
    return result


def indexed(corpus: Path, row: dict[str, Any]) -> tuple[Any, Any, float]:
    """(bench user, the ready codebase of `row`'s pack, seconds spent indexing it now: 0 when
    an earlier run indexed it)."""
    import llm_session  # noqa: PLC0415
    from django.contrib.auth import get_user_model  # noqa: PLC0415
    from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: PLC0415
    from django.core.management import call_command  # noqa: PLC0415

    from rag.api import vector_counts  # noqa: PLC0415
    from rag.indexing import resume_vectors_if_stalled  # noqa: PLC0415
    from rag.models import Codebase  # noqa: PLC0415
    from rag.services import create_codebase_from_upload  # noqa: PLC0415

    pack = corpus / "packs" / f"{row['pypi_name']}-{row['pypi_version']}.xml"
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    codebase = Codebase.objects.filter(owner=user, name=pack.stem, status="ready").first()
    index_started = time.monotonic()
    if codebase is None:
        Codebase.objects.filter(owner=user, name__startswith=pack.stem).delete()
        upload = SimpleUploadedFile(pack.name, pack.read_bytes(), content_type="text/xml")
        codebase = create_codebase_from_upload(user, pack.stem, [upload], allow_duplicate=True)
        llm_session.wait(
            lambda: Codebase.objects.get(pk=codebase.pk).status in ("ready", "failed"),
            "indexing",
            timeout=3600,
        )
        codebase.refresh_from_db()
        if not codebase.is_ready:
            raise SystemExit(f"indexing {pack.name} failed: {codebase.error}")
    # Sessions are measured on a whole index: the vectors fill in behind the lexical side.
    while (counts := vector_counts(codebase.pk))[0] < counts[1]:
        # An earlier run stopped before they were all in: resumed once its lease runs out.
        codebase.refresh_from_db()
        if not resume_vectors_if_stalled(codebase) and codebase.status == "failed":
            raise SystemExit(f"indexing {pack.name} failed: {codebase.error}")
        time.sleep(5)
    return user, codebase, time.monotonic() - index_started


def measure(session: Any, gold: list[str]) -> dict[str, Any]:
    """The grounding numbers of `session`'s final plan (zeros when there is none)."""
    from agents.plan import codebase_paths  # noqa: PLC0415
    from conversations.models import Message, Plan  # noqa: PLC0415
    from rag.models import CodeFile  # noqa: PLC0415
    from rag.paths import find_citations  # noqa: PLC0415

    plan = Plan.objects.filter(session=session).order_by("-version").first()
    if plan is None:
        return {"ranks": _or_error(considered_ranks, session, gold), "plan": False, "gold": False, "model_steps": 0, "model_steps_cited": 0, "gold_named": 0, "gold_total": len(gold),
                "files": 0, "invented": 0, "steps": 0, "steps_cited": 0,
                "citations": 0, "out_of_range": 0, "missing_file_citations": 0}  # fmt: skip
    data = plan.structured
    files = [f for f in data.get("files") or [] if isinstance(f, dict)]
    named = {f.get("path") for f in files}
    invented = [f for f in files if f.get("status") in ("missing", "invalid")]
    paths = codebase_paths(session.codebase)
    lines = dict(
        CodeFile.objects.filter(codebase=session.codebase).values_list("path", "line_count")
    )
    steps = [s for s in data.get("steps") or [] if isinstance(s, dict)]
    cited_steps = citations = out_of_range = missing = 0
    for step in steps:
        text = " ".join(_strings(step))
        good = False
        for cite in find_citations(text):
            citations += 1
            path = paths.resolve(cite.path).path
            if path is None:
                missing += 1
            elif cite.start > lines.get(path, 0):
                out_of_range += 1
            else:
                good = True
        cited_steps += good
    # The same count on the model's own reply (the finalize turn's data), before the app's
    # deterministic grounding: what the fix adds.
    reply = (
        Message.objects.filter(session=session, node="finalize_plan", role="agent")
        .order_by("-seq")
        .values_list("data", flat=True)
        .first()
    )
    model_steps = [s for s in (reply or {}).get("steps") or [] if isinstance(s, dict)]
    model_cited = sum(
        any(
            (p := paths.resolve(c.path).path) is not None and c.start <= lines.get(p, 0)
            for c in find_citations(" ".join(_strings(s)))
        )
        for s in model_steps
    )
    # A step's `symbol` (the definition it changes, from the enum of those shown): the
    # model's own pick of real code, which the app then cites.
    model_named = sum(
        isinstance(s.get("symbol"), str) and s["symbol"] not in ("", "none") for s in model_steps
    )
    return {
        "ranks": _or_error(considered_ranks, session, gold),
        "model_steps_named": model_named,
        "model_steps": len(model_steps),
        "model_steps_cited": model_cited,
        "plan": True,
        "gold": any(g in named for g in gold),
        "gold_named": sum(g in named for g in gold),
        "gold_total": len(gold),
        "files": len(files),
        "invented": len(invented),
        "steps": len(steps),
        "steps_cited": cited_steps,
        "citations": citations,
        "out_of_range": out_of_range,
        "missing_file_citations": missing,
    }


RANKINGS = {
    "retrieval": "first-stage retrieval (rag.retrieval.retrieve_files, the task as query)",
    "considered_plain": "the files the plan may name, evidence first, then retrieval",
    "considered": "the same re-ranked with the import graph (rag.rerank), as shipped",
}


def considered_ranks(session: Any, gold: list[str]) -> dict[str, list[int | None]]:
    """Where each gold file stands (from 1; None: absent) in the lists of files the session's
    plan could consider: retrieval alone, then after investigation (issue 11, item 12)."""
    from agents.investigation.evidence import candidate_paths  # noqa: PLC0415
    from agents.planning.nodes import NodeContext  # noqa: PLC0415
    from conversations.models import PlanningState  # noqa: PLC0415
    from rag.retrieval import retrieve_files  # noqa: PLC0415

    state = PlanningState.objects.filter(session=session).first()
    if state is None:
        return {}
    context = NodeContext.load(session, state)
    plain = candidate_paths(context.evidence, [h.path for h in context.hits])
    lists = {
        "retrieval": [f.path for f in retrieve_files(session.codebase, session.task, k=40)],
        "considered_plain": [p for p in plain if p in context.paths],
        "considered": list(context.candidates()),
    }
    return {
        name: [found.index(g) + 1 if g in found else None for g in gold]
        for name, found in lists.items()
    }


def remeasure(rows: list[dict[str, Any]], corpus: Path) -> list[dict[str, Any]]:
    """`rows` with their grounding numbers measured again from the database (the same code as
    the run, so a column added since is filled for sessions already run)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import llm_session  # noqa: F401, PLC0415 (sets up Django on PLANAGENTS_BENCH_DATA)
    from django.core.management import call_command  # noqa: PLC0415

    from conversations.models import PlanningSession  # noqa: PLC0415

    call_command("migrate", verbosity=0)  # a database an older commit made
    out = []
    for row in rows:
        if row.get("condition") == "after":
            session = PlanningSession.objects.get(pk=row["session"])
            gold = llm_session._instance(row["instance"])["gold_files"]
            row = {**row, **measure(session, gold)}
        out.append({**row, **scored(row, corpus)})
    return out


def _or_error(measure: Any, *args: Any) -> Any:
    """`measure(*args)`, or the error it raised (the session's row is kept either way, and
    `--report` measures it again)."""
    try:
        return measure(*args)
    except Exception as exc:  # noqa: BLE001 (a bench column, not the product)
        return {"error": f"{type(exc).__name__}: {exc}"}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# ------------------------------------------------------------------ the run (parent)


def report(rows: list[dict[str, Any]], planned: int, note: str) -> str:
    out = [
        "# Grounding on swe-dev: planning sessions on the local model",
        "",
        "`make bench-grounding` (bench/grounding.py). Planning mode end to end, checkpoint "
        "auto-approved, the same local model for both agents. Subset: the first instances of "
        "each repository in instances.jsonl order, round-robin over repositories; each "
        "instance runs **before** (the code at the `--before-ref` commit, as it shipped) and "
        "**after** (the `--after-ref` commit, or the working tree), interleaved, on their own "
        "databases; both scored by today's bench/plan_scores.py (agents.plan_quality, the plan "
        "page's quality line).",
        "",
        "Code: "
        + ", ".join(sorted({f"{r['condition']} {r.get('code', '?')}" for r in rows}))
        + ".",
        "",
        f"Sessions finished: {len(rows)} of {planned}. {note}",
        "",
        "| instance | run | profile | status | gold file in Files | gold definition offered "
        "| gold definition targeted | "
        "sketch shares a line with the fix | steps on real definitions | sketches matching "
        "the code | invented paths / names | non-objections in Decisions | steps citing an "
        "existing path:line | LLM calls | wall s | load | fix's added lines already in the "
        "pack |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['instance']} | {r['condition']} | {r.get('profile', '–')} | {r['status']} | "
            f"{r['gold_named']}/{r['gold_total']} | {_yes(r.get('gold_def_offered'))} | "
            f"{_yes(r.get('gold_def'))} | "
            f"{_yes(r.get('sketch_overlap'))} | {r.get('on_definitions', '–')}/{r['steps']} | "
            f"{r.get('sketches_checked', '–')}/{r.get('sketches', '–')} | "
            f"{r.get('invented_paths_all', r['invented'])} / {r.get('invented_names', '–')} | "
            f"{r.get('non_objections', '–')} | {r['steps_cited']}/{r['steps']} | {r['calls']} | "
            f"{r['seconds']:.0f} | {r.get('load_before', '–')}→{r.get('load_after', '–')} | "
            f"{r.get('fix_in_pack', '–')} |"
        )
    out += [
        "",
        "## Totals",
        "",
        "| run | sessions | plans | gold file in Files | gold definition offered | gold "
        "definition targeted | sketch "
        "shares a line with the fix | invented paths | invented names | non-objections in "
        "Decisions | steps on real definitions | sketches matching the code | steps citing an "
        "existing path:line | median LLM calls | median wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for condition in CONDITIONS:
        mine = [r for r in rows if r["condition"] == condition]
        if not mine:
            continue
        n = len(mine)
        plans = sum(1 for r in mine if r["plan"])
        steps = sum(r["steps"] for r in mine)
        gold = sum(bool(r["gold"]) for r in mine)
        gold_def = sum(bool(r.get("gold_def")) for r in mine)
        shown = sum(bool(r.get("gold_def_offered")) for r in mine)
        overlap = sum(bool(r.get("sketch_overlap")) for r in mine)
        on_defs = sum(r.get("on_definitions", 0) for r in mine)
        sketches = sum(r.get("sketches", 0) for r in mine)
        matched = sum(r.get("sketches_checked", 0) for r in mine)
        cited = sum(r["steps_cited"] for r in mine)
        out.append(
            f"| {condition} | {n} | {plans} | {gold}/{n} ({_pct(gold, n)}) | "
            f"{shown}/{n} ({_pct(shown, n)}) | {gold_def}/{n} ({_pct(gold_def, n)}) | {overlap}/{n} ({_pct(overlap, n)}) | "
            f"{sum(r.get('invented_paths_all', r['invented']) for r in mine)} | "
            f"{sum(r.get('invented_names', 0) for r in mine)} | "
            f"{sum(r.get('non_objections', 0) for r in mine)} | "
            f"{on_defs}/{steps} ({_pct(on_defs, steps)}) | "
            f"{matched}/{sketches} ({_pct(matched, sketches)}) | "
            f"{cited}/{steps} ({_pct(cited, steps)}) | "
            f"{statistics.median(r['calls'] for r in mine):.0f} | "
            f"{statistics.median(r['seconds'] for r in mine):.0f} |"
        )
    names = [(r["instance"], r["condition"], r.get("invented_name_list")) for r in rows]
    flagged = [f"- {i} ({c}): " + ", ".join(f"`{x}`" for x in n) for i, c, n in names if n]
    if flagged:
        out += ["", "## Names flagged as invented", "", *flagged]
    out += ranking_table(rows)
    out += [
        "",
        "Targets (issue 18, the 1.5B default): gold file in Files ≥ 90 %, gold definition "
        "targeted ≥ 60 %, a sketch sharing a line with the real fix ≥ 40 %, invented paths and "
        "names 0, non-objections in Decisions 0, median session ≤ 4 min on a quiet machine. "
        "A sketch line counts only with ≥ 10 characters, and the fix's lines are its "
        "removed, context and added ones: the packed release usually holds the fix already "
        "(last column; swe-dev's README, Caveats), so a sketch on the fixed code quotes its "
        "added lines. Wall time excludes indexing (each "
        "pack is indexed once per data dir, vectors included: `--index-only`); load is the "
        "1-minute load average before → after the session.",
        "",
    ]
    return "\n".join(out)


def _yes(value: Any) -> str:
    return "–" if value is None else ("yes" if value else "no")


def ranking_table(rows: list[dict[str, Any]]) -> list[str]:
    """acc@k (every gold file in the top k, as swe-dev's scorer counts) of the lists of files
    the plan could consider, on the "after" sessions (those that investigated)."""
    mine = [r for r in rows if r["condition"] == "after" and "retrieval" in r.get("ranks", {})]
    if not mine:
        return []
    out = [
        "",
        f'## Files the plan considers (item 12), {len(mine)} "after" sessions',
        "",
        "| list | acc@1 | acc@3 | acc@5 | gold absent |",
        "|---|---|---|---|---|",
    ]
    for name, label in RANKINGS.items():
        ranks = [r["ranks"].get(name) or [None] for r in mine]
        cells = []
        for k in (1, 3, 5):
            hit = sum(all(x is not None and x <= k for x in rank) for rank in ranks)
            cells.append(f"{hit}/{len(mine)} ({_pct(hit, len(mine))})")
        absent = sum(any(x is None for x in rank) for rank in ranks)
        out.append(f"| {label} | {' | '.join(cells)} | {absent} |")
    return out


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "–"


def commit_of(ref: str) -> str:
    """The short commit `ref` names."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", f"{ref}^{{commit}}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return found.stdout.strip()


def working_tree_code() -> str:
    """The working tree's commit, with "+dirty" when tracked files differ from it."""
    changed = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return commit_of("HEAD") + ("+dirty" if changed else "")


def worktree(ref: str) -> Path:
    """A checkout of `ref` under var/ (made once), for the sessions of a fixed commit."""
    tree = ROOT / "var" / f"code-{ref}"
    if not (tree / "bench" / "grounding.py").exists():
        shutil.rmtree(tree, ignore_errors=True)
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--force", "--detach", str(tree), ref],
            check=True,
            capture_output=True,
        )
    # Its code finds swe-dev as ROOT.parent / "shared", beside the checkout, as here.
    shared = tree.parent / "shared"
    if not shared.exists():
        shared.symlink_to(ROOT.parent / "shared")
    return tree


def scored(row: dict[str, Any], corpus: Path) -> dict[str, Any]:
    """The issue-18 columns of a logged session, by today's code (bench/plan_scores.py)."""
    import llm_session  # noqa: F401, PLC0415 (sets up Django on PLANAGENTS_BENCH_DATA)
    import plan_scores  # noqa: PLC0415

    instance = next(i for i in subset(99) if i["instance_id"] == row["instance"])
    data = Path(row["data"])
    pack = corpus / "packs" / f"{instance['pypi_name']}-{instance['pypi_version']}.xml"
    return _or_error(
        plan_scores.score,
        row["instance"],
        data / "bench.sqlite3",
        data / "indexes",
        row["session"],
        pack,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-repo", type=int, default=6)
    parser.add_argument("--corpus", type=Path, default=ROOT / "var" / "swe-dev")
    parser.add_argument("--data", type=Path, default=ROOT / "var" / "grounding")
    parser.add_argument("--log", type=Path, default=None, help="default: DATA/sessions.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-grounding.md")
    parser.add_argument("--limit", type=float, default=900, help="seconds per session")
    parser.add_argument("--note", default="")
    parser.add_argument("--only", default="", help="comma-separated instance ids (a partial run)")
    parser.add_argument("--conditions", default="before,after", help="which runs, in order")
    parser.add_argument("--report", action="store_true", help="re-measure the logged sessions")
    parser.add_argument("--extra", type=Path, default=None, help="markdown appended to --out")
    parser.add_argument("--profile", default="local-1.5b", help="model profile of both agents")
    parser.add_argument(
        "--before-ref", default="33b2174", help="the code the 'before' sessions run (a git ref)"
    )
    parser.add_argument(
        "--after-ref", default="", help="the code the 'after' sessions run (default: this tree)"
    )
    parser.add_argument("--index-only", action="store_true", help="index the packs, run nothing")
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)
    parser.add_argument("--condition", choices=CONDITIONS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    os.environ["PLANAGENTS_BENCH_DATA"] = str(args.data.resolve())

    if args.one:
        print(
            "RESULT "
            + json.dumps(one(args.one, args.condition, args.corpus, args.limit, args.profile))
        )
        return

    if args.index_only:
        sys.path.insert(0, str(ROOT / "bench"))
        import llm_session  # noqa: F401, PLC0415 (sets up Django on PLANAGENTS_BENCH_DATA)

        for row in {(i["pypi_name"], i["pypi_version"]): i for i in subset(args.per_repo)}.values():
            seconds = indexed(args.corpus, row)[2]
            print(
                f"{row['pypi_name']}-{row['pypi_version']}: indexed in {seconds:.0f} s", flush=True
            )
        return

    before_data = args.data.with_name(args.data.name + "-before")
    log = args.log or args.data / f"sessions-{args.profile}.jsonl"
    logged = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    codes = {
        "before": commit_of(args.before_ref),
        "after": commit_of(args.after_ref) if args.after_ref else working_tree_code(),
    }
    # A row of other code stays in the log, out of this run and its report.
    rows = [r for r in logged if r.get("code") == codes[r["condition"]]]
    print(f"code: before {codes['before']}, after {codes['after']}; "
          f"{len(rows)} of {len(logged)} logged sessions are of it", flush=True)  # fmt: skip
    if args.report:
        rows = remeasure(rows, args.corpus)
        extra = args.extra.read_text() if args.extra else ""
        planned = 2 * len(subset(args.per_repo))
        args.out.write_text(report(rows, planned, args.note) + ("\n" + extra if extra else ""))
        return
    done = {(r["instance"], r["condition"]) for r in rows}
    instances = subset(args.per_repo)
    if args.only:
        wanted = args.only.split(",")
        instances = sorted(
            (i for i in instances if i["instance_id"] in wanted),
            key=lambda i: wanted.index(i["instance_id"]),
        )
    conditions = [c for c in args.conditions.split(",") if c in CONDITIONS]
    # The report covers every logged row of these codes: out of the whole bench, not this part.
    planned = len(CONDITIONS) * len(subset(args.per_repo))
    print(f"{len(instances)} instances: {', '.join(i['instance_id'] for i in instances)}")
    for instance in instances:
        for condition in conditions:
            if (instance["instance_id"], condition) in done:
                continue
            script, data, env = Path(__file__), args.data, dict(os.environ)
            ref = args.before_ref if condition == "before" else args.after_ref
            if ref:
                tree = worktree(codes[condition])
                # A fixed commit, as it shipped: its own script, imports and database.
                script, env["PYTHONPATH"] = tree / "bench" / "grounding.py", str(tree)
                data = before_data if condition == "before" else args.data
            command = [sys.executable, str(script), "--one", instance["instance_id"],
                       "--condition", "after", "--corpus", str(args.corpus.resolve()),
                       "--data", str(data.resolve()), "--limit", str(args.limit),
                       "--profile", args.profile]  # fmt: skip
            started = time.monotonic()
            load = os.getloadavg()[0]
            child = subprocess.run(
                command,
                capture_output=True,
                text=True,
                check=False,
                env=env,
                cwd=script.parent.parent,
            )
            found = [x for x in child.stdout.splitlines() if x.startswith("RESULT ")]
            if not found:
                print(f"{instance['instance_id']} {condition}: failed\n{child.stderr[-2000:]}")
                continue
            row = json.loads(found[-1][len("RESULT ") :])
            row["condition"] = condition
            row["code"] = codes[condition]
            row["finished_at"] = time.strftime("%H:%M:%S", time.gmtime())
            row["load_before"] = round(load, 2)
            row["load_after"] = round(os.getloadavg()[0], 2)
            row["data"] = str(data.resolve())
            row.update(scored(row, args.corpus))
            rows.append(row)
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            if condition == "after":  # today's code: the estimate's history (issue 24)
                trace = ROOT / "bench" / "logs" / f"trace-{args.profile}.jsonl"
                estimate_bench.export(data / "bench.sqlite3", trace)
            print(f"{row['instance']} {condition}: {json.dumps(row)} "
                  f"({time.monotonic() - started:.0f}s with start-up)", flush=True)  # fmt: skip
            args.out.write_text(report(rows, planned, args.note))
    args.out.write_text(report(rows, planned, args.note))


if __name__ == "__main__":
    main()
