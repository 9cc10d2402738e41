"""The planning workflow as a table: node → handler → next node.

The current node lives in PlanningState; each node's result is committed with a compare-and-
swap on `current_node`, so a crash resumes at the last committed node and a node whose turn
already finished is not written twice (turns are idempotent by turn_key)."""

from __future__ import annotations

from collections.abc import Callable

from agents.planning.nodes import (
    NodeContext,
    NodeResult,
    analyze_codebase,
    check_plan_rules,
    check_rules,
    finalize_plan,
    investigate,
    propose_changes,
    review_and_refine,
    validate_proposal,
    verify_review,
)
from agents.turns import require_running
from agents.workflow import AUTOMATIC, NODES
from conversations.models import PlanningSession, PlanningState
from conversations.store import publish_state

HANDLERS: dict[str, Callable[[NodeContext], NodeResult]] = {
    "analyze_codebase": analyze_codebase,
    "investigate": investigate,
    "propose_changes": propose_changes,
    "review_and_refine": review_and_refine,
    "verify_review": verify_review,  # B's objections vs the evidence
    "check_rules": check_rules,  # the codebase's rules (if any)
    "validate_proposal": validate_proposal,  # or back to propose_changes, unless looping
    "finalize_plan": finalize_plan,
    "check_plan_rules": check_plan_rules,
}
"""The handler of each automatic node of the state table (agents.workflow.NODES)."""
if set(HANDLERS) != set(AUTOMATIC):  # pragma: no cover - a table edited on one side only
    raise ImportError(f"handlers {sorted(HANDLERS)} do not match the table {sorted(AUTOMATIC)}")


def run_planning(session_id: int) -> str:
    """Run nodes until the workflow needs the human or is done; return where it stopped."""
    context: NodeContext | None = None
    while True:
        session = require_running(session_id)
        state = PlanningState.objects.get(session_id=session_id)
        node = state.current_node
        if node not in HANDLERS:  # the checkpoint, completed, stopped: not the runner's
            return node
        if context is None:
            context = NodeContext.load(session, state)
        context.session, context.state = session, state
        result = HANDLERS[node](context)
        target = result.next_node or NODES[node].next
        if target != NODES[node].next and target not in NODES[node].branches:
            raise ValueError(f"{node} may not move to {target}: not in the state table")
        moved = PlanningState.objects.filter(session_id=session_id, current_node=node).update(
            current_node=target, **result.changes
        )
        if not moved:
            # Someone else (a re-delivered job, the human) moved the workflow on: let them.
            return PlanningState.objects.values_list("current_node", flat=True).get(
                session_id=session_id
            )
        PlanningSession.objects.filter(pk=session_id).update(error="")
        publish_state(session_id)  # the page shows the node now running, not the last one
