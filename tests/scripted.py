"""Scripted replies for the calls production makes around the turns a test is about.

Sessions investigate as they do in production (PLANAGENTS_EVIDENCE_STEPS at its default), so a
session scripted turn by turn scripts Agent A's evidence plan before its first turn (in
planning mode before the analysis, in debate mode before A's first turn) and, once there is
evidence, the check of each review's objections after the review."""

from __future__ import annotations

from typing import Any

NO_LOOKUPS: dict[str, Any] = {"steps": [], "next_action": "synthesize"}
"""An evidence plan asking for nothing more: the app's own lookups still run (a search of the
task, and the names it writes as code), so the session has evidence."""


def kept(count: int = 1) -> dict[str, Any]:
    """The objection check keeping each of a review's `count` objections."""
    return {
        "verdicts": [
            {"objection": n, "verdict": "keep", "correction": "", "reason": "[E1] agrees."}
            for n in range(1, count + 1)
        ]
    }
