"""The approval gate of the codebase's rules: which critical violations of the proposal at the
checkpoint block Approve, and the human's override of them (recorded as their message). Reads
what the rules check (agents.rules) stored; makes no model call, so the services and the
page's state can ask it without loading the agents' runtime."""

from __future__ import annotations

from typing import Any

from agents.plan_rules import quote
from conversations.models import Message, PlanningState
from rag.models import Rule


def proposal_key(iteration: int) -> str:
    return f"rules:proposal:{iteration}"


def latest_check(session_id: int, iteration: int) -> dict[str, Any] | None:
    row = (
        Message.objects.filter(
            session_id=session_id, turn_key=proposal_key(iteration), state=Message.State.COMPLETE
        )
        .values_list("data", flat=True)
        .first()
    )
    found = row.get("rules_check") if isinstance(row, dict) else None
    return found if isinstance(found, dict) else None


def override_for(session_id: int, iteration: int) -> dict[str, Any] | None:
    """The human's override of this iteration's critical violations, if they gave one."""
    for data in Message.objects.filter(
        session_id=session_id, role=Message.Role.USER, data__has_key="rules_override"
    ).values_list("data", flat=True):
        found = data.get("rules_override") if isinstance(data, dict) else None
        if isinstance(found, dict) and found.get("iteration") == iteration:
            return found
    return None


def blocking(session_id: int) -> list[dict[str, Any]]:
    """The critical violations of the proposal at the checkpoint that no override covers."""
    iteration = (
        PlanningState.objects.filter(session_id=session_id)
        .values_list("iteration", flat=True)
        .first()
    )
    if iteration is None:
        return []
    result = latest_check(session_id, iteration)
    if not result or override_for(session_id, iteration) is not None:
        return []
    return [v for v in result["violations"] if v["severity"] == Rule.Severity.CRITICAL]


def override_record(
    session_id: int, violations: list[dict[str, Any]], reason: str
) -> dict[str, Any]:
    iteration = PlanningState.objects.values_list("iteration", flat=True).get(session_id=session_id)
    return {
        "rules_override": {
            "iteration": iteration,
            "reason": reason,
            "rules": [{"label": v["label"], "text": v["text"]} for v in violations],
        }
    }


def override_text(violations: list[dict[str, Any]], reason: str) -> str:
    labels = ", ".join(f"{v['label']} {quote(v['text'])}" for v in violations)
    return f"Overrode the critical rule(s) {labels}. Reason: {reason}"


def state(session_id: int) -> dict[str, Any]:
    """What the checkpoint shows about the rules: what blocks approval now."""
    return {
        "blocking": [
            {"label": v["label"], "text": v["text"], "explanation": v["explanation"]}
            for v in blocking(session_id)
        ]
    }
