"""The planning workflow as a table: node → handler → next node.

The current node lives in PlanningState; each node's result is committed with a compare-and-
swap on `current_node`, so a crash resumes at the last committed node and a node whose turn
already finished is not written twice (turns are idempotent by turn_key)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agents.planning.nodes import (
    NodeContext,
    NodeResult,
    analyze_codebase,
    finalize_plan,
    propose_changes,
    review_and_refine,
    validate_proposal,
)
from agents.turns import require_running
from conversations.models import PlanningSession, PlanningState


@dataclass(frozen=True)
class Step:
    handler: Callable[[NodeContext], NodeResult]
    next_node: str


WORKFLOW: dict[str, Step] = {
    "analyze_codebase": Step(analyze_codebase, "propose_changes"),
    "propose_changes": Step(propose_changes, "review_and_refine"),
    "review_and_refine": Step(review_and_refine, "validate_proposal"),
    "validate_proposal": Step(validate_proposal, "checkpoint"),  # or back to propose_changes
    "finalize_plan": Step(finalize_plan, "completed"),
}
CHECKPOINT = "checkpoint"
COMPLETED = "completed"


def run_planning(session_id: int) -> str:
    """Run nodes until the workflow needs the human or is done; return where it stopped."""
    context: NodeContext | None = None
    while True:
        session = require_running(session_id)
        state = PlanningState.objects.get(session_id=session_id)
        node = state.current_node
        if node in (CHECKPOINT, COMPLETED):
            return node
        step = WORKFLOW[node]
        if context is None:
            context = NodeContext.load(session, state)
        context.session, context.state = session, state
        result = step.handler(context)
        moved = PlanningState.objects.filter(session_id=session_id, current_node=node).update(
            current_node=result.next_node or step.next_node, **result.changes
        )
        if not moved:
            # Someone else (a re-delivered job, the human) moved the workflow on: let them.
            return PlanningState.objects.values_list("current_node", flat=True).get(
                session_id=session_id
            )
        PlanningSession.objects.filter(pk=session_id).update(error="")
