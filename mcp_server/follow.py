"""Following a session for an MCP call: its progress as MCP progress notifications, read from
the session's rows (what the page's `session.state` frames are made of: they are on record
whichever process runs the job, in-process or on a Celery worker), until it has a plan.

At the checkpoint the proposal is approved as the page's Approve button would (the caller
asked for a plan; a proposal that breaks a critical codebase rule is not approved: that needs
a human's reason, so the call returns with the rules named). A debate that hands over is
ended and its plan written, as the page's Write plan does."""

from __future__ import annotations

import time
from typing import Any

import anyio
from asgiref.sync import sync_to_async

from conversations.models import PlanningSession
from mcp_server import plans
from mcp_server.identity import Caller

POLL_SECONDS = 0.25
DEFAULT_WAIT_SECONDS = 1800
STOPPED_GRACE_SECONDS = 30

Status = PlanningSession.Status


async def follow(
    ctx: Any, caller: Caller, session_id: int, wait_seconds: float = DEFAULT_WAIT_SECONDS
) -> plans.Snapshot:
    """Follow the session until it rests (a plan, a question for the human, a failure) or
    `wait_seconds` pass; each change of its status line is one progress notification."""
    deadline = time.monotonic() + max(1.0, wait_seconds)
    said = ""
    acted: set[tuple[str, str]] = set()
    stopped_at: float | None = None
    while True:
        snap = await sync_to_async(plans.snapshot)(caller, session_id)
        if snap.line != said:
            said = snap.line
            await ctx.report_progress(snap.step, snap.total or None, snap.line)
        if snap.status == Status.RUNNING or (snap.status, snap.node) in acted:
            pass  # still working, or what we did has not shown yet
        elif (
            snap.at_checkpoint and not snap.blocking and snap.mode == PlanningSession.Mode.PLANNING
        ):
            await sync_to_async(plans.approve)(caller, session_id)
            acted.add((snap.status, snap.node))
        elif snap.status == Status.AWAITING_HUMAN and snap.mode == PlanningSession.Mode.DEBATE:
            await sync_to_async(plans.end_debate)(caller, session_id)
            acted.add((snap.status, snap.node))
        elif snap.status != Status.STOPPED or snap.plan_version is not None:
            return snap  # completed, failed, a question or blocking rules for the human
        else:  # stopped: a debate's plan is written just after; give it a moment
            stopped_at = stopped_at or time.monotonic()
            if time.monotonic() - stopped_at > STOPPED_GRACE_SECONDS:
                return snap
        if time.monotonic() >= deadline:
            return snap
        await anyio.sleep(POLL_SECONDS)
