"""A session's budget of LLM calls and tokens. Every call is charged before it is made, its
tokens after; when either runs out the agents hand the floor to the human."""

from __future__ import annotations

from django.db.models import F, Q

from agents.errors import BudgetSpent
from agents.providers.base import Usage
from agents.providers.remote import env_float
from conversations.models import PlanningSession


def budget_defaults() -> tuple[int, int]:
    """(calls, tokens) a new session may spend before the human is asked; 0 means no limit."""
    return (
        int(env_float("PLANAGENTS_SESSION_CALL_BUDGET", 200)),
        int(env_float("PLANAGENTS_SESSION_TOKEN_BUDGET", 500_000)),
    )


def charge_call(session_id: int) -> None:
    # One conditional UPDATE: two agents' jobs can never both take the last call.
    charged = (
        PlanningSession.objects.filter(pk=session_id)
        .filter(Q(call_budget=0) | Q(calls_used__lt=F("call_budget")))
        .filter(Q(token_budget=0) | Q(tokens_used__lt=F("token_budget")))
        .update(calls_used=F("calls_used") + 1)
    )
    if not charged:
        session = PlanningSession.objects.get(pk=session_id)
        raise BudgetSpent(budget_message(session))


def charge_tokens(session_id: int, usage: Usage) -> None:
    spent = usage.prompt_tokens + usage.completion_tokens
    if spent:
        PlanningSession.objects.filter(pk=session_id).update(tokens_used=F("tokens_used") + spent)


def budget_message(session: PlanningSession) -> str:
    calls = (
        f"{session.calls_used:,} of {session.call_budget:,} calls"
        if session.call_budget
        else f"{session.calls_used:,} calls"
    )
    tokens = (
        f"{session.tokens_used:,} of {session.token_budget:,} tokens"
        if session.token_budget
        else f"{session.tokens_used:,} tokens"
    )
    return (
        f"this session used its LLM budget ({calls}, {tokens}); "
        "Continue grants another budget of the same size"
    )


def budget_spent(session: PlanningSession) -> bool:
    return bool(
        (session.call_budget and session.calls_used >= session.call_budget)
        or (session.token_budget and session.tokens_used >= session.token_budget)
    )
