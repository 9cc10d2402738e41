"""Re-validate a plan against the codebase as it is now, or re-plan it in a new session."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from conversations import exports, services, stale
from conversations.models import Plan, PlanningSession


def _session(request: HttpRequest, session_id: int) -> PlanningSession:
    try:
        return services.get_session_for(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None


def _plan(session: PlanningSession, version: str) -> Plan:
    plans = Plan.objects.filter(session=session)
    wanted = version.isascii() and version.isdigit() and len(version) < 10
    plan = get_object_or_404(plans, version=int(version)) if wanted else plans.first()
    if plan is None:
        raise Http404("This session has no plan yet")
    return plan


@login_required
@require_GET
def revalidate(request: HttpRequest, session_id: int) -> HttpResponse:
    """The plan's files and citations checked against the codebase as it is now, and what
    changed since the plan was written."""
    session = _session(request, session_id)
    plan = _plan(session, request.GET.get("version", ""))
    data = exports.plan_data(plan)
    context = {
        "session": session,
        "plan": plan,
        "report": stale.check(plan),
        "files": data["files"],
        "citations": data["citations"],
        "problems": sum(f["status"] in ("missing", "invalid") for f in data["files"])
        + sum(not c["exists"] for c in data["citations"]),
    }
    return render(request, "conversations/plan_revalidate.html", context)


@login_required
@require_POST
def replan(request: HttpRequest, session_id: int) -> HttpResponse:
    """A new planning session on the same codebase, seeded with this plan's goal and steps."""
    session = _session(request, session_id)
    plan = _plan(session, request.POST.get("version", ""))
    task = stale.seed_task(plan, stale.check(plan), services.MAX_MESSAGE_CHARS)
    try:
        new = services.start_session(
            request.user,
            codebase=session.codebase,
            task=task,
            mode=PlanningSession.Mode.PLANNING,
            agent_a_profile=session.agent_a_profile,
            agent_b_profile=session.agent_b_profile,
            fallback_profile=session.fallback_profile,
        )
    except services.SessionError as exc:
        messages.error(request, f"Could not re-plan: {exc}")
        url = reverse("conversations:plan", args=[session.pk])
        return redirect(f"{url}?version={plan.version}")
    messages.success(request, f"Re-planning plan v{plan.version} of session #{session.pk}.")
    return redirect("conversations:detail", session_id=new.pk)
