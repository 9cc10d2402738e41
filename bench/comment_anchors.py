"""Do plan comments follow a regeneration? Comment re-anchoring on swe-dev, and the plan page
with 200 comments (issue 24).

    .venv/bin/python bench/comment_anchors.py [--per-repo 6] [--requests 60] [--no-page]

One command, no model, deterministic; it writes bench/RESULTS-comments.md.

**Re-anchoring.** For each instance of the grounding subset (bench/grounding.py's `subset`,
the first `--per-repo` of each repository) a plan of the product's shape is built from the
instance's real definitions: a step per definition the real fix changed (gold_spans.jsonl,
found by name with rag.symbols in the packed release), then up to three other definitions of
the same files, then one step on no definition (a new test), as plans write it; each step
has its target, a title from the definition's docstring (else "Change `name`"), a detail that
cites it as `path:line`, and the version cites each target's lines. Comments go on every
step, on the Summary, Files and Testing sections and on every cited line. Then each scripted
edit a regeneration makes is applied to that version, and every comment is placed in the new
version by the product's own `conversations.comments.place`, against what the edit means:

- insert: a step on no definition inserted above the first: every step moves down one;
- reorder: the steps reversed;
- split: the middle step split in two on its definition (either half may hold the comment);
- reword: the middle step's title and detail reworded, on the same definition; the step on no
  definition reworded lightly (most words kept): both carried;
- rewrite: the step on no definition rewritten entirely: outdated;
- remove: the middle step removed, with its cited lines: its comments outdated;
- retarget: the middle step now changes another definition of its file: outdated;
- line moved: the first file's cited ranges one line lower (still holding the line: carried)
  and, separately, past their old end (the number is no longer cited: outdated, by design: a
  cited-line comment follows its number, see docs/decisions.md);
- line removed: the middle step's citation left out: outdated.

Scored per comment: correctly carried (to the right place), correctly outdated, wrongly
dropped (should have been carried; outdated or shown nowhere instead; the target is 0), and
wrongly carried (to another step, or carried where it should be outdated).

**The page.** A plan of the real shape (the spec-export fixture's plan on the sample pack,
indexed) with 200 comments (160 threads, 40 answers; resolved, outdated and via-a-link ones
among them) on a throw-away database; the plan page is fetched `--requests` times through
Django's test client as the owner after a warm-up: p50 and p95, the queries per request and
the load average (os.getloadavg) before and after. The same for the plan with no comment.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# A throw-away data folder: the page's database and the sample pack's index live there.
os.environ.setdefault("PLANAGENTS_DATA_DIR", tempfile.mkdtemp(prefix="comment-bench-"))
os.environ.setdefault("PLANAGENTS_FAKE_LLM", "1")

import django  # noqa: E402

django.setup()

from grounding import subset  # noqa: E402

from agents.plan_sections import sections_of  # noqa: E402
from conversations import comments, plan_comments  # noqa: E402
from rag.languages import language_for  # noqa: E402
from rag.symbols import extract  # noqa: E402

PACKS = ROOT / "var" / "swe-dev" / "packs"
GOLD_SPANS = ROOT.parent / "shared" / "bench" / "swe-dev" / "gold_spans.jsonl"
RESULTS = ROOT / "bench" / "RESULTS-comments.md"
OTHER_STEPS = 3
KINDS = ("function", "method", "constructor", "class")
OUTDATED = None
"""An expected place: the comment should be shown as outdated."""


# ---------------------------------------------------------------- plans of real definitions


_packs: dict[str, dict[str, str]] = {}


def pack(name: str) -> dict[str, str]:
    """A pack's files, path → text (its JSON style), read once."""
    if name not in _packs:
        _packs.clear()  # one pack at a time: astropy's is 30 MB
        data = json.loads((PACKS / f"{name}.json").read_text())
        _packs[name] = {p: t for p, t in data["files"].items() if isinstance(t, str)}
    return _packs[name]


def docstring(lines: list[str], start: int, end: int) -> str:
    """The first sentence of a definition's docstring (its first lines), or ""."""
    body = " ".join(line.strip() for line in lines[start : min(end, start + 8)])
    for quote in ('"""', "'''"):
        if quote in body:
            text = body.split(quote, 2)[1].strip()
            return text.split(". ")[0].rstrip(".")[:120]
    return ""


def step_for(path: str, d: Any, lines: list[str]) -> dict[str, Any]:
    name = d.qualified_name
    said = docstring(lines, d.start_line, d.end_line)
    signature = lines[d.start_line - 1].strip()[:100] if d.start_line <= len(lines) else ""
    return {
        "title": said[:90] if said else f"Change `{name}`",
        "detail": f"Change `{name}` at `{path}:{d.start_line}`, where it reads `{signature}`.",
        "files": [path],
        "target": {"kind": "definition", "name": name, "path": path,
                   "start": d.start_line, "end": d.end_line},
    }  # fmt: skip


def plan_for(row: dict[str, Any], spans: dict[str, list[str]]) -> tuple[dict[str, Any], dict]:
    """The plan's data, and for each file the definitions no step is on (for retargeting)."""
    files = pack(f"{row['pypi_name']}-{row['pypi_version']}")
    gold: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    spare: dict[str, list[dict[str, Any]]] = {}
    for path, names in spans.items():
        text = files.get(path)
        if text is None:
            continue
        found = extract(path, text, language_for(path))
        if found is None:
            continue
        lines = text.splitlines()
        wanted = set(names)
        defs = [d for d in found.definitions if d.kind in KINDS]
        for d in defs:
            (gold if d.qualified_name in wanted else spare.setdefault(path, [])).append(
                step_for(path, d, lines)
            )
    for path, steps in spare.items():
        other += steps[:: max(1, len(steps) // OTHER_STEPS)][:OTHER_STEPS]
        spare[path] = [s for s in steps if s not in other]
    if not gold:
        return {}, {}
    steps = gold + other[:OTHER_STEPS]
    # On no definition, as a plan's test step often is: found again by its words alone.
    tests = row["gold_files"][0]
    steps.append(
        {
            "title": "Add a regression test for the reported case",
            "detail": f"A test next to the other tests of `{tests}` that fails before the "
            "change and passes after it, with the issue's own example as its input.",
            "files": [],
        }
    )
    data = {
        "summary": row["query"].strip().splitlines()[0][:300],
        "decisions": [],
        "steps": steps,
        "files": [{"path": p, "action": "modify", "reason": "the fix"} for p in spans],
        "testing": ["Run the new regression test and the module's tests."],
        "risks": [],
        "citations": citations(steps),
    }
    return data, spare


def citations(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"path": s["target"]["path"], "start": s["target"]["start"], "end": s["target"]["end"],
         "exists": True}
        for s in steps if (s.get("target") or {}).get("kind") == "definition"
    ]  # fmt: skip


# ---------------------------------------------------------------- comments and edits


@dataclass
class Comment:
    kind: str
    anchor: dict[str, Any]
    where: str
    """In v1: step-2, summary…, or the cited `path:line`."""


def comments_on(data: dict[str, Any]) -> list[Comment]:
    found = []
    for n in range(1, len(data["steps"]) + 1):
        found.append(Comment(*comments.anchor_for(data, f"step-{n}"), f"step-{n}"))
    for key in ("summary", "files", "testing"):
        found.append(Comment(*comments.anchor_for(data, key), key))
    for line in comments.cited_lines(data):
        anchor = comments.line_anchor(line)
        assert anchor is not None
        found.append(Comment(comments.LINE, anchor, line))
    return found


Expected = dict[str, set[str] | None]
"""For each v1 place (step-2, summary, path:line): where the comment belongs in v2 (any of
these keys; a cited line: its own `path:line`), or OUTDATED."""


def same_places(data: dict[str, Any], moved: dict[int, set[int] | None]) -> Expected:
    """Steps where `moved` sends them (v1 number → v2 numbers, None: outdated; absent: same
    number), sections on their key, cited lines still cited by the new version."""
    n = len(data["steps"])
    expected: Expected = {}
    for i in range(1, n + 1):
        to = moved.get(i, {i})
        expected[f"step-{i}"] = None if to is None else {f"step-{j}" for j in to}
    for key in ("summary", "files", "testing"):
        expected[key] = {key}
    return expected


def lines_kept(expected: Expected, v1: dict[str, Any], v2_citations: list[dict]) -> Expected:
    """A cited line of v1 belongs in v2 while a v2 citation of its file holds it."""
    for line in comments.cited_lines(v1):
        path, _, number = line.rpartition(":")
        held = any(
            c["path"] == path and c["start"] <= int(number) <= c["end"] for c in v2_citations
        )
        expected[line] = {line} if held else OUTDATED
    return expected


def edit_insert(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    new = {"title": "Read the limit from the settings", "files": [],
           "detail": "Add `MAX_ITEMS` to the settings module with its default.",
           "target": {"kind": "new", "path": "settings_extra.py"}}  # fmt: skip
    v2 = {**data, "steps": [new, *data["steps"]]}
    n = len(data["steps"])
    return v2, lines_kept(same_places(data, {i: {i + 1} for i in range(1, n + 1)}), data,
                          v2["citations"])  # fmt: skip


def edit_reorder(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    steps = data["steps"]
    n = len(steps)
    v2 = {**data, "steps": list(reversed(steps))}
    return v2, lines_kept(same_places(data, {i: {n - i + 1} for i in range(1, n + 1)}), data,
                          v2["citations"])  # fmt: skip


def _middle(data: dict[str, Any]) -> int:
    """The 1-based number of the middle step on a definition."""
    on = [
        i
        for i, s in enumerate(data["steps"], 1)
        if (s.get("target") or {}).get("kind") == "definition"
    ]
    return on[len(on) // 2]


def edit_split(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    m = _middle(data)
    steps = copy.deepcopy(data["steps"])
    step = steps[m - 1]
    first = {**step, "title": f"{step['title']}: read the new argument",
             "detail": f"{step['detail']} First accept the new argument and check it."}  # fmt: skip
    second = {**step, "title": f"{step['title']}: use it",
              "detail": "Then use the argument where the result is built, as the issue asks."}  # fmt: skip
    v2 = {**data, "steps": [*steps[: m - 1], first, second, *steps[m:]]}
    moved: dict[int, set[int] | None] = {m: {m, m + 1}}
    moved.update({i: {i + 1} for i in range(m + 1, len(steps) + 1)})
    return v2, lines_kept(same_places(data, moved), data, v2["citations"])


REWORDS = {"Change": "Update", "change": "update", "where": "which", "reads": "says"}


def reworded(text: str) -> str:
    return " ".join(REWORDS.get(w, w) for w in text.split(" "))


def edit_reword(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    m = _middle(data)
    steps = copy.deepcopy(data["steps"])
    step = steps[m - 1]
    step["title"] = f"Fix {reworded(step['title'])} for the reported input"
    step["detail"] = f"{reworded(step['detail'])} Keep the behaviour for the other callers."
    last = steps[-1]  # on no definition: found again by its words alone
    last["title"] = "Add a regression test for the reported case"
    last["detail"] = last["detail"].replace("A test next to", "One test beside")
    v2 = {**data, "steps": steps}
    return v2, lines_kept(same_places(data, {}), data, v2["citations"])


def edit_rewrite(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    steps = copy.deepcopy(data["steps"])
    steps[-1] = {"title": "Document the new option in the changelog", "files": [],
                 "detail": "One entry under Unreleased naming the option and its default.",
                 "target": {"kind": "new", "path": "CHANGES.rst"}}  # fmt: skip
    v2 = {**data, "steps": steps}
    return v2, lines_kept(same_places(data, {len(steps): OUTDATED}), data, v2["citations"])


def edit_remove(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    m = _middle(data)
    steps = [s for i, s in enumerate(data["steps"], 1) if i != m]
    v2 = {**data, "steps": steps, "citations": citations(steps)}
    moved: dict[int, set[int] | None] = {m: OUTDATED}
    moved.update({i: {i - 1} for i in range(m + 1, len(data["steps"]) + 1)})
    return v2, lines_kept(same_places(data, moved), data, v2["citations"])


def edit_retarget(data: dict[str, Any], spare: dict) -> tuple[dict, Expected] | None:
    m = _middle(data)
    steps = copy.deepcopy(data["steps"])
    path = steps[m - 1]["target"]["path"]
    if not spare.get(path):
        return None  # the file has no other definition to move to
    steps[m - 1] = copy.deepcopy(spare[path][len(spare[path]) // 2])
    v2 = {**data, "steps": steps, "citations": citations(steps)}
    return v2, lines_kept(same_places(data, {m: OUTDATED}), data, v2["citations"])


def _moved_lines(data: dict[str, Any], by: Callable[[dict], int]) -> tuple[dict, Expected]:
    first = data["citations"][0]["path"]
    steps = copy.deepcopy(data["steps"])
    for s in steps:
        t = s.get("target") or {}
        if t.get("path") == first and t.get("kind") == "definition":
            shift = by(t)
            t["start"], t["end"] = t["start"] + shift, t["end"] + shift
    v2 = {**data, "steps": steps, "citations": citations(steps)}
    return v2, lines_kept(same_places(data, {}), data, v2["citations"])


def edit_line_moved_within(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    # One line up: a range of two lines or more still holds its old first line.
    return _moved_lines(data, lambda t: 0 if t["start"] == t["end"] else -1)


def edit_line_moved_past(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    return _moved_lines(data, lambda t: t["end"] - t["start"] + 40)


def edit_line_removed(data: dict[str, Any], spare: dict) -> tuple[dict, Expected]:
    m = _middle(data)
    gone = data["steps"][m - 1]["target"]
    cited = [
        c for c in data["citations"]
        if (c["path"], c["start"], c["end"]) != (gone["path"], gone["start"], gone["end"])
    ]  # fmt: skip
    v2 = {**data, "citations": cited}
    return v2, lines_kept(same_places(data, {}), data, cited)


EDITS: dict[str, Callable[[dict, dict], tuple[dict, Expected] | None]] = {
    "step inserted above": edit_insert,
    "steps reordered": edit_reorder,
    "a step split": edit_split,
    "steps reworded": edit_reword,
    "a step rewritten": edit_rewrite,
    "a step removed": edit_remove,
    "target definition changed": edit_retarget,
    "cited lines moved (within)": edit_line_moved_within,
    "cited lines moved (past)": edit_line_moved_past,
    "a cited line removed": edit_line_removed,
}
OUTCOMES = ("carried", "outdated", "dropped", "wrongly carried")


def judge(c: Comment, v2: dict[str, Any], expected: set[str] | None) -> tuple[str, str]:
    """The outcome of comment `c` in v2 against where it belongs, and where it went."""
    placed = comments.place(c.kind, c.anchor, v2)
    keys = {s.key for s in sections_of(v2)}
    # As the page groups them: by section key, by cited line, or with the outdated ones.
    shown = placed.outdated or placed.key in keys or (placed.key == "" and bool(placed.line))
    where = "outdated" if placed.outdated else (placed.key or placed.line)
    if not shown:
        return "dropped", f"shown nowhere ({where})"
    if expected is OUTDATED:
        return ("outdated", where) if placed.outdated else ("wrongly carried", where)
    if placed.outdated:
        return "dropped", f"outdated: {placed.how}"
    return ("carried", where) if where in expected else ("wrongly carried", where)


# ---------------------------------------------------------------- the run


def anchors(per_repo: int) -> tuple[list[str], dict[str, Counter[str]], list[str], int]:
    spans = {
        r["instance_id"]: r["gold_spans"]
        for r in (json.loads(line) for line in GOLD_SPANS.read_text().splitlines() if line)
    }
    rows = sorted(subset(per_repo), key=lambda r: (r["pypi_name"], r["pypi_version"]))
    used: list[str] = []
    tally: dict[str, Counter[str]] = {name: Counter() for name in EDITS}
    wrong: list[str] = []
    skipped = 0
    for row in rows:
        data, spare = plan_for(row, spans[row["instance_id"]])
        if not data:
            skipped += 1
            continue
        used.append(f"{row['instance_id']} ({len(data['steps'])} steps)")
        placed = comments_on(data)
        for name, edit in EDITS.items():
            made = edit(copy.deepcopy(data), spare)
            if made is None:
                tally[name]["not applicable"] += 1
                continue
            v2, expected = made
            tally[name]["plans"] += 1
            for c in placed:
                outcome, where = judge(c, v2, expected[c.where])
                tally[name][outcome] += 1
                if outcome in ("dropped", "wrongly carried"):
                    wrong.append(
                        f"{row['instance_id']}, {name}: the comment on {c.where} "
                        f"({comments.label(c.kind, c.anchor)}) → {where}; expected "
                        f"{'outdated' if expected[c.where] is None else sorted(expected[c.where] or [])}"
                    )
    return used, tally, wrong, skipped


def anchors_report(per_repo: int) -> str:
    started = time.monotonic()
    used, tally, wrong, skipped = anchors(per_repo)
    total = sum((t for t in tally.values()), Counter())
    lines = [
        "# Plan comments: re-anchoring across regenerations, and the page with 200 comments",
        "",
        f"`.venv/bin/python bench/comment_anchors.py --per-repo {per_repo}` at "
        f"{code_ref()}; what it does, in its docstring. No model: every comment is placed by "
        "`conversations.comments.place`, the function the plan page and the prompts use.",
        "",
        f"## Re-anchoring on the grounding subset (first {per_repo} per repository)",
        "",
        f"Plans: {len(used)} (instances with no gold definition found by name in the packed "
        f"release, left out: {skipped}); comments per plan: every step, Summary, Files, "
        f"Testing and every cited line; {sum(t['plans'] for t in tally.values())} edited "
        f"versions; {time.monotonic() - started:.1f} s.",
        "",
        "| edit | plans | comments | correctly carried | correctly outdated | "
        "wrongly dropped | wrongly carried |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in [*tally.items(), ("**all**", total)]:
        count = sum(t[o] for o in OUTCOMES)
        lines.append(
            f"| {name} | {t['plans']} | {count} | {t['carried']} | {t['outdated']} | "
            f"{t['dropped']} | {t['wrongly carried']} |"
        )
    lines += [
        "",
        "*Wrongly dropped*: should have stayed on its step, section or line, and was marked "
        "outdated (or shown nowhere) instead. *Wrongly carried*: put on another step, or kept "
        "where the edit took away what it was about.",
        "",
        f"Plans: {', '.join(used)}.",
        "",
    ]
    if wrong:
        lines += [f"Wrong outcomes ({len(wrong)}; the first 30):", ""]
        lines += [f"- {w}" for w in wrong[:30]]
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- the page


def page_report(requests: int) -> str:
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from agents.plan import build_version
    from conversations.models import Plan, PlanComment, PlanningSession, ShareLink
    from rag.indexing import index_codebase
    from rag.services import create_codebase_from_upload
    from tests.conversations.spec_plan import STRUCTURED

    setup_test_environment()
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    owner = get_user_model().objects.create_user("owner", password="bench-pass-123")
    pack_bytes = (ROOT / "tests" / "fixtures" / "repomix" / "sample.xml").read_bytes()
    codebase = create_codebase_from_upload(
        owner, "sample", [SimpleUploadedFile("sample.xml", pack_bytes)]
    )
    index_codebase(codebase.pk)
    for _ in range(1200):  # the job the upload queued may have claimed it first
        codebase.refresh_from_db()
        if codebase.status in ("ready", "failed"):
            break
        time.sleep(0.1)
    assert codebase.status == "ready", codebase.error
    data = {k: v for k, v in copy.deepcopy(STRUCTURED).items() if k != "quality"}

    def session_with(count: int) -> PlanningSession:
        session = PlanningSession.objects.create(
            owner=owner, codebase=codebase, title="Rate limiting", task="Add rate limiting",
            agent_a_profile="fake", agent_b_profile="fake", status="completed",
        )  # fmt: skip
        markdown, structured = build_version(data, codebase, title=session.title)
        v1 = Plan.objects.create(
            session=session, version=1, markdown=markdown, structured=structured
        )
        v2 = Plan.objects.create(
            session=session, version=2, markdown=markdown, structured=structured,
            author_kind=Plan.Author.HUMAN, author=owner, note="Edited Summary",
        )  # fmt: skip
        link = ShareLink.objects.create(session=session, token_hash=f"{session.pk:064d}",
                                        may_comment=True)  # fmt: skip
        places = [w for w, _ in plan_comments.targets(v2)]
        threads: list[PlanComment] = []
        for n in range(count * 4 // 5):
            where = places[n % len(places)]
            if n % 16 == 15:  # outdated: a step no version has
                kind, anchor = "step", {"target": None, "title": f"Gone {n}", "detail": "x"}
            elif where.startswith("line:"):
                kind, anchor = "line", comments.line_anchor(where.removeprefix("line:")) or {}
            else:
                kind, anchor = comments.anchor_for(structured, where)
            guest = n % 10 == 9
            threads.append(
                PlanComment.objects.create(
                    session=session,
                    plan=v1 if n % 2 else v2,
                    anchor_kind=kind,
                    anchor=anchor,
                    text=f"Comment {n}: " + "the counter should be per address too. " * 3,
                    author=None if guest else owner,
                    guest_name=f"Reader {n}" if guest else "",
                    share_link=link if guest else None,
                    status="resolved" if n % 8 == 7 else "open",
                )  # fmt: skip
            )
        for n in range(count - len(threads)):
            parent = threads[n % len(threads)]
            PlanComment.objects.create(
                session=session, plan=v2, parent=parent, author=owner,
                anchor_kind=parent.anchor_kind, anchor=parent.anchor, text=f"Answer {n}.",
            )  # fmt: skip
        assert PlanComment.objects.filter(session=session).count() == count
        return session

    client = Client()
    client.force_login(owner)
    rows = []
    sessions = {count: session_with(count) for count in (0, 200)}
    # The third pass: the same page after gc.freeze(), which moves every object alive then
    # (the embedding model's among them) out of the collector's reach: the first two passes
    # show a full collection every dozen requests or so, scanning all of them.
    for count, frozen in ((0, False), (200, False), (200, True)):
        if frozen:
            gc.freeze()
        session = sessions[count]
        url = f"/sessions/{session.pk}/plan/"
        for _ in range(5):
            assert client.get(url).status_code == 200
        queries: list[str] = []

        def counted(execute: Any, sql: str, *args: Any, queries: list[str] = queries) -> Any:
            queries.append(sql)
            return execute(sql, *args)

        # Counted as executed: the request closes and reopens the connection, which empties
        # the debug log CaptureQueriesContext reads.
        with connection.execute_wrapper(counted):
            client.get(url)
        before = os.getloadavg()
        times = []
        for _ in range(requests):
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
        after = os.getloadavg()
        if os.environ.get("COMMENT_BENCH_TIMES"):
            print(count, [round(t) for t in times])
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * len(times)) - 1)]
        rows.append(
            f"| {count}{' (gc.freeze())' if frozen else ''} | {requests} | {statistics.median(times):.0f} | {p95:.0f} | "
            f"{max(times):.0f} | {len(queries)} | {len(response.content):,} | "
            f"{before[0]:.2f} → {after[0]:.2f} |"
        )
    return "\n".join([
        "## The plan page with 200 comments",
        "",
        "The spec-export fixture's plan (3 steps on the sample pack, indexed), v2 on screen; "
        "200 comments: 160 threads on its steps, sections and cited lines (every 16th on a step "
        "no version has: outdated; every 8th resolved; every 10th through a \"may comment\" "
        "link) and 40 answers. GET of the plan page as the owner through Django's test client "
        f"(SQLite, one process), {requests} requests after 5 to warm up. Load: 1-minute "
        "average before → after the requests, on this 2-core machine. The last row: after "
        "`gc.freeze()` (the tail of the row above is Python's full garbage collections over "
        "the process's long-lived objects, the embedding model's among them, every dozen "
        "requests or so).",
        "",
        "| comments | requests | p50 ms | p95 ms | max ms | queries | bytes | load |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"`uptime` at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
        "",
    ])  # fmt: skip


def code_ref() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-repo", type=int, default=6)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--no-page", action="store_true")
    args = parser.parse_args()
    text = anchors_report(args.per_repo)
    RESULTS.write_text(text)
    print(text)
    if not args.no_page:
        page = page_report(args.requests)
        RESULTS.write_text(text + "\n" + page)
        print(page)


if __name__ == "__main__":
    main()
