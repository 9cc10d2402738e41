from django.contrib import admin

from rag.models import Codebase, CodebaseVersion, CodeFile, Pin, Rule


class CodeFileInline(admin.TabularInline):
    model = CodeFile
    fields = ("path", "language", "role", "size", "line_count", "withheld_reason")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


class CodebaseVersionInline(admin.TabularInline):
    model = CodebaseVersion
    fields = (
        "number", "kind", "uploaded_at", "indexed_at", "file_count",
        "added_count", "removed_count", "changed_count",
    )  # fmt: skip
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Codebase)
class CodebaseAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "status", "file_count", "chunk_count", "created_at")
    list_filter = ("status", "source_format")
    search_fields = ("name", "owner__username")
    readonly_fields = (
        "source_format", "upload_path", "status", "error", "progress", "progress_stage",
        "file_count", "chunk_count", "total_bytes", "languages", "content_hash",
        "upload_sha256", "uploaded_at", "warnings", "embedding_model", "created_at",
        "updated_at",
    )  # fmt: skip
    inlines = [CodebaseVersionInline, CodeFileInline]


@admin.register(CodeFile)
class CodeFileAdmin(admin.ModelAdmin):
    list_display = ("path", "codebase", "language", "role", "line_count", "withheld_reason")
    list_filter = ("role", "language")
    search_fields = ("path",)
    readonly_fields = (
        "codebase", "path", "language", "role", "size", "line_count", "sha256", "withheld_reason",
    )  # fmt: skip
    exclude = ("content",)


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    list_display = ("codebase", "severity", "enabled", "source", "text")
    list_filter = ("severity", "enabled")
    search_fields = ("text", "codebase__name")


@admin.register(Pin)
class PinAdmin(admin.ModelAdmin):
    list_display = ("codebase", "kind", "path", "created_at")
    search_fields = ("path", "text", "codebase__name")
