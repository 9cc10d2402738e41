"""Staff read the trace of LLM calls and the review history here; neither is ever edited."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from agents import trace
from agents.models import LLMCall, PlanReviewEvent


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
