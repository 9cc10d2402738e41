"""Template tags for the plan page: whether the plan is stale and its impact map. They compute
from the plan alone, so the page's view needs no change to show them.

    {% load plan_extras %}
    {% plan_stale plan %}      {% plan_impact plan %}      {{ text|plan_markdown }}
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from conversations import impact, stale
from conversations.models import Plan
from conversations.rendering import render_inline, render_markdown

register = template.Library()


@register.inclusion_tag("conversations/_plan_stale.html", takes_context=True)
def plan_stale(context: template.Context, plan: Plan) -> dict[str, Any]:
    """A warning when the code the plan rests on changed (or when it can't tell), with
    Re-validate and Re-plan."""
    return {
        "report": stale.check(plan),
        "plan": plan,
        "session": plan.session,
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("conversations/_plan_impact.html")
def plan_impact(plan: Plan) -> dict[str, Any]:
    """The plan's files with their importers and imports, as an SVG picture."""
    return {"impact": impact.for_plan(plan), "colours": impact.COLOURS}


@register.filter
def plan_markdown(text: object) -> SafeString:
    """A plan field (model-written text) as sanitised HTML: `code`, emphasis and lists render
    instead of showing their markup."""
    return render_markdown(str(text or ""))  # type: ignore[return-value]


@register.filter
def plan_inline(text: object) -> SafeString:
    """A one-line plan field (a step's title, model-written) as sanitised inline HTML."""
    return render_inline(str(text or ""))  # type: ignore[return-value]
