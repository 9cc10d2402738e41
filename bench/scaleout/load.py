"""Load on the scaled topology: N concurrent scripted planning sessions, 1 then 2 workers.

    .venv/bin/python bench/scaleout/load.py [--sessions 50] [--workers 1 2] [--concurrency 4]

Each session runs to its checkpoint while its page opens (the "opening" round: the client's
replay from the database competes with the first tokens), then all 50 ask for changes at once
and the agents run a second round while the clients just watch (the "watching" round).

Starts its own topology (two daphne servers, W Celery workers) against this machine's
PostgreSQL (database planagents_bench) and Redis (db 8), with the fake provider streaming a
token every --token-delay seconds. Each session gets one websocket client, on alternating
servers, connected from the start (resume after_seq=0). Reported per run:

- events: live deltas received; "lost" counts deltas that left a gap (offset beyond the text
  the client had) plus messages whose text on the client differs from the database at the end
- publish→client latency: `sent_at` (stamped by planagents.streaming when the event is
  published) to arrival at the client, p50/p95
- token→client latency: each token's estimated production time to arrival, the batch's tokens
  spread evenly between the message's previous publish and this one; this includes the ~75 ms
  batching of tokens into one event
- throughput: session rounds and tokens per second of wall time, first dispatch to last
  checkpoint of the second round
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DB = "planagents_bench"
ENV = {
    "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}",
    "REDIS_URL": "redis://127.0.0.1:6379/8",
    "PLANAGENTS_DATA_DIR": str(ROOT / "var" / "bench-scaleout"),
    "PLANAGENTS_FAKE_LLM": "1",
    "PLANAGENTS_DEFAULT_PROFILE": "fake",
    "PLANAGENTS_EVENT_TIMESTAMPS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PLANAGENTS_LOG_LEVEL": "WARNING",
    "DJANGO_SETTINGS_MODULE": "planagents.settings",
}
PIECE = re.compile(r"\s*\S+")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def watch(port: int, cookie: str, session_id: int, delay: float, stats: dict) -> dict:
    from websockets.asyncio.client import connect

    texts: dict[int, str] = {}
    last_sent: dict[int, float] = {}  # seq -> when its previous event was published
    gaps = deltas = 0
    # Latencies while the page opens (its replay runs while tokens arrive), then while the
    # client simply watches the round after the change request.
    opening: dict[str, list[float]] = {"transport": [], "token": []}
    watching: dict[str, list[float]] = {"transport": [], "token": []}
    now_in = opening
    requested = resumed = False
    async with connect(
        f"ws://127.0.0.1:{port}/ws/sessions/{session_id}/",
        origin=f"http://127.0.0.1:{port}",  # type: ignore[arg-type]
        additional_headers={"Cookie": f"sessionid={cookie}"},
        max_size=None,
    ) as ws:
        await ws.send(json.dumps({"type": "resume", "after_seq": 0}))
        while True:
            raw = await asyncio.wait_for(ws.recv(), 300)
            now = time.time()
            event = json.loads(raw)
            kind = event["type"]
            sent = event.get("sent_at")
            if kind in ("message.start", "message.end"):
                seq = event["message"]["seq"]
                texts[seq] = event["message"]["content"]
                if sent:
                    last_sent[seq] = sent
            elif kind == "message.delta":
                deltas += 1
                seq = event["seq"]
                have = texts.get(seq)
                if have is None or event["offset"] > len(have):
                    gaps += 1
                    continue
                texts[seq] = have[: event["offset"]] + event["text"]
                if sent:
                    now_in["transport"].append((now - sent) * 1000)
                    # The batch's tokens were written between this message's previous publish
                    # and this one: spread them evenly over that span.
                    prev = last_sent.get(seq, sent)
                    n = len(PIECE.findall(event["text"])) or 1
                    now_in["token"].extend(
                        (now - (prev + (j + 1) * (sent - prev) / n)) * 1000 for j in range(n)
                    )
                    last_sent[seq] = sent
            elif kind == "session.state" and event["status"] == "running" and requested:
                resumed = True
            elif (
                kind == "session.state"
                and event["status"] == "awaiting_human"
                and event["node"] == "checkpoint"
            ):
                if requested and resumed:
                    break
                if not requested:
                    # Every session at its checkpoint: all ask for changes at once.
                    stats["arrived"] += 1
                    if stats["arrived"] == stats["n"]:
                        stats["go_at"] = time.monotonic()
                        stats["go"].set()
                    await stats["go"].wait()
                    requested, now_in = True, watching
                    frame = {
                        "type": "control",
                        "action": "modify",
                        "text": "Also log each throttled attempt.",
                    }
                    await ws.send(json.dumps(frame))
    return {
        "texts": texts,
        "gaps": gaps,
        "deltas": deltas,
        "opening": opening,
        "watching": watching,
    }


def run(args: argparse.Namespace, workers: int) -> dict:
    from conversations import services
    from conversations.models import Message, PlanningSession
    from tests.scaleout.topology import Topology
    from tests.scaleout.wsremote import session_cookie

    env = {**ENV, "PLANAGENTS_FAKE_LLM_DELAY": str(args.token_delay)}
    top = Topology(env=env, logs=ROOT / "var" / "bench-scaleout" / f"logs-{workers}w")
    try:
        webs = [top.server("web1"), top.server("web2")]
        for i in range(workers):
            top.worker(f"w{i + 1}", concurrency=args.concurrency)
        user, codebase = args.fixture
        cookie = session_cookie(user)

        def start(n: int, label: str) -> list:
            return [
                services.start_session(
                    user,
                    codebase=codebase,
                    task=f"Add rate limiting to login ({label} {workers}w #{i})",
                    mode="planning",
                    agent_a_profile="fake",
                    agent_b_profile="fake",
                )
                for i in range(n)
            ]

        async def all_clients(sessions: list) -> tuple[list[dict], float]:
            stats: dict = {"n": len(sessions), "arrived": 0, "go": asyncio.Event(), "go_at": 0.0}
            results = await asyncio.gather(
                *(
                    watch(webs[i % 2].port, cookie, s.pk, args.token_delay, stats)
                    for i, s in enumerate(sessions)
                )
            )
            return results, time.monotonic() - stats["go_at"]

        # Untimed warm-up: every worker process loads the embedding model on its first session.
        asyncio.run(all_clients(start(workers * args.concurrency * 2, "warm-up")))
        started = time.monotonic()
        sessions = start(args.sessions, "run")
        results, watched_wall = asyncio.run(all_clients(sessions))
        wall = time.monotonic() - started
    finally:
        top.stop()

    lost = sum(r["gaps"] for r in results)
    mismatched = persisted = 0
    tokens = 0
    for session, result in zip(sessions, results, strict=True):
        messages = list(Message.objects.filter(session=session).order_by("seq"))
        persisted += len(messages)
        tokens += sum(m.completion_tokens for m in messages)
        saved = {m.seq: m.content for m in messages}
        mismatched += sum(1 for seq, text in saved.items() if result["texts"].get(seq) != text)
        assert PlanningSession.objects.get(pk=session.pk).status == "awaiting_human"

    def latencies(phase: str, kind: str) -> list[float]:
        return [x for r in results for x in r[phase][kind]]

    row = {
        "workers": workers,
        "concurrency_per_worker": args.concurrency,
        "sessions": args.sessions,
        "messages_persisted": persisted,
        "messages_delivered_intact": persisted - mismatched,
        "live_deltas_delivered": sum(r["deltas"] for r in results),
        "deltas_lost_gaps": lost,
    }
    for phase in ("opening", "watching"):
        for kind, label in (("transport", "publish_to_client"), ("token", "token_to_client")):
            values = latencies(phase, kind)
            row[f"{phase}_{label}_ms_p50"] = round(pct(values, 0.5), 1)
            row[f"{phase}_{label}_ms_p95"] = round(pct(values, 0.95), 1)
    row.update(
        {
            "wall_seconds_both_rounds": round(wall, 1),
            "watched_round_seconds": round(watched_wall, 1),
            "sessions_per_second": round(2 * args.sessions / wall, 2),
            "tokens_per_second": round(tokens / wall, 1),
            "events_per_second": round(sum(r["deltas"] for r in results) / wall, 1),
        }
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=4, help="processes per worker")
    parser.add_argument("--token-delay", type=float, default=0.002)
    args = parser.parse_args()

    os.environ.update(ENV)
    subprocess.run([str(ROOT / "scripts" / "services.sh"), DB], check=True)
    py = sys.executable
    subprocess.run([py, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, check=True)
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from tests.conftest import make_codebase

    user, _ = get_user_model().objects.get_or_create(username="bench")
    args.fixture = (user, make_codebase(user, name=f"bench-{int(time.time())}"))

    rows = [run(args, w) for w in args.workers]
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
