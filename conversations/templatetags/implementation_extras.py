"""The plan page's list of implementation checks and its "Check an implementation" button,
computed from the plan alone (the page's view needs no change to show them).

    {% load implementation_extras %}
    {% implementation_checks plan is_owner %}
"""

from __future__ import annotations

from typing import Any

from django import template

from conversations.implementation import LABELS
from conversations.implementation_checks import checks_of
from conversations.models import Plan

register = template.Library()


def counted(check: Any) -> Any:
    """The check with `counts`: (status, label, how many) for the list's badges."""
    found = (check.report or {}).get("counts") or {}
    check.counts = [(k, v, found.get(k, 0)) for k, v in LABELS.items()]
    return check


@register.inclusion_tag("conversations/_implementation_checks.html")
def implementation_checks(plan: Plan, is_owner: bool) -> dict[str, Any]:
    """The plan version's checks, newest first; the owner of an approved version may ask for
    another."""
    return {
        "session": plan.session,
        "plan": plan,
        "implementation_checks": [counted(c) for c in checks_of(plan)],
        "can_check_implementation": bool(is_owner) and plan.review_status == Plan.Review.APPROVED,
    }
