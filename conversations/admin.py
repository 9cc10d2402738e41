import json
from typing import Any

from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from conversations import stale
from conversations.admin_review import (
    decisions_html,
    diff_html,
    record_review,
    review_history_html,
    usage_html,
    versions_html,
)
from conversations.models import (
    CommentRequest,
    Message,
    Plan,
    PlanComment,
    PlanningSession,
    PlanningState,
    Reviewer,
    ShareLink,
    SignOff,
)
from conversations.rendering import render_markdown
from conversations.sharing import revoke


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

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PlanningSession)
class PlanningSessionAdmin(admin.ModelAdmin):
    """Staff read sessions here; they never write them. Status, counters, budgets and the
    stop/cancel flags are the workflow's own state: an edit here would race the worker that owns
    the session and could corrupt it (a "completed" session with no plan, negative budgets).
    Staff act on a session's outcome through its plans (review status and notes)."""

    list_display = ("title", "owner", "codebase", "mode", "status", "created_at")
    list_filter = ("mode", "status")
    search_fields = ("title", "task", "owner__username")
    inlines = [PlanningStateInline, MessageInline]
    exclude = ("task_analysis",)  # shown as `analysis` below, indented

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = [f.name for f in self.model._meta.fields if f.name != "task_analysis"]
        return [*fields, "analysis", "llm_trace"]

    @admin.display(description="LLM calls")
    def llm_trace(self, obj: PlanningSession) -> str:
        """The session's traced calls (prompt and raw output of each), read-only."""
        url = reverse("admin:agents_llmcall_changelist") + f"?session__id__exact={obj.pk}"
        return format_html('<a href="{}">{} traced call(s)</a>', url, obj.llm_calls.count())

    @admin.display(description="Task analysis")
    def analysis(self, obj: PlanningSession) -> str:
        """The route and analysis (agents.routing, agents.analysis) as indented JSON; the
        values come from the task text, so format_html escapes them."""
        if not obj.task_analysis:
            return "—"
        text = json.dumps(obj.task_analysis, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre class="task-analysis">{}</pre>', text)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


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
        "review_status",
        "review_notes",
        "reviewer",
        "reviewed_at",
        "review_history",
        "made_by",
        "staleness",
        "versions",
        "usage",
        "decisions",
        "rendered",
        "diff",
        "structured",
    )
    readonly_fields = (
        "session",
        "version",
        "made_by",
        "staleness",
        "rendered",
        "reviewer",
        "reviewed_at",
        "review_history",
        "versions",
        "usage",
        "decisions",
        "diff",
        "structured",
    )

    @admin.display(description="owner")
    def session_owner(self, obj: Plan) -> str:
        return obj.session.owner.get_username()

    @admin.display(description="Plan")
    def rendered(self, obj: Plan) -> str:
        return format_html(
            '<div class="plan-rendered" style="max-width:900px">{}</div>',
            render_markdown(obj.markdown),
        )

    @admin.display(description="Made by")
    def made_by(self, obj: Plan) -> str:
        return obj.made_by

    @admin.display(description="Against the code now")
    def staleness(self, obj: Plan) -> str:
        """What the plan page's stale warning says: current, stale (which files), or unknown."""
        report = stale.check(obj)
        if report.state == "fresh":
            return "Current: nothing the plan rests on changed."
        if not report.is_stale:
            return f"Can't tell: {report.reason}"
        changed = "; ".join(f"{path} {said}" for path, said in report.by_file)
        return f"Stale: {changed}"

    @admin.display(description="Review history")
    def review_history(self, obj: Plan) -> str:
        return review_history_html(obj)

    @admin.display(description="Versions")
    def versions(self, obj: Plan) -> str:
        return versions_html(obj)

    @admin.display(description="Session cost and budget")
    def usage(self, obj: Plan) -> str:
        return usage_html(obj.session)

    @admin.display(description="Decisions")
    def decisions(self, obj: Plan) -> str:
        return decisions_html(obj)

    @admin.display(description="Changes from the previous version")
    def diff(self, obj: Plan) -> str:
        return diff_html(obj)

    def save_model(self, request: HttpRequest, obj: Plan, form: Any, change: bool) -> None:
        reviewed = change and {"review_status", "review_notes"} & set(form.changed_data)
        if reviewed:
            obj.reviewer = request.user  # type: ignore[assignment]
            obj.reviewed_at = timezone.now()
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if reviewed:
                record_review(obj, request.user, previous=form.initial.get("review_status", ""))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    """Staff see who shares what and can revoke a link; they never create or edit one (the
    token exists only in the link its owner was shown)."""

    list_display = ("session", "owner", "may_comment", "created_at", "expires_at", "revoked_at")
    list_filter = ("may_comment", "revoked_at", "expires_at")
    search_fields = ("session__title", "session__owner__username")
    fields = (
        "session", "created_by", "created_at", "pinned_plan", "shows_rules", "shows_evidence",
        "may_comment", "expires_at", "revoked_at",
    )  # fmt: skip
    readonly_fields = fields
    actions = ["revoke_links"]

    @admin.display(description="owner")
    def owner(self, obj: ShareLink) -> str:
        return obj.session.owner.get_username()

    @admin.action(description="Revoke the selected links", permissions=["change"])
    def revoke_links(self, request: HttpRequest, queryset: Any) -> None:
        count = revoke(queryset)
        self.message_user(request, f"{count} link(s) revoked.")

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).select_related("session__owner")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records staff read (and may delete) but never write: each is made on the plan page by
    the people it concerns."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PlanComment)
class PlanCommentAdmin(ReadOnlyAdmin):
    list_display = ("pk", "session", "plan", "written_by", "anchor_kind", "status", "created_at")
    list_filter = ("status", "anchor_kind", ("share_link", admin.EmptyFieldListFilter))
    search_fields = ("text", "session__title", "author__username", "guest_name")
    list_select_related = ("session", "plan__session", "author")

    @admin.display(description="written by")
    def written_by(self, obj: PlanComment) -> str:
        """The account, or the name given through a share link, marked as such."""
        if obj.via_link:
            return f"{obj.guest_name} (via share link)"
        return obj.author.get_username() if obj.author else "(deleted user)"


@admin.register(CommentRequest)
class CommentRequestAdmin(ReadOnlyAdmin):
    list_display = ("pk", "session", "base", "section", "created_at")
    search_fields = ("session__title",)
    list_select_related = ("session", "base__session")


@admin.register(Reviewer)
class ReviewerAdmin(ReadOnlyAdmin):
    list_display = ("user", "role", "session", "codebase", "invited_by", "created_at")
    list_filter = ("role",)
    search_fields = ("user__username", "session__title", "codebase__name")
    list_select_related = ("user", "session", "codebase", "invited_by")


@admin.register(SignOff)
class SignOffAdmin(ReadOnlyAdmin):
    list_display = ("reviewer", "verdict", "plan", "session", "created_at")
    list_filter = ("verdict",)
    search_fields = ("reviewer__username", "session__title", "note")
    list_select_related = ("reviewer", "plan__session", "session")
