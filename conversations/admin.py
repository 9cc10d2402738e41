from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html

from conversations.models import Message, Plan, PlanningSession, PlanningState
from conversations.rendering import render_markdown


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    can_delete = False
    fields = (
        "seq",
        "role",
        "agent",
        "node",
        "state",
        "signal",
        "short_content",
        "model",
        "completion_tokens",
    )
    readonly_fields = fields
    ordering = ("seq",)

    @admin.display(description="content")
    def short_content(self, obj: Message) -> str:
        return obj.content[:300] + ("…" if len(obj.content) > 300 else "")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class PlanningStateInline(admin.StackedInline):
    model = PlanningState
    can_delete = False
    readonly_fields = (
        "current_node",
        "iteration",
        "validation_failures",
        "analysis",
        "proposal",
        "review",
        "validation",
        "feedback",
    )
    fields = readonly_fields


@admin.register(PlanningSession)
class PlanningSessionAdmin(admin.ModelAdmin):
    list_display = ("title", "owner", "codebase", "mode", "status", "created_at")
    list_filter = ("mode", "status")
    search_fields = ("title", "task", "owner__username")
    readonly_fields = (
        "owner",
        "codebase",
        "last_seq",
        "turn_index",
        "heartbeat_at",
        "created_at",
        "updated_at",
    )
    inlines = [PlanningStateInline, MessageInline]


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "session_owner",
        "version",
        "review_status",
        "reviewer",
        "created_at",
    )
    list_filter = ("review_status",)
    search_fields = ("session__title", "markdown")
    fields = (
        "session",
        "version",
        "rendered",
        "review_status",
        "review_notes",
        "reviewer",
        "reviewed_at",
        "structured",
    )
    readonly_fields = ("session", "version", "rendered", "reviewer", "reviewed_at", "structured")

    @admin.display(description="owner")
    def session_owner(self, obj: Plan) -> str:
        return obj.session.owner.get_username()

    @admin.display(description="Plan")
    def rendered(self, obj: Plan) -> str:
        return format_html(
            '<div class="plan-rendered" style="max-width:900px">{}</div>',
            render_markdown(obj.markdown),
        )

    def save_model(self, request: HttpRequest, obj: Plan, form: Any, change: bool) -> None:
        if change and {"review_status", "review_notes"} & set(form.changed_data):
            obj.reviewer = request.user  # type: ignore[assignment]
            obj.reviewed_at = timezone.now()
        super().save_model(request, obj, form, change)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
