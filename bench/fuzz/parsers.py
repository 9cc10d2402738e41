"""Fuzz every upload parser with 10,000+ hostile inputs and count the crashes.

    .venv/bin/python bench/fuzz/parsers.py [--inputs 10000] [--seed 8]

Inputs are drawn by a seeded random.Random from the same generators the fuzz tests use
(tests/fuzz/inputs.py): real Repomix packs in every style and a real zip, mutated (truncated,
spliced, marker tokens inserted and repeated, bytes overwritten), split uploads, and zips of
hostile member names. A crash is any exception other than a PackError with a usable message,
or a parsed result that breaks what parse_upload promises. Exit status 1 when any crashed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rag.parsers import PackError  # noqa: E402
from tests.fuzz.inputs import (  # noqa: E402
    MEMBER_NAMES,
    OPERATIONS,
    SEEDS,
    TOKENS,
    Mutation,
    build_zip,
    check,
    mutate,
)


def draw_mutations(rng: random.Random) -> list[Mutation]:
    return [
        (rng.randrange(OPERATIONS), rng.random(), rng.random(), rng.randrange(len(TOKENS)))
        for _ in range(rng.randint(1, 6))
    ]


def draw_input(rng: random.Random) -> list[tuple[str, bytes]]:
    kind = rng.randrange(3)
    if kind == 0:  # one mutated pack or zip
        return [("upload", mutate(rng.choice(SEEDS), draw_mutations(rng)))]
    if kind == 1:  # a split upload with one mutated part
        parts = [rng.choice(SEEDS[:-1]) for _ in range(rng.randint(2, 3))]
        return [
            (f"part{n}", mutate(p, draw_mutations(rng)) if n else p) for n, p in enumerate(parts)
        ]
    members = [
        (rng.randrange(len(MEMBER_NAMES)), rng.randbytes(rng.randrange(300)))
        for _ in range(rng.randrange(9))
    ]
    data = build_zip(members, stored=rng.random() < 0.5)
    return [("upload.zip", mutate(data, draw_mutations(rng)) if rng.random() < 0.7 else data)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    parsed = refused = 0
    crashes: list[str] = []
    slowest = 0.0
    started = time.perf_counter()
    for n in range(args.inputs):
        parts = draw_input(rng)
        began = time.process_time()
        try:
            outcome = check(parts)
        except Exception:  # noqa: BLE001 (counting crashes is the point)
            crashes.append(f"input {n}: {traceback.format_exc(limit=-3)}")
            continue
        finally:
            slowest = max(slowest, time.process_time() - began)
        if isinstance(outcome, PackError):
            refused += 1
        else:
            parsed += 1
    elapsed = time.perf_counter() - started
    print(f"inputs tried: {args.inputs} (seed {args.seed}) in {elapsed:.1f} s")
    print(f"parsed: {parsed}  refused with a PackError: {refused}  crashes: {len(crashes)}")
    print(f"slowest input: {slowest * 1000:.1f} ms of CPU")
    for crash in crashes[:5]:
        print(crash)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
