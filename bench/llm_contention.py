"""How the embedded model's speed holds up when something else wants the CPU (issue 20).

    .venv/bin/python bench/llm_contention.py [--profile local-1.5b] [--rounds 2]

llama.cpp splits each batch of work between its threads and makes them wait for each other
at a barrier; by default a waiting thread spins (`poll`) before it sleeps. With as many
threads as cores, any other runnable process (a test run, an indexing job, a second server)
takes a core from one of them and the other one waits. This measures prompt reading and
decode speed for each thread set-up, alone and beside busy loops (at nice 19, like a niced
test run, and at nice 0, like an indexing job or a web request), so the default can be chosen
on numbers. Interleaved rounds, medians, the load average printed with each row. Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from agents.providers import PROFILES  # noqa: E402
from agents.providers.weights import ensure_weights  # noqa: E402
from planagents.nice import in_niced_thread  # noqa: E402

PROMPT_WORDS = 450  # about 700 tokens: a short planning prompt
DECODE = 64


def server(path: Path, threads: int, poll: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_parallel = 1
    params.n_ctx = 4096
    params.n_batch = params.n_ubatch = 256
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.cpuparams.poll = params.cpuparams_batch.poll = poll
    params.verbosity = -1
    params.ui = False
    return in_niced_thread(lambda: xllamacpp.Server(params), settings.PLANAGENTS_LLM_NICE)


def once(srv: Any) -> tuple[float, float]:
    """Prompt tokens/s and decode tokens/s of one call on a prompt no cache holds."""
    words = " ".join(f"word{i % 97}" for i in range(PROMPT_WORDS))
    body = {
        "messages": [{"role": "user", "content": f"{uuid.uuid4()} Summarise: {words}"}],
        "max_tokens": DECODE,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "cache_prompt": False,
        "ignore_eos": True,
    }
    stamps: list[float] = []
    usage: dict[str, Any] = {}

    def on_chunk(chunk: Any) -> bool:
        if isinstance(chunk, dict):
            if chunk.get("usage"):
                usage.update(chunk["usage"])
            if any((c.get("delta") or {}).get("content") for c in chunk.get("choices") or []):
                stamps.append(time.monotonic())
        return False

    started = time.monotonic()
    srv.handle_chat_completions(body, on_chunk)
    first, last = stamps[0], stamps[-1]
    return usage["prompt_tokens"] / (first - started), (len(stamps) - 1) / (last - first)


def hogs(count: int, nice: int) -> list[subprocess.Popen[bytes]]:
    loop = "while True: pass"
    return [
        subprocess.Popen(["nice", "-n", str(nice), sys.executable, "-c", loop])
        for _ in range(count)
    ]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="local-1.5b")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    row = next(p for p in PROFILES if p.name == args.profile)
    assert row.weights is not None, f"{args.profile} is not a local profile"
    path = ensure_weights(row.weights)
    setups = [(2, 50), (2, 0), (1, 0)]
    loads = [("alone", 0, 0), ("1 busy loop, nice 19", 1, 19), ("2 busy loops, nice 19", 2, 19),
             ("1 busy loop, nice 0", 1, 0)]  # fmt: skip
    results: dict[tuple[int, int, str], list[tuple[float, float]]] = {}
    print(
        f"# {row.weights.name}, {os.cpu_count()} cores, model threads at PLANAGENTS_LLM_NICE",
        flush=True,
    )
    servers = {setup: server(path, *setup) for setup in setups}
    for name, count, nice in loads:
        for round_ in range(args.rounds):
            order = setups if round_ % 2 == 0 else setups[::-1]
            busy = hogs(count, nice)
            try:
                time.sleep(1 if count else 0)
                for setup in order:
                    run = once(servers[setup])
                    results.setdefault((*setup, name), []).append(run)
                    print(f"  {name}, {setup[0]} threads, poll {setup[1]}: prompt {run[0]:.0f}"
                          f" tok/s, decode {run[1]:.1f} tok/s", flush=True)  # fmt: skip
            finally:
                for hog in busy:
                    hog.kill()
                    hog.wait()
        print(f"{name}: done (load average {load()})", flush=True)
    print("\n| beside | threads | poll | prompt tok/s | decode tok/s |")
    print("|---|---|---|---|---|")
    for name, _, _ in loads:
        for threads, poll in setups:
            runs = results[(threads, poll, name)]
            prompt = statistics.median(r[0] for r in runs)
            decode = statistics.median(r[1] for r in runs)
            print(f"| {name} | {threads} | {poll} | {prompt:.0f} | {decode:.1f} |")


if __name__ == "__main__":
    main()
