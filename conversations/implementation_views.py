"""Check an implementation against an approved plan: the form (the owner's), a check's report
(the owner and the plan's reviewers), and running a failed or stalled check again."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from conversations import implementation_checks as checks
from conversations import reviewers, services
from conversations.implementation_diff import MAX_DIFF_BYTES
from conversations.models import ImplementationCheck, PlanningSession, Reviewer
from conversations.permissions import OWNER, plan_role
from conversations.templatetags.implementation_extras import report_context


def _owned(request: HttpRequest, session_id: int) -> PlanningSession:
    try:
        return services.get_session_for(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None


def _version(value: str) -> int | None:
    return int(value) if value.isascii() and value.isdigit() and len(value) < 10 else None


@login_required
@require_http_methods(["GET", "POST"])
def check_new(request: HttpRequest, session_id: int) -> HttpResponse:
    """The form: a newer version of the codebase, or a diff pasted or uploaded."""
    session = _owned(request, session_id)
    wanted = _version(request.POST.get("version") or request.GET.get("version", ""))
    try:
        plan = checks.approved_plan(session, wanted)
    except checks.CheckError as exc:
        messages.error(request, str(exc))
        return redirect("conversations:plan", session_id=session.pk)
    newer = checks.newer_versions(plan)
    context: dict[str, Any] = {
        "session": session,
        "plan": plan,
        "newer": newer,
        "latest": newer[-1] if newer else None,
        "max_bytes": MAX_DIFF_BYTES,
        "source": request.POST.get("source") or ("version" if newer else "diff"),
        "diff": "",
        "label": "",
    }
    if request.method == "POST":
        upload = request.FILES.get("diff_file")
        # A browser sends a textarea's line breaks as CRLF, whatever was pasted.
        diff: bytes | str = request.POST.get("diff", "").replace("\r\n", "\n")
        label = request.POST.get("label", "")
        if upload is not None:
            if upload.size is not None and upload.size > MAX_DIFF_BYTES:
                diff = b"x" * (MAX_DIFF_BYTES + 1)  # refused below, in the same words
            else:
                diff = upload.read(MAX_DIFF_BYTES + 1)
            label = label or str(upload.name or "")[:200]
        try:
            check = checks.start(
                request.user,
                session.pk,
                plan.version,
                source=context["source"],
                diff=diff,
                label=label,
                ask_model=bool(request.POST.get("ask_model")),
            )
        except checks.CheckError as exc:
            context.update(error=str(exc), diff=request.POST.get("diff", ""), label=label)
            return render(request, "conversations/implementation_new.html", context, status=400)
        return redirect(
            "conversations:implementation_check", session_id=session.pk, check_id=check.pk
        )
    return render(request, "conversations/implementation_new.html", context)


@login_required
def check_detail(request: HttpRequest, session_id: int, check_id: int) -> HttpResponse:
    """One check: its progress while it runs, then its report."""
    try:
        session = reviewers.get_plan_session_for(request.user, session_id, Reviewer.Role.VIEWER)
    except services.SessionNotFound:
        raise Http404("No such session") from None
    check = get_object_or_404(
        ImplementationCheck.objects.select_related("plan", "created_by"),
        session=session,
        pk=check_id,
    )
    context = {
        "session": session,
        "plan": check.plan,
        "is_owner": plan_role(request.user, session) == OWNER,
        **report_context(check),
    }
    return render(request, "conversations/implementation_check.html", context)


@login_required
@require_POST
def check_again(request: HttpRequest, session_id: int, check_id: int) -> HttpResponse:
    try:
        checks.run_again(request.user, session_id, check_id)
    except services.SessionNotFound:
        raise Http404("No such check") from None
    except checks.CheckError as exc:
        messages.error(request, str(exc))
    return redirect(reverse("conversations:implementation_check", args=[session_id, check_id]))
