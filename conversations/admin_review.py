"""What a staff reviewer sees beside a plan in the admin: the review history, the session's
other versions, its cost against its budget, the decisions, and the diff to the previous
version. Every value that came from a model or a person is escaped (format_html) or rendered
through the sanitiser (conversations.rendering)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Sum
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from agents.models import LLMCall, PlanReviewEvent
from conversations.models import Message, Plan, PlanningSession
from conversations.plan_diff import diff_plans


def record_review(plan: Plan, reviewer: Any, *, previous: str = "") -> PlanReviewEvent:
    """Keep one review change (status and notes as they are now) in the plan's history."""
    return PlanReviewEvent.objects.create(
        plan=plan,
        reviewer=reviewer if getattr(reviewer, "pk", None) else None,
        status=plan.review_status,
        previous_status=previous or "",
        notes=plan.review_notes,
    )


def review_history_html(plan: Plan) -> str:
    events = list(plan.review_events.select_related("reviewer").order_by("created_at", "pk"))
    if not events:
        return format_html('<p class="review-history">{}</p>', "No review yet.")
    labels = dict(Plan.Review.choices)
    rows = format_html_join(
        "",
        "<li><b>{}</b> {} → <b>{}</b> by {}{}</li>",
        (
            (
                event.created_at.strftime("%Y-%m-%d %H:%M"),
                labels.get(event.previous_status, event.previous_status or "—"),
                labels.get(event.status, event.status),
                event.reviewer.get_username() if event.reviewer else "(deleted user)",
                format_html(": <q>{}</q>", event.notes) if event.notes else "",
            )
            for event in events
        ),
    )
    return format_html('<ol class="review-history">{}</ol>', rows)


def versions_html(plan: Plan) -> str:
    versions = Plan.objects.filter(session_id=plan.session_id).order_by("version")
    links = format_html_join(
        " · ",
        '<a href="{}"{}>v{} ({})</a>',
        (
            (
                reverse("admin:conversations_plan_change", args=[other.pk]),
                mark_safe(' aria-current="page" style="font-weight:bold"')  # noqa: S308 - constant
                if other.pk == plan.pk
                else "",
                other.version,
                other.get_review_status_display(),
            )
            for other in versions
        ),
    )
    return format_html('<p class="plan-versions">{}</p>', links)


def usage_html(session: PlanningSession) -> str:
    """Calls and tokens used against the session's budget, and the cost of its messages."""
    cost = Message.objects.filter(session=session).aggregate(total=Sum("cost_usd"))["total"]
    traced = LLMCall.objects.filter(session=session).aggregate(
        calls=Count("pk"), ms=Sum("duration_ms")
    )
    calls = f"{session.calls_used:,}" + (
        f" of {session.call_budget:,}" if session.call_budget else " (no limit)"
    )
    tokens = f"{session.tokens_used:,}" + (
        f" of {session.token_budget:,}" if session.token_budget else " (no limit)"
    )
    trace_url = reverse("admin:agents_llmcall_changelist") + f"?session__id__exact={session.pk}"
    return format_html(
        '<p class="session-usage">LLM calls: {} · tokens: {} · cost: {} · '
        '<a href="{}">{} traced call(s), {} s in models</a></p>',
        calls,
        tokens,
        f"${cost:.4f}" if cost is not None else "not priced (local or unpriced profiles)",
        trace_url,
        traced["calls"],
        f"{(traced['ms'] or 0) / 1000:,.1f}",
    )


def decisions_html(plan: Plan) -> str:
    """The plan's design decisions, and the log of objections and change requests behind it."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    decisions = [_text(d) for d in data.get("decisions") or []]
    log = [_text(row) for row in data.get("decision_log") or []]
    if not decisions and not log:
        return format_html("<p>{}</p>", "No decisions recorded.")
    listed = format_html_join("", "<li>{}</li>", ((d,) for d in decisions if d))
    logged = (
        format_html(
            "<p><b>{}</b></p><ol>{}</ol>",
            "Decision log",
            format_html_join("", "<li>{}</li>", ((row,) for row in log if row)),
        )
        if log
        else ""
    )
    return format_html('<ul class="plan-decisions">{}</ul>{}', listed, logged)


def diff_html(plan: Plan) -> str:
    previous = (
        Plan.objects.filter(session_id=plan.session_id, version__lt=plan.version)
        .order_by("-version")
        .first()
    )
    if previous is None:
        return format_html("<p>{}</p>", "The first version: nothing to compare with.")
    return render_to_string(
        "admin/conversations/plan/_diff.html",
        {"plan": plan, "base": previous, "diff": diff_plans(previous.markdown, plan.markdown)},
    )


def _text(value: Any) -> str:
    """One decision or log row as a line of text, whatever shape the model gave it."""
    if isinstance(value, dict):
        return " — ".join(str(v) for v in value.values() if v not in (None, "", [], {}))
    return str(value) if value is not None else ""
