from django.contrib import admin

from rag.models import Codebase, CodeFile


class CodeFileInline(admin.TabularInline):
    model = CodeFile
    fields = ("path", "language", "role", "size", "line_count")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

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
        "embedding_model", "created_at", "updated_at",
    )  # fmt: skip
    inlines = [CodeFileInline]


@admin.register(CodeFile)
class CodeFileAdmin(admin.ModelAdmin):
    list_display = ("path", "codebase", "language", "role", "line_count")
    list_filter = ("role", "language")
    search_fields = ("path",)
    readonly_fields = ("codebase", "path", "language", "role", "size", "line_count", "sha256")
    exclude = ("content",)
