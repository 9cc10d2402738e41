"""Staff read the trace of LLM calls and the review history here; neither is ever edited."""

from typing import Any

from django.contrib import admin
from django.db.models import Count, F, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from agents import estimate, trace
from agents.models import LLMCall, PlanReviewEvent, SessionEstimate


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "session",
        "message",
        "purpose",
        "profile",
        "model",
        "outcome",
        "prompt_tokens",
        "completion_tokens",
        "duration_ms",
        "created_at",
    )
    list_filter = ("outcome", "profile")
    search_fields = ("session__title", "purpose", "model")
    list_select_related = ("session", "message")
    fields = (
        "session",
        "message",
        "purpose",
        "profile",
        "model",
        "schema",
        "outcome",
        "note",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "duration_ms",
        "truncated",
        "created_at",
        "text",
    )
    readonly_fields = fields

    @admin.display(description="Prompt and output")
    def text(self, obj: LLMCall) -> str:
        """The call as plain text inside <pre>: escaped, never rendered."""
        return format_html(
            '<pre style="white-space:pre-wrap;max-width:1000px">{}</pre>', trace.as_text(obj)
        )


@admin.register(PlanReviewEvent)
class PlanReviewEventAdmin(ReadOnlyAdmin):
    list_display = ("plan", "previous_status", "status", "reviewer", "created_at")
    list_filter = ("status",)
    fields = ("plan", "reviewer", "previous_status", "status", "notes", "created_at")
    readonly_fields = fields


def _off(stored: SessionEstimate, name: str, used: float | None) -> str:
    error = estimate.ape(getattr(stored, name), used)
    return "—" if error is None else f"{error:.0f} %"


@admin.register(SessionEstimate)
class SessionEstimateAdmin(ReadOnlyAdmin):
    """Each session's estimate at the start against what it used, and above the list how far
    off estimates have been: the median absolute percentage error of time and tokens over the
    completed sessions."""

    list_display = (
        "session",
        "mode",
        "agent_a_profile",
        "agent_b_profile",
        "history",
        "basis",
        "calls_vs",
        "tokens_vs",
        "tokens_off",
        "time_vs",
        "time_off",
        "created_at",
    )
    list_filter = ("mode", "basis", "agent_a_profile")
    list_select_related = ("session",)
    fields = (
        "session",
        "mode",
        "agent_a_profile",
        "agent_b_profile",
        "history",
        "basis",
        "calls",
        "tokens",
        "tokens_low",
        "tokens_high",
        "seconds",
        "seconds_low",
        "seconds_high",
        "cost_usd",
        "detail",
        "created_at",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[SessionEstimate]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                used_calls=Count("session__llm_calls"),
                used_tokens=Sum(
                    F("session__llm_calls__prompt_tokens")
                    + F("session__llm_calls__completion_tokens")
                ),
                used_ms=Sum("session__llm_calls__duration_ms"),
            )
        )

    @admin.display(description="Calls (est. / actual)")
    def calls_vs(self, obj: Any) -> str:
        return f"{_num(obj.calls)} / {obj.used_calls}"

    @admin.display(description="Tokens (est. / actual)")
    def tokens_vs(self, obj: Any) -> str:
        return f"{_num(obj.tokens)} / {_num(obj.used_tokens)}"

    @admin.display(description="Tokens off by")
    def tokens_off(self, obj: Any) -> str:
        return _off(obj, "tokens", obj.used_tokens)

    @admin.display(description="Time (est. / actual)")
    def time_vs(self, obj: Any) -> str:
        used = None if obj.used_ms is None else obj.used_ms / 1000
        return f"{estimate.duration(obj.seconds)} / {estimate.duration(used)}"

    @admin.display(description="Time off by")
    def time_off(self, obj: Any) -> str:
        return _off(obj, "seconds", None if obj.used_ms is None else obj.used_ms / 1000)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(
            request,
            {**(extra_context or {}), "subtitle": error_summary(self.get_queryset(request))},
        )


def error_summary(rows: QuerySet[SessionEstimate]) -> str:
    """How far off the estimates of completed sessions have been, in one line."""
    done: list[Any] = list(rows.filter(session__status="completed"))
    seconds, n_seconds = estimate.mdape(
        estimate.ape(r.seconds, None if r.used_ms is None else r.used_ms / 1000) for r in done
    )
    tokens, n_tokens = estimate.mdape(estimate.ape(r.tokens, r.used_tokens) for r in done)

    def said(value: float | None, n: int) -> str:
        return "no estimate to check yet" if value is None else f"{value:.0f} % over {n} sessions"

    return (
        "Median absolute percentage error of completed sessions: "
        f"time {said(seconds, n_seconds)}; tokens {said(tokens, n_tokens)}."
    )


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"
