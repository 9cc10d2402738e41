from __future__ import annotations

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.db.models.functions import Substr
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from rag import api, git_sync, index, profile, rules_views, services, versions
from rag.chunking import split_lines
from rag.forms import GitSourceForm, NewVersionForm, UploadForm
from rag.models import Codebase, CodebaseVersion, CodeFile
from rag.paths import FileSet
from rag.roles import (
    LEXICAL_ONLY,
    ROLES,
    InvalidOverride,
    nested_projects,
    parse_overrides,
    reason_for,
)
from rag.tree import folder_entries, normalize_folder

SHOW_LEXICAL_ONLY = 200
"""Vendored and generated files listed (with why) on the codebase page; the rest are counted."""
MAX_OVERRIDES_CHARS = 20_000
SHOW_WITHHELD = 200
"""Withheld files listed on the codebase page; the rest are counted."""
MAX_FOLDER_CHARS = 1000
SHOW_VERSIONS = 50
"""Versions listed on the codebase page, newest first; the rest are counted."""


@login_required
@require_GET
def codebase_list(request: HttpRequest) -> HttpResponse:
    codebases = list(services.codebases_for(request.user))
    latest = versions.latest_numbers(c.pk for c in codebases)
    rows = [(c, latest.get(c.pk)) for c in codebases]
    return render(request, "rag/list.html", {"codebases": codebases, "rows": rows})


@login_required
def upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    error = ""
    duplicate = None
    if request.method == "POST":
        if form.is_valid():
            try:
                codebase = services.create_codebase_from_upload(
                    request.user,  # type: ignore[arg-type]  # login_required: never anonymous
                    form.cleaned_data["name"],
                    form.cleaned_data["pack"],
                    allow_duplicate=form.cleaned_data["allow_duplicate"],
                )
            except services.DuplicateUpload as exc:
                error, duplicate = exc.message, exc.existing
            except services.UploadError as exc:
                error = exc.message
            else:
                return redirect("rag:detail", pk=codebase.pk)
        status = 409 if duplicate else 400
    else:
        status = 200
    ctx = {"form": form, "git_form": GitSourceForm(), "error": error, "duplicate": duplicate}
    return render(request, "rag/upload.html", ctx, status=status)


@login_required
@require_POST
def add_from_git(request: HttpRequest) -> HttpResponse:
    """Add a codebase from a git repository: the fetch and the indexing run as a job, and the
    codebase page shows them going."""
    git_form = GitSourceForm(request.POST)
    if git_form.is_valid():
        codebase = git_sync.add_from_git(
            request.user,  # type: ignore[arg-type]  # login_required: never anonymous
            git_form.cleaned_data["name"],
            git_form.cleaned_data["source"],
        )
        return redirect("rag:detail", pk=codebase.pk)
    ctx = {"form": UploadForm(), "git_form": git_form, "error": "", "duplicate": None}
    return render(request, "rag/upload.html", ctx, status=400)


@login_required
@require_POST
def sync(request: HttpRequest, pk: int) -> HttpResponse:
    """Fetch a git codebase's branch, tag or commit again; a new commit becomes a new version."""
    codebase = services.get_codebase_for(request.user, pk)
    try:
        git_sync.sync(codebase)
    except services.UploadError as exc:
        messages.error(request, f"Not synced: {exc.message}")
    else:
        messages.success(
            request,
            "Fetching the repository again. A new commit is indexed as a new version; plans "
            "on this codebase whose files or cited lines changed will show as stale.",
        )
    return redirect("rag:detail", pk=codebase.pk)


@login_required
@require_POST
def new_version(request: HttpRequest, pk: int) -> HttpResponse:
    """Take a new version, then back to the codebase page with what happened in a message
    (a redirect, so the page's reload when indexing ends never posts the form again)."""
    codebase = services.get_codebase_for(request.user, pk)
    form = NewVersionForm(request.POST, request.FILES)
    if not form.is_valid():
        error = " ".join(str(e) for errors in form.errors.values() for e in errors)
        messages.error(request, f"The new version was not uploaded: {error}")
        return redirect("rag:detail", pk=codebase.pk)
    try:
        services.upload_new_version(codebase, form.cleaned_data["pack"])
    except services.UploadError as exc:
        messages.error(request, f"The new version was not uploaded: {exc.message}")
    else:
        messages.success(
            request,
            "New version uploaded; indexing it now. Plans on this codebase whose files or "
            "cited lines changed will show as stale on their pages.",
        )
    return redirect("rag:detail", pk=codebase.pk)


@login_required
@require_POST
def retry(request: HttpRequest, pk: int) -> HttpResponse:
    """Index a failed (or abandoned) codebase again from the upload it already has."""
    codebase = services.get_codebase_for(request.user, pk)
    try:
        services.retry_indexing(codebase)
    except services.UploadError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Indexing it again.")
    return redirect("rag:detail", pk=codebase.pk)


@login_required
@require_GET
def detail(request: HttpRequest, pk: int) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)
    # Without a worker sweep (the embedded default), looking is what notices a dead job.
    if services.resume_if_stalled(codebase):
        codebase.refresh_from_db()
    ctx: dict[str, object] = {
        "codebase": codebase,
        "version_form": NewVersionForm(),
        "warnings": [w for w in codebase.warnings if isinstance(w, str)]
        if isinstance(codebase.warnings, list)
        else [],
        "versions": list(versions.history(codebase)[:SHOW_VERSIONS]),
        "version_count": versions.history(codebase).count(),
        "max_listed": CodebaseVersion.MAX_LISTED,
    }
    if codebase.is_ready:
        files = codebase.files.all()
        # ?folder= shows one folder without JavaScript; the script opens folders in place.
        folder = normalize_folder(request.GET.get("folder", "")[:MAX_FOLDER_CHARS])
        rows = files.filter(path__startswith=folder) if folder else files
        ctx["folder"] = folder
        ctx["tree"] = folder_entries(
            codebase.pk,
            rows.values_list("path", "line_count", "role", "withheld_reason").iterator(),
            folder,
        )
        roles = files.values_list("role").annotate(n=Count("id")).order_by("-n", "role")
        ctx["roles"] = list(roles)
        withheld = files.exclude(withheld_reason="").order_by("path")
        ctx["withheld"] = list(withheld.values_list("path", "withheld_reason")[:SHOW_WITHHELD])
        ctx["withheld_count"] = withheld.count()
        ctx["languages"] = sorted(codebase.languages.items(), key=lambda kv: (-kv[1], kv[0]))
        ctx["profile"] = profile.load(index.index_dir(codebase.pk))
        ctx.update(_roles_context(codebase))
        ctx.update(rules_views.context(codebase))  # planning rules and pinned context
    return render(request, "rag/detail.html", ctx)


def _roles_context(codebase: Codebase) -> dict[str, object]:
    """The vendored and generated files with why, the uploader's overrides, and how many of
    the vectors filling in behind the lexical index are there."""
    files = codebase.files.all()
    lexical_only = files.filter(role__in=sorted(LEXICAL_ONLY)).order_by("role", "path")
    paths_roles = list(files.values_list("path", "role"))
    nested = nested_projects([p for p, _ in paths_roles], [r for _, r in paths_roles])
    overrides = codebase.role_overrides or {}
    rows = lexical_only.annotate(head=Substr("content", 1, 4000)).values_list(
        "path", "role", "head"
    )
    done, total = api.vector_counts(codebase.pk)
    return {
        "lexical_only": [
            (path, role, reason_for(path, head, role, nested, overrides), path in overrides)
            for path, role, head in rows[:SHOW_LEXICAL_ONLY]
        ],
        "lexical_only_count": lexical_only.count(),
        "overrides": sorted(overrides.items()),
        "overrides_text": "\n".join(f"{p}: {r}" for p, r in sorted(overrides.items())),
        "role_names": ROLES,
        "vectors_done": done,
        "vectors_total": total,
    }


@login_required
@require_POST
def roles(request: HttpRequest, pk: int) -> HttpResponse:
    """Change the roles of paths (one path from its button, or all overrides as text) and
    index the codebase again with them, from the upload it already has."""
    codebase = services.get_codebase_for(request.user, pk)
    try:
        if "overrides" in request.POST:
            overrides = parse_overrides(request.POST["overrides"][:MAX_OVERRIDES_CHARS])
        else:
            overrides = services.override_one(
                codebase, request.POST.get("path", "")[:1000], request.POST.get("role", "")
            )
        services.set_role_overrides(codebase, overrides)
    except (InvalidOverride, services.UploadError) as exc:
        messages.error(request, f"The roles were not changed: {exc}")
    else:
        messages.success(
            request, "Roles changed; indexing again with them (unchanged vectors are kept)."
        )
    return redirect("rag:detail", pk=codebase.pk)


@login_required
@require_GET
def tree(request: HttpRequest, pk: int) -> JsonResponse:
    """One folder's entries, fetched when the page opens that folder."""
    codebase = services.get_codebase_for(request.user, pk)
    folder = normalize_folder(request.GET.get("folder", "")[:MAX_FOLDER_CHARS])
    rows = codebase.files.filter(path__startswith=folder) if folder else codebase.files.all()
    entries = folder_entries(
        codebase.pk,
        rows.values_list("path", "line_count", "role", "withheld_reason").iterator(),
        folder,
    )
    return JsonResponse({"folder": folder, "entries": [e.as_json() for e in entries]})


@login_required
@require_GET
def status(request: HttpRequest, pk: int) -> JsonResponse:
    codebase = services.get_codebase_for(request.user, pk)
    if services.resume_if_stalled(codebase):  # the page polls this while it waits
        codebase.refresh_from_db()
    return JsonResponse(
        {
            "status": codebase.status,
            "progress": codebase.progress,
            "stage": codebase.progress_stage,
            "error": codebase.error,
            "file_count": codebase.file_count,
            "chunk_count": codebase.chunk_count,
            "vectors": dict(zip(("done", "total"), api.vector_counts(codebase.pk), strict=True)),
        }
    )


@login_required
@require_GET
def file_view(request: HttpRequest, pk: int, path: str) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)
    code_file = CodeFile.objects.filter(codebase=codebase, path=path).first()
    if code_file is None:  # a citation spelled its own way (`TODO/API.py:3`): the real file
        real = FileSet(codebase.files.values_list("path", flat=True)).resolve(path).path
        if real is None:
            raise Http404("No such file in this codebase.")
        target = reverse("rag:file", args=[codebase.pk, real])
        return redirect(f"{target}?{request.GET.urlencode()}" if request.GET else target)
    highlight = _line_range(request.GET.get("hl", ""))
    lines = [
        (n, text, highlight is not None and highlight[0] <= n <= highlight[1])
        for n, text in enumerate(split_lines(code_file.content), start=1)
    ]
    return render(
        request,
        "rag/file.html",
        {"codebase": codebase, "file": code_file, "lines": lines, "highlight": highlight},
    )


def _line_range(value: str) -> tuple[int, int] | None:
    # At most 9 digits: int() of a 5,000-digit number raises, and no file is that long.
    match = re.fullmatch(r"L?(\d{1,9})(?:-L?(\d{1,9}))?", value.strip(), re.ASCII)
    if not match:
        return None
    start = int(match.group(1))
    end = int(match.group(2) or start)
    return (min(start, end), max(start, end))
