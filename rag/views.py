from __future__ import annotations

import re
from collections import Counter

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from rag import services
from rag.chunking import split_lines
from rag.forms import NewVersionForm, UploadForm
from rag.models import Codebase, CodeFile
from rag.tree import build_tree


@login_required
@require_GET
def codebase_list(request: HttpRequest) -> HttpResponse:
    codebases = services.codebases_for(request.user)
    return render(request, "rag/list.html", {"codebases": codebases})


@login_required
def upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    error = ""
    if request.method == "POST":
        if form.is_valid():
            try:
                codebase = services.create_codebase_from_upload(
                    request.user,  # type: ignore[arg-type]  # login_required: never anonymous
                    form.cleaned_data["name"],
                    form.cleaned_data["pack"],
                )
            except services.UploadError as exc:
                error = exc.message
            else:
                return redirect("rag:detail", pk=codebase.pk)
        status = 400
    else:
        status = 200
    return render(request, "rag/upload.html", {"form": form, "error": error}, status=status)


@login_required
@require_POST
def new_version(request: HttpRequest, pk: int) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)
    form = NewVersionForm(request.POST, request.FILES)
    error = ""
    if form.is_valid():
        try:
            services.upload_new_version(codebase, form.cleaned_data["pack"])
        except services.UploadError as exc:
            error = exc.message
        else:
            return redirect("rag:detail", pk=codebase.pk)
    else:
        error = " ".join(str(e) for errors in form.errors.values() for e in errors)
    return _detail(request, codebase, NewVersionForm(), error, status=400)


@login_required
@require_GET
def detail(request: HttpRequest, pk: int) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)
    return _detail(request, codebase, NewVersionForm(), "")


def _detail(
    request: HttpRequest, codebase: Codebase, form: NewVersionForm, error: str, status: int = 200
) -> HttpResponse:
    ctx: dict[str, object] = {"codebase": codebase, "version_form": form, "version_error": error}
    if codebase.is_ready:
        files = list(
            codebase.files.only("path", "language", "role", "size", "line_count").order_by("path")
        )
        ctx["tree"] = build_tree(files)
        ctx["roles"] = Counter(f.role for f in files).most_common()
        ctx["languages"] = sorted(codebase.languages.items(), key=lambda kv: (-kv[1], kv[0]))
    return render(request, "rag/detail.html", ctx, status=status)


@login_required
@require_GET
def status(request: HttpRequest, pk: int) -> JsonResponse:
    codebase = services.get_codebase_for(request.user, pk)
    return JsonResponse(
        {
            "status": codebase.status,
            "progress": codebase.progress,
            "stage": codebase.progress_stage,
            "error": codebase.error,
            "file_count": codebase.file_count,
            "chunk_count": codebase.chunk_count,
        }
    )


@login_required
@require_GET
def file_view(request: HttpRequest, pk: int, path: str) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)
    code_file = get_object_or_404(CodeFile, codebase=codebase, path=path)
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
    match = re.fullmatch(r"L?(\d+)(?:-L?(\d+))?", value.strip())
    if not match:
        return None
    start = int(match.group(1))
    end = int(match.group(2) or start)
    return (min(start, end), max(start, end))
