"""The local models' evidence plan: llama.cpp's native tool calls against the JSON plan under
a grammar (issue 20, item 1: "try llama.cpp's chat-template tool calling, compare it with the
JSON evidence plan, keep the better one per profile").

    .venv/bin/python bench/native_tools.py [--profiles local-1.5b,local] [--per-repo 6]

For each swe-dev task of the grounding subset (bench/grounding.py's, 24 by default), each
local profile writes the round-one evidence plan three ways, from the product's own prompt
(agents.prompts.evidence_plan_prompt):
  json      the structured call sessions make today (plan_schema under the grammar)
  auto      the tools offered as native functions, tool_choice "auto" (the provider's
            stream_tool_calls, read by agents.investigation.native.plan_from)
  required  the same with tool_choice "required" (llama.cpp then holds the reply to its
            tool-call format with a grammar)
Each reply is appended to `--log` as it comes; the same command again goes on where a stopped
run ended, and `--report` only summarises the log. Per way: replies giving at least one lookup, lookups per reply, replies with a lookup whose
argument names a file stem or a definition the real fix changed (gold_spans.jsonl), and the
median seconds per call. Appended to bench/RESULTS-native-tools.md with the load average.
No codebase is indexed: this compares the plans, not what the lookups find. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402

django.setup()

from agents.investigation.evidence import EvidencePlan, plan_schema  # noqa: E402
from agents.investigation.native import plan_from, tool_specs  # noqa: E402
from agents.prompts import evidence_plan_prompt  # noqa: E402
from agents.providers import get_provider  # noqa: E402
from agents.providers.base import CallOptions, ChatMessage, ProviderError, ToolReply  # noqa: E402
from agents.providers.local import LocalLlamaProvider  # noqa: E402

SWE = ROOT.parent / "shared" / "bench" / "swe-dev"
STEPS = 6
WAYS = ("json", "auto", "required")


def subset(per_repo: int) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "bench"))
    from grounding import subset as grounding_subset  # noqa: PLC0415

    return grounding_subset(per_repo)


def gold_words(instance_id: str) -> set[str]:
    """File stems and definition names (last part of `Class.method`) the real fix changed."""
    for line in (SWE / "gold_spans.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["instance_id"] == instance_id:
            words = set()
            for path, names in row["gold_spans"].items():
                words.add(Path(path).stem.lower())
                words.update(n.split(".")[-1].lower() for n in names if n != "docstring")
            return {w for w in words if len(w) > 3 and w != "__init__"}
    return set()


def lookups(provider: LocalLlamaProvider, prompt: str, way: str) -> tuple[list[str], float, str]:
    """The plan's (tool: argument) lookups, the call's seconds, and an error if it failed."""
    options = CallOptions(max_tokens=90 * STEPS + 40, temperature=0.0)
    messages = [ChatMessage("user", prompt)]
    started = time.monotonic()
    try:
        if way == "json":
            plan: EvidencePlan = provider.structured(messages, plan_schema(STEPS), options)
        else:
            raw = "".join(provider.stream_tool_calls(messages, tool_specs(), options, choice=way))
            plan, _ = plan_from(ToolReply.from_json(raw), STEPS, last_round=False)
    except ProviderError as exc:
        return [], time.monotonic() - started, str(exc)[:120]
    found = [f"{s.tool}: {s.argument}" for s in plan.steps]
    return found, time.monotonic() - started, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", default="local-1.5b,local")
    parser.add_argument("--per-repo", type=int, default=6)
    parser.add_argument("--ways", default=",".join(WAYS), help="which of json, auto, required")
    parser.add_argument("--report", action="store_true", help="only summarise the log")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-native-tools.md")
    parser.add_argument("--log", type=Path, default=ROOT / "bench" / "logs" / "native-tools.jsonl")
    args = parser.parse_args()
    instances = subset(args.per_repo)
    ways = [w for w in args.ways.split(",") if w in WAYS]
    load_start = os.getloadavg()[0]
    logged = (
        [json.loads(line) for line in args.log.read_text().splitlines() if line.strip()]
        if args.log.exists()
        else []
    )
    wanted = {i["instance_id"] for i in instances}
    rows = [r for r in logged if r["instance"] in wanted]  # a stopped run goes on from here
    done = {(r["profile"], r["instance"], r["way"]) for r in rows}
    for profile in [] if args.report else args.profiles.split(","):
        provider = get_provider(profile)
        assert isinstance(provider, LocalLlamaProvider), f"{profile} is not a local profile"
        for instance in instances:
            prompt = evidence_plan_prompt(instance["query"], "", STEPS, "en", tools=True)
            plain = evidence_plan_prompt(instance["query"], "", STEPS, "en")
            gold = gold_words(instance["instance_id"])
            for way in ways:
                if (profile, instance["instance_id"], way) in done:
                    continue
                found, seconds, error = lookups(provider, plain if way == "json" else prompt, way)
                row = {
                    "profile": profile, "instance": instance["instance_id"], "way": way,
                    "lookups": found, "seconds": round(seconds, 1), "error": error,
                    "gold": any(g in f.lower() for f in found for g in gold),
                }  # fmt: skip
                rows.append(row)
                with args.log.open("a") as log:
                    log.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)
    load_end = os.getloadavg()[0]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    lines = [
        f"\n## {when}: {len(instances)} swe-dev tasks, round-one evidence plan (bench/native_tools.py)\n",
        "| profile | way | replies with a lookup | lookups per reply | names what the fix changed "
        "| failed calls | median s |",
        "|---|---|---|---|---|---|---|",
    ]
    for profile in args.profiles.split(","):
        for way in ways:
            mine = [r for r in rows if r["profile"] == profile and r["way"] == way]
            n = len(mine)
            usable = sum(bool(r["lookups"]) for r in mine)
            per = statistics.mean(len(r["lookups"]) for r in mine) if mine else 0
            gold = sum(r["gold"] for r in mine)
            failed = sum(bool(r["error"]) for r in mine)
            median = statistics.median(r["seconds"] for r in mine) if mine else 0
            lines.append(
                f"| {profile} | {way} | {usable}/{n} | {per:.1f} | {gold}/{n} | {failed} "
                f"| {median:.1f} |"
            )
    lines.append(f"\nLoad {load_start:.2f} → {load_end:.2f}.\n")
    with args.out.open("a") as out:
        out.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
