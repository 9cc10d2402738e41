"""A planning session's state machine, whole, in one table: every node, who acts in it, where
it goes next on its own, and where the human's actions take it.

The current node is `PlanningState.current_node`. Automatic nodes run one after another
(agents.planning.workflow binds each to its handler); a node may branch instead of taking its
`next` (validate_proposal sends a proposal that failed path validation back to
propose_changes, as its `branches` say). At the checkpoint the human approves, asks for
changes or stops; a completed session can be reopened for a revision. Every move is a
compare-and-swap on `current_node` from the node the table says it starts at, so two writers
never both move a session. This module holds data only and imports nothing of the project:
the runner, the services, the page's workflow panel and its status line all read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    label: str
    """What the page's workflow panel calls it."""
    actor: str
    """Who works in it: "A", "B", "system" (the app's own checks), "you" (the human)."""
    next: str | None = None
    """Where it goes when it is done, for a node the runner moves on by itself."""
    branches: tuple[str, ...] = ()
    """Other nodes its handler may choose instead of `next`."""


CHECKPOINT = "checkpoint"
COMPLETED = "completed"
STOPPED = "stopped"
"""Where a stopped session's state rests (not a step: the page shows where it stopped)."""

NODES: dict[str, Node] = {
    "investigate": Node("Investigate the code", "A", "analyze_codebase"),
    "analyze_codebase": Node("Analyze codebase", "A", "propose_changes"),
    "propose_changes": Node("Propose changes", "A", "review_and_refine"),
    "review_and_refine": Node("Review & refine", "B", "verify_review"),
    "verify_review": Node("Check the review", "system", "check_rules"),
    "check_rules": Node("Check the codebase's rules", "system", "validate_proposal"),
    "validate_proposal": Node(
        "Validate proposal", "system", CHECKPOINT, branches=("propose_changes",)
    ),
    CHECKPOINT: Node("Your checkpoint", "you"),
    "finalize_plan": Node("Finalize plan", "A", "check_plan_rules"),
    "check_plan_rules": Node("Check the plan's rules", "system", COMPLETED),
    COMPLETED: Node("Completed", ""),
}
"""In the order a session meets them."""

FIRST = next(iter(NODES))

APPROVE, MODIFY, REVISE = "approve", "modify", "revise"
HUMAN: dict[tuple[str, str], str] = {
    (CHECKPOINT, APPROVE): "finalize_plan",
    (CHECKPOINT, MODIFY): "propose_changes",  # with the human's change request as feedback
    (COMPLETED, REVISE): CHECKPOINT,  # reopen a finished plan for changes
}
"""(node, the human's action) → the node it moves the session to."""

AUTOMATIC = tuple(name for name, node in NODES.items() if node.next is not None)
"""The nodes the runner executes; each has a handler."""


def human_move(action: str) -> tuple[str, str]:
    """(from, to) of the human's `action`: the services move a session with a compare-and-
    swap from `from`, so an action the session is no longer waiting for changes nothing."""
    for (start, name), target in HUMAN.items():
        if name == action:
            return start, target
    raise KeyError(action)
