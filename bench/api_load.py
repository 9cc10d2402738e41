"""API latency under many token clients (issue 23): N concurrent clients, each with its own
API token, read the REST API of one real daphne server (started as tests/api/server.py starts
it: `make run`'s ASGI app, its own SQLite file) over keep-alive HTTP connections.

    nice -n 19 .venv/bin/python bench/api_load.py [--clients 50] [--requests 20]

Each client cycles through the read operations a CLI or an agent polls (codebases, a codebase,
sessions, a session, plans, a plan, a plan's versions, an export). Printed: requests, errors
(anything but 200), p50 / p95 / p99 / max latency, throughput, and the load average before and
after. Each token stays under PLANAGENTS_API_RATE (the default, 120/min), so the figure is the
server's, not the limiter's. Not a test; it shares the machine with whatever else runs.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.api.server import daphne, manage  # noqa: E402

SEED = """
from django.contrib.auth import get_user_model
from api.services import create_token
from conversations.models import Plan, PlanningSession, PlanningState
from rag.models import Codebase
owner = get_user_model().objects.create_user("bench-api")
codebase = Codebase.objects.create(owner=owner, name="bench", status="ready", file_count=3)
session = PlanningSession.objects.create(
    owner=owner, codebase=codebase, title="Add a cache", task="Add a cache",
    agent_a_profile="fake", agent_b_profile="fake", status="completed")
PlanningState.objects.create(session=session, current_node="completed")
for v in (1, 2):
    Plan.objects.create(session=session, version=v, markdown="# Plan\\n\\n" + "Step.\\n" * 200,
                        structured={"summary": "Add a cache", "steps": [], "files": []})
print(codebase.pk, session.pk)
print(" ".join(create_token(owner, f"client {n}", "read").secret for n in range({clients})))
"""


def paths(codebase: int, session: int) -> list[str]:
    return [
        "/api/v1/codebases",
        f"/api/v1/codebases/{codebase}",
        "/api/v1/sessions",
        f"/api/v1/sessions/{session}",
        "/api/v1/plans",
        f"/api/v1/plans/{session}",
        f"/api/v1/plans/{session}/versions",
        f"/api/v1/plans/{session}/export/json",
    ]


def client(
    port: int, token: str, urls: list[str], count: int, start: threading.Barrier,
    out: list[float], errors: list[str],
) -> None:  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Bearer {token}"}
    start.wait()
    for n in range(count):
        url = urls[n % len(urls)]
        began = time.perf_counter()
        try:
            connection.request("GET", url, headers=headers)
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException) as exc:
            errors.append(f"{url}: {exc!r}")
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            continue
        out.append(time.perf_counter() - began)
        if response.status != 200:
            errors.append(f"{url}: {response.status}")
    connection.close()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20, help="per client")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data, daphne(Path(data)) as server:
        env = {**os.environ, "PLANAGENTS_DATA_DIR": data}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        env.pop("DATABASE_URL", None)
        seeded = manage(env, "shell", "-c", SEED.replace("{clients}", str(args.clients)))
        id_line, token_line = seeded.strip().splitlines()[-2:]
        codebase, session = (int(x) for x in id_line.split())
        tokens = token_line.split()
        urls = paths(codebase, session)
        latencies: list[float] = []
        errors: list[str] = []
        start = threading.Barrier(args.clients + 1)
        threads = [
            threading.Thread(
                target=client,
                args=(server.port, token, urls, args.requests, start, latencies, errors),
            )
            for token in tokens
        ]
        for thread in threads:
            thread.start()
        load_before = os.getloadavg()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        load_after = os.getloadavg()
    ms = [x * 1000 for x in latencies]
    print(f"clients {args.clients} x {args.requests} requests, {len(ms)} answered in {wall:.1f} s")
    print(f"errors {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print(
        f"latency ms: p50 {statistics.median(ms):.0f}  p95 {percentile(ms, 95):.0f}  "
        f"p99 {percentile(ms, 99):.0f}  max {max(ms):.0f}"
    )
    print(f"throughput {len(ms) / wall:.0f} requests/s")
    print("load average (1/5/15 min): before " + " ".join(f"{x:.2f}" for x in load_before)
          + ", after " + " ".join(f"{x:.2f}" for x in load_after))  # fmt: skip


if __name__ == "__main__":
    main()
