"""Why an agent turn ended early: each is caught by the session job, which gives the human the
floor with the message as the reason."""

from __future__ import annotations


class TurnFailed(Exception):
    """The model failed mid-turn; the partial text was kept and marked interrupted."""


class TurnCancelled(TurnFailed):
    """The human stopped the reply being written; the session goes on with them."""


class BudgetSpent(TurnFailed):
    """The session used its LLM calls or tokens; the human decides whether to spend more."""
