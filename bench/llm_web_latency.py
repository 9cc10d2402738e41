"""Does the embedded model starve the web server? Page latency in the process that runs the model
(the embedded default: jobs run inside the server process), idle and while two generations run.

    .venv/bin/python bench/llm_web_latency.py [--profile local] [--rounds 2]

Each variant runs in a fresh child process, because the nice value applies when the server
starts and OMP_WAIT_POLICY when libgomp loads: `untuned` (nice 0, OpenMP default), each knob
alone, both, and both with one model thread. Variants alternate,
so load from elsewhere on the machine hits both alike. The page is rendered by Django's test
client in the model's process (so the GIL and the CPU are both contended); the child prints
one JSON line. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = {
    "untuned": {"PLANAGENTS_LLM_NICE": "0", "OMP_WAIT_POLICY": ""},
    "nice10": {"PLANAGENTS_LLM_NICE": "10", "OMP_WAIT_POLICY": ""},
    "passive": {"PLANAGENTS_LLM_NICE": "0", "OMP_WAIT_POLICY": "PASSIVE"},
    "both": {"PLANAGENTS_LLM_NICE": "10", "OMP_WAIT_POLICY": "PASSIVE"},
    "both-1t": {
        "PLANAGENTS_LLM_NICE": "10",
        "OMP_WAIT_POLICY": "PASSIVE",
        "PLANAGENTS_LLM_THREADS": "1",
    },
}
PAGE = "/accounts/login/"
GAP = 0.02  # seconds between page requests


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def child(profile: str) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    import django

    django.setup()
    from django.test import Client

    from agents.providers import get_provider
    from agents.providers.base import CallOptions, ChatMessage
    from agents.providers.local import LocalLlamaProvider, load_model

    provider = get_provider(profile)
    assert isinstance(provider, LocalLlamaProvider)
    load_model(provider.spec)
    client = Client(HTTP_HOST="127.0.0.1")
    pause = threading.Event()

    def page() -> float:
        started = time.perf_counter()
        response = client.get(PAGE)
        assert response.status_code == 200, response.status_code
        return 1000 * (time.perf_counter() - started)

    for _ in range(5):  # warm templates and caches
        page()
    idle = []
    for _ in range(60):
        idle.append(page())
        pause.wait(GAP)

    tokens = [0, 0]

    def generate(i: int) -> None:
        messages = [
            ChatMessage("system", f"[{uuid.uuid4().hex[:8]}] You are a senior engineer."),
            ChatMessage("user", "Explain how to add rate limiting to a Flask API, in detail."),
        ]
        options = CallOptions(max_tokens=96, temperature=0.0)
        for _piece in provider.stream(messages, options):
            tokens[i] += 1

    workers = [threading.Thread(target=generate, args=(i,)) for i in range(2)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    busy = []
    while any(w.is_alive() for w in workers):
        busy.append(page())
        pause.wait(GAP)
    wall = time.monotonic() - started
    print(
        json.dumps(
            {
                "idle_p50": statistics.median(idle),
                "idle_p95": percentile(idle, 0.95),
                "busy_p50": statistics.median(busy),
                "busy_p95": percentile(busy, 0.95),
                "busy_max": max(busy),
                "pages": len(busy),
                "tok_s": sum(tokens) / wall,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="local")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", choices=list(VARIANTS), help="variants to run")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.profile)
        return

    results: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for round_ in range(args.rounds):
        chosen = args.only or list(VARIANTS)
        names = chosen if round_ % 2 == 0 else list(reversed(chosen))
        for name in names:
            env = {**os.environ, **VARIANTS[name], "PLANAGENTS_LOG_LEVEL": "WARNING"}
            if not env["OMP_WAIT_POLICY"]:
                del env["OMP_WAIT_POLICY"]
            load = Path("/proc/loadavg").read_text().split()[0]
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--profile", args.profile],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            results[name].append(row)
            print(
                f"round {round_} {name:8} (load {load}): page idle p50 {row['idle_p50']:.1f} ms "
                f"p95 {row['idle_p95']:.1f}; while generating p50 {row['busy_p50']:.1f} ms "
                f"p95 {row['busy_p95']:.1f} max {row['busy_max']:.0f} ({row['pages']:.0f} pages); "
                f"model {row['tok_s']:.1f} tok/s",
                flush=True,
            )
    for name, rows in results.items():
        if not rows:
            continue

        def med(key: str, rows: list[dict[str, float]] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        print(
            f"median {name:8}: idle p50 {med('idle_p50'):.1f} ms, generating p50 "
            f"{med('busy_p50'):.1f} ms p95 {med('busy_p95'):.1f} ms; model {med('tok_s'):.1f} tok/s"
        )


if __name__ == "__main__":
    main()
