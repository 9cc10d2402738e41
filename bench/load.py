"""Many sessions, one machine (issue 20): 1, 2 and 4 concurrent planning sessions on the local
model, in the embedded topology (one daphne process running its own model and its jobs) and
the scaled one (one `manage.py llm_server`, two daphne servers, two Celery workers on this
machine's PostgreSQL and Redis), optionally beside a cold index of a big codebase.

    .venv/bin/python bench/load.py [--topology inprocess,scaled] [--sessions 1,2,4]
                                   [--profile local-1.5b] [--cold-pack PACK] [--out FILE]

Sessions are started as a user starts them (the new-session form, POSTed to a server, so the
jobs run where a user's would) and watched over their websockets as a page watches them; each
is approved at its checkpoint and followed to its end. Per run:

- sessions completed, and those that failed or paused (the error they showed)
- per-session wall time, start to completed
- aggregate written tokens per second (every call's completion tokens, from the trace, over
  the run's wall time), and its ratio to the one-session run
- each session's first token, against its queue position as the page was told it (the first
  `progress` frame with phase `queued`: calls ahead) × the median turn + 10 s (the target)
- page latency: GET /sessions/ every 0.5 s throughout, p50 / p95 (target p95 ≤ 100 ms)
- the load average at the start and the end

Results are appended to `--out` (default bench/RESULTS-load.md), one table row per run, so a
long bench can run in parts. Run it alone on the machine: it measures contention on purpose,
and anything else running is contention it cannot tell from its own. Not a test.

Sessions run on `--profile`, the product's default model unless told otherwise; a smoke run of
the harness itself is `--profile fake` (PLANAGENTS_FAKE_LLM=1 alone still loads the model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TASKS = [
    "Add rate limiting to the login endpoint",
    "Log every failed login with the client address",
    "Let an admin unlock a locked-out account",
    "Add pagination to the todo list endpoint",
]


def configure(topology: str, data: Path) -> dict[str, str]:
    """The environment of the servers (and of this process, set before Django starts)."""
    env = {
        "PLANAGENTS_DATA_DIR": str(data),
        "PLANAGENTS_MODEL_DIR": str(ROOT / "var" / "models"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PLANAGENTS_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "planagents.settings",
        # The investigation runs, as in production (tests/scaleout/topology.py turns it off
        # for scripted sessions).
        "PLANAGENTS_EVIDENCE_STEPS": os.environ.get("PLANAGENTS_EVIDENCE_STEPS", "6"),
    }
    if os.environ.get("PLANAGENTS_FAKE_LLM"):  # a smoke run of the harness itself
        env["PLANAGENTS_FAKE_LLM"] = "1"
    if topology == "scaled":
        env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/planagents_load"
        env["REDIS_URL"] = "redis://127.0.0.1:6379/7"
    return env


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def csrf_post(client: Any, url: str, data: dict[str, Any]) -> Any:
    page = client.get(url)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, f"no form at {url}: {page.status_code}"
    return client.post(url, data={**data, "csrfmiddlewaretoken": token.group(1)},
                       headers={"Referer": url})  # fmt: skip


async def watch(port: int, cookie: str, session_id: int, started: float) -> dict[str, Any]:
    """Follow one session as its page would: approve at the checkpoint, stop at the end."""
    from tests.scaleout.wsremote import RemoteClient

    seen: dict[str, Any] = {"first_token_s": None, "queued_ahead": None, "queued_frames": 0}
    client = RemoteClient(port, cookie, session_id)
    await client.connect()  # and resumes from seq 0, as the page does
    try:
        approved = False
        while True:
            event = await client.until(lambda _: True, timeout=1800)  # the next event
            kind = event["type"]
            if kind == "message.delta" and seen["first_token_s"] is None:
                seen["first_token_s"] = time.monotonic() - started
            elif kind == "progress" and event.get("phase") == "queued":
                seen["queued_frames"] += 1
                if seen["queued_ahead"] is None:
                    seen["queued_ahead"] = event["queue"]["ahead"]
            elif kind == "session.state" and not event.get("replay"):
                status = event["status"]
                if status == "awaiting_human" and event.get("node") == "checkpoint":
                    if not approved:
                        approved = True
                        await client.send({"type": "control", "action": "approve"})
                elif status in ("completed", "failed", "stopped") or (
                    status == "awaiting_human" and event.get("error")
                ):
                    seen.update(status=status, error=event.get("error") or "")
                    seen["wall_s"] = time.monotonic() - started
                    return seen
    finally:
        await client.close()


async def pages(port: int, cookie: str, stop: asyncio.Event, out: list[float]) -> None:
    import httpx

    async with httpx.AsyncClient(cookies={"sessionid": cookie}, timeout=30) as client:
        while not stop.is_set():
            t = time.monotonic()
            response = await client.get(f"http://127.0.0.1:{port}/sessions/")
            response.raise_for_status()
            out.append((time.monotonic() - t) * 1000)
            await asyncio.sleep(0.5)


def run(args: argparse.Namespace, topology: str, n: int) -> dict[str, Any]:
    import httpx
    from django.db.models import Sum

    from agents.models import LLMCall
    from conversations.models import PlanningSession
    from tests.scaleout.topology import Topology
    from tests.scaleout.wsremote import session_cookie

    user, codebase = args.fixture
    cookie = session_cookie(user)
    top = Topology(env=dict(args.env), logs=args.data / "logs" / f"{topology}-{n}")
    cold = None
    try:
        if topology == "scaled":
            top.llm_server(args.profile)
            webs = [top.server("web1"), top.server("web2")]
            top.worker("w1", concurrency=2)
            top.worker("w2", concurrency=2)
        else:
            webs = [top.server("web")]
        load_start = os.getloadavg()[0]
        if args.cold_pack:
            cold = subprocess.Popen(
                [sys.executable, str(Path(__file__)), "--index-cold", str(args.cold_pack)],
                env={**os.environ, **args.env},
            )
        started = time.monotonic()
        ids = []
        for i in range(n):
            with httpx.Client(base_url=f"http://127.0.0.1:{webs[i % len(webs)].port}",
                              cookies={"sessionid": cookie}, timeout=60) as client:  # fmt: skip
                response = csrf_post(client, "/sessions/new/", {
                    "task": TASKS[i % len(TASKS)], "codebase": codebase.pk, "mode": "planning",
                    "agent_a_profile": args.profile, "agent_b_profile": args.profile,
                    "fallback_profile": args.profile, "max_exchanges": 2})  # fmt: skip
                where = response.headers.get("location", "")
                found = re.fullmatch(r".*/sessions/(\d+)/", where)
                assert found, f"the session did not start: {response.status_code} {where}"
                ids.append(int(found.group(1)))

        async def everything() -> tuple[list[dict[str, Any]], list[float]]:
            stop, latencies = asyncio.Event(), list[float]()
            poller = asyncio.create_task(pages(webs[0].port, cookie, stop, latencies))
            seen = await asyncio.gather(*(watch(webs[i % len(webs)].port, cookie, pk, started)
                                          for i, pk in enumerate(ids)))  # fmt: skip
            stop.set()
            await poller
            return list(seen), latencies

        seen, latencies = asyncio.run(everything())
        wall = time.monotonic() - started
        cold_state = cold_index_state() if cold is not None else ""
    finally:
        if cold is not None and cold.poll() is None:
            cold.terminate()
        top.stop()
    calls = LLMCall.objects.filter(session_id__in=ids)
    written = calls.aggregate(t=Sum("completion_tokens"))["t"] or 0
    turns = [c.duration_ms / 1000 for c in calls if c.completion_tokens]
    median_turn = statistics.median(turns) if turns else 0.0
    late = [
        s for s in seen
        if s["first_token_s"] is not None
        and s["first_token_s"] > (s["queued_ahead"] or 0) * median_turn + 10
    ]  # fmt: skip
    return {
        "topology": topology,
        "sessions": n,
        "cold_index": bool(args.cold_pack),
        "completed": sum(s["status"] == "completed" for s in seen),
        "not_completed": [
            f"{s['status']}: {s['error'][:120]}" for s in seen if s["status"] != "completed"
        ],  # fmt: skip
        "wall_s": [round(s["wall_s"]) for s in seen],
        "tokens_per_s": round(written / wall, 2),
        "first_token_s": [
            None if s["first_token_s"] is None else round(s["first_token_s"]) for s in seen
        ],  # fmt: skip
        "queued_ahead": [s["queued_ahead"] for s in seen],
        "median_call_s": round(median_turn, 1),
        "first_token_late": len(late),
        "page_p50_ms": pct(latencies, 0.5),
        "page_p95_ms": pct(latencies, 0.95),
        "load": f"{load_start:.2f} → {os.getloadavg()[0]:.2f}",
        "statuses": [PlanningSession.objects.get(pk=pk).status for pk in ids],
        "cold_state": cold_state,
    }


def cold_index_state() -> str:
    """How far the cold index got while the sessions ran: its state, and the vectors written
    of those it will have (they fill in after it opens for search)."""
    from rag.api import vector_counts
    from rag.models import Codebase

    codebase = Codebase.objects.filter(name__startswith="cold ").order_by("-pk").first()
    if codebase is None:
        return "cold index: not started"
    done, total = vector_counts(codebase.pk)
    return (
        f"cold index: {codebase.status} ({codebase.progress_stage}), {done} of {total} vectors "
        "when the sessions ended"
    )


def fixture(pack: Path) -> tuple[Any, Any]:
    from django.contrib.auth import get_user_model

    from rag.indexing import index_codebase
    from rag.models import Codebase

    user, _ = get_user_model().objects.get_or_create(username="bench-load")
    codebase = Codebase.objects.filter(owner=user, name=pack.name, status="ready").first()
    if codebase is None:
        folder = Path("uploads") / f"bench-{pack.stem}"
        from django.conf import settings

        (settings.DATA_DIR / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(pack, settings.DATA_DIR / folder / "001-pack")
        codebase = Codebase.objects.create(owner=user, name=pack.name,
                                           upload_path=folder.as_posix())  # fmt: skip
        index_codebase(codebase.pk)
        codebase.refresh_from_db()
    return user, codebase


def index_cold(pack: Path) -> None:
    """The cold index beside the sessions: a new codebase of `pack`, indexed in this process
    as a worker would."""
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from rag.indexing import index_codebase
    from rag.models import Codebase

    user, _ = get_user_model().objects.get_or_create(username="bench-load")
    codebase = Codebase.objects.create(owner=user, name=f"cold {pack.name} {time.time():.0f}")
    folder = Path("uploads") / f"cold-{codebase.pk}"
    (settings.DATA_DIR / folder).mkdir(parents=True, exist_ok=True)
    shutil.copy(pack, settings.DATA_DIR / folder / "001-pack")
    codebase.upload_path = folder.as_posix()
    codebase.save()
    index_codebase(codebase.pk)


def table(rows: list[dict[str, Any]], note: str) -> str:
    one = {r["topology"]: r["tokens_per_s"] for r in rows if r["sessions"] == 1}
    lines = [f"\n### {time.strftime('%Y-%m-%d %H:%M')} {note}\n",
             "| topology | sessions | cold index | completed | wall s | tokens/s (× one) | "
             "first token s | queued ahead | late | page p50/p95 ms | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        base = one.get(r["topology"])
        ratio = f" ({r['tokens_per_s'] / base:.2f}×)" if base else ""
        page = f"{r['page_p50_ms'] or 0:.0f} / {r['page_p95_ms'] or 0:.0f}"
        lines.append(
            f"| {r['topology']} | {r['sessions']} | {'yes' if r['cold_index'] else 'no'} | "
            f"{r['completed']}/{r['sessions']} | {r['wall_s']} | {r['tokens_per_s']}{ratio} | "
            f"{r['first_token_s']} | {r['queued_ahead']} | {r['first_token_late']} | {page} | "
            f"{r['load']} |"
        )
        for why in r["not_completed"]:
            lines.append(f"|  | | | {why} | | | | | | | |")
    lines += ["", *[r["cold_state"] for r in rows if r.get("cold_state")]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topology", default="inprocess,scaled")
    parser.add_argument("--sessions", default="1,2,4")
    parser.add_argument(
        "--profile", default="local-1.5b", help="the default model; fake for a smoke run"
    )
    parser.add_argument(
        "--pack", type=Path, default=ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
    )
    parser.add_argument("--cold-pack", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=ROOT / "var" / "bench-load")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-load.md")
    parser.add_argument("--note", default="")
    parser.add_argument("--index-cold", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.index_cold:
        import django

        django.setup()
        index_cold(args.index_cold)
        return

    topologies = args.topology.split(",")
    if len(topologies) > 1:  # Django is set up once per process: one process per topology
        for topology in topologies:
            argv = [a for a in sys.argv[1:] if not a.startswith("--topology")]
            if "--topology" in sys.argv:
                at = sys.argv.index("--topology")
                argv = sys.argv[1:at] + sys.argv[at + 2 :]
            subprocess.run([sys.executable, __file__, *argv, "--topology", topology], check=True)
        return

    rows = []
    for topology in topologies:
        data = (args.data / topology).resolve()
        data.mkdir(parents=True, exist_ok=True)
        args.env = configure(topology, data)
        os.environ.update(args.env)
        if topology == "scaled":
            subprocess.run([str(ROOT / "scripts" / "services.sh"), "planagents_load"], check=True)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        args.fixture = fixture(args.pack)
        for n in (int(x) for x in args.sessions.split(",")):
            row = run(args, topology, n)
            print(json.dumps(row), flush=True)
            rows.append(row)
            with args.out.open("a") as out:
                out.write(table([row], args.note or args.profile))
    print(table(rows, args.note or args.profile))


if __name__ == "__main__":
    main()
