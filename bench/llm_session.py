"""Whole planning sessions on the real local model, timed end to end.

    .venv/bin/python bench/llm_session.py [--profile local] [--sessions 1]
    .venv/bin/python bench/llm_session.py --instance mwaskom__seaborn-2848 [--show]

With --instance, one session runs on that swe-dev instance instead: its real issue as the task,
its project's pack (from the swe-dev corpus, `--corpus`, built by build_corpus.sh) as the
codebase; --show prints every message and the final plan, to read what the product produced.

The 10-file sample pack (tests/fixtures/repomix/sample.xml) is uploaded and indexed, then
`--sessions` planning sessions start at the same moment with both agents on `--profile`; each is
approved at its checkpoint (a clarifying question gets the stock ANSWER) and runs to
`completed`. Reported per session: first streamed token,
time to the checkpoint, total, tokens. Everything runs in this process on a throwaway data dir
and SQLite database (jobs on daemon threads, as in a management command). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# PLANAGENTS_BENCH_DATA: a data dir kept between runs (bench/grounding.py indexes each pack once).
DATA = Path(os.environ.get("PLANAGENTS_BENCH_DATA") or tempfile.mkdtemp(prefix="planagents-bench-"))
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
os.environ["PLANAGENTS_DATA_DIR"] = str(DATA)
os.environ["PLANAGENTS_SQLITE_PATH"] = str(DATA / "bench.sqlite3")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PLANAGENTS_LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db.models import Sum  # noqa: E402

from agents.investigation.clarify import pending_question  # noqa: E402
from conversations import services  # noqa: E402
from conversations.models import Message, Plan, PlanningSession, PlanningState  # noqa: E402
from rag.models import Codebase  # noqa: E402
from rag.services import create_codebase_from_upload  # noqa: E402

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
TASKS = [
    "Add per-client rate limiting to the API: 60 requests per minute, answer 429 with Retry-After.",
    "Make user lookups by email case-insensitive and add tests for it.",
]
Status = PlanningSession.Status
ANSWER = "No preference: do what the issue describes and the code supports."
"""What the bench answers when Agent A asks a clarifying question (as a new user might)."""


def wait(condition: Callable[[], bool], what: str, timeout: float = 1800) -> None:
    pause = threading.Event()
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"gave up waiting for {what}")
        pause.wait(0.2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="local")
    parser.add_argument("--sessions", type=int, default=1, choices=(1, 2))
    parser.add_argument("--instance", default="", help="a swe-dev instance id")
    parser.add_argument("--corpus", type=Path, default=ROOT / "var" / "swe-dev")
    parser.add_argument("--show", action="store_true", help="print the messages and the plan")
    args = parser.parse_args()

    pack, tasks, gold = PACK, TASKS, []
    if args.instance:
        instance = _instance(args.instance)
        pack = args.corpus / "packs" / f"{instance['pypi_name']}-{instance['pypi_version']}.xml"
        tasks, gold, args.sessions = [instance["query"]], instance["gold_files"], 1

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-only-not-a-secret")
    upload = SimpleUploadedFile(pack.name, pack.read_bytes(), content_type="text/xml")
    codebase = create_codebase_from_upload(user, pack.stem, [upload])
    wait(lambda: Codebase.objects.get(pk=codebase.pk).status in ("ready", "failed"), "indexing")
    codebase.refresh_from_db()
    if not codebase.is_ready:
        raise SystemExit(f"indexing failed: {codebase.error}")
    print(f"indexed {pack.name} into {DATA}; load average {os.getloadavg()[0]:.2f}")

    started = time.monotonic()
    ids = [
        services.start_session(
            user,
            codebase=codebase,
            task=tasks[i],
            mode=PlanningSession.Mode.PLANNING,
            agent_a_profile=args.profile,
            agent_b_profile=args.profile,
        ).pk
        for i in range(args.sessions)
    ]
    first, checkpoint, done = drive(user, ids, started)

    for sid in ids:
        tokens = Message.objects.filter(session_id=sid).aggregate(
            p=Sum("prompt_tokens"), c=Sum("completion_tokens")
        )
        print(
            f"session {sid} ({args.sessions} at once, {args.profile}): first token "
            f"{first.get(sid, float('nan')):.1f}s, checkpoint {checkpoint.get(sid, float('nan')):.0f}s, "
            f"total {done[sid]:.0f}s; {tokens['p'] or 0} prompt + {tokens['c'] or 0} completion tokens"
        )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if args.show:
        for sid in ids:
            _show(sid, gold)


def drive(
    user: Any, ids: list[int], started: float, limit: float = 3600
) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """Run sessions `ids` to their end, approving each at its checkpoint: seconds since
    `started` to each one's first streamed token, checkpoint and end (or `limit`, when a
    session is still running then)."""
    first: dict[int, float] = {}
    checkpoint: dict[int, float] = {}
    done: dict[int, float] = {}
    pause = threading.Event()
    while len(done) < len(ids):
        now = time.monotonic() - started
        for sid in ids:
            if sid in done:
                continue
            if sid not in first and (
                Message.objects.filter(session_id=sid, role=Message.Role.AGENT)
                .exclude(content="")
                .exists()
            ):
                first[sid] = now
            status = PlanningSession.objects.values_list("status", flat=True).get(pk=sid)
            at_checkpoint = PlanningState.objects.filter(
                session_id=sid, current_node="checkpoint"
            ).exists()
            if status == Status.AWAITING_HUMAN and not at_checkpoint and pending_question(sid):
                print(f"session {sid}: asked {pending_question(sid)!r}; answering")
                services.post_user_message(user, sid, ANSWER)
            elif status == Status.AWAITING_HUMAN and not at_checkpoint:
                done[sid] = now  # paused for the human (an error): nothing more will happen
                print(f"session {sid}: paused at {now:.0f}s")
            elif status == Status.AWAITING_HUMAN and sid not in checkpoint:
                checkpoint[sid] = now
                services.approve(user, sid)
            elif status in (Status.COMPLETED, Status.STOPPED, Status.FAILED):
                done[sid] = now
                print(f"session {sid}: {status} at {now:.0f}s")
        if now > limit:
            for sid in set(ids) - done.keys():
                done[sid] = now
                print(f"session {sid}: still running after {limit:.0f}s; gave up")
        pause.wait(0.2)

    return first, checkpoint, done


def _instance(instance_id: str) -> dict[str, Any]:
    lines = (ROOT.parent / "shared" / "bench" / "swe-dev" / "instances.jsonl").read_text()
    for line in lines.splitlines():
        row = json.loads(line)
        if row["instance_id"] == instance_id:
            return dict(row)
    raise SystemExit(f"no swe-dev instance {instance_id}")


def _show(session_id: int, gold: list[str]) -> None:
    for m in Message.objects.filter(session_id=session_id).order_by("seq"):
        who = f"Agent {m.agent}" if m.agent else m.role
        print(f"\n===== #{m.seq} {who} · {m.node} · {m.state} · {m.completion_tokens} tokens")
        print(m.content[:4000])
    plan = Plan.objects.filter(session_id=session_id).order_by("-version").first()
    if plan is None:
        print("\n(no plan)")
        return
    print(f"\n===== final plan v{plan.version}\n{plan.markdown}")
    files = [f.get("path") for f in plan.structured.get("files", [])]
    print(f"\ngold files {gold}: named in the plan's Files: {[g in files for g in gold]}")


if __name__ == "__main__":
    main()
