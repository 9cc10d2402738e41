from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from conversations import services
from conversations.forms import NewSessionForm
from conversations.models import Plan, PlanningSession
from conversations.rendering import render_markdown
from rag.services import codebases_for


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "conversations/home.html",
        {
            "codebases": codebases_for(request.user)[:8],
            "sessions": services.sessions_for(request.user)[:10],
        },
    )


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    return render(
        request, "conversations/list.html", {"sessions": services.sessions_for(request.user)}
    )


@login_required
@require_http_methods(["GET", "POST"])
def new_session(request: HttpRequest) -> HttpResponse:
    form = NewSessionForm(
        request.POST or None, user=request.user, initial={"codebase": request.GET.get("codebase")}
    )
    if request.method == "POST" and form.is_valid():
        try:
            session = services.start_session(
                request.user,
                codebase=form.cleaned_data["codebase"],
                task=form.cleaned_data["task"],
                mode=form.cleaned_data["mode"],
                agent_a_profile=form.cleaned_data["agent_a_profile"],
                agent_b_profile=form.cleaned_data["agent_b_profile"],
                max_exchanges=form.cleaned_data["max_exchanges"],
                fallback_profile=form.cleaned_data.get("fallback_profile") or "",
            )
        except services.SessionError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("conversations:detail", session_id=session.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "conversations/new.html", {"form": form}, status=status)


def _session_or_404(request: HttpRequest, session_id: int) -> PlanningSession:
    try:
        return services.get_session_for(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None


@login_required
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _session_or_404(request, session_id)
    prefix = services.file_url_prefix(session.codebase_id)
    rows = [
        {"message": m, "html": render_markdown(m.content, file_url_prefix=prefix)}
        for m in session.messages.order_by("seq")
    ]
    plan = session.plans.order_by("-version").first()
    return render(
        request,
        "conversations/detail.html",
        {
            "session": session,
            "rows": rows,
            "plan": plan,
            "state": services.session_state_payload(session),
        },
    )


def _plan_or_404(request: HttpRequest, session: PlanningSession) -> Plan:
    plans = Plan.objects.filter(session=session)
    version = request.GET.get("version", "")
    plan = get_object_or_404(plans, version=int(version)) if version.isdigit() else plans.first()
    if plan is None:
        raise Http404("This session has no plan yet")
    return plan


@login_required
def plan_page(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _session_or_404(request, session_id)
    plan = _plan_or_404(request, session)
    html = render_markdown(
        plan.markdown, file_url_prefix=services.file_url_prefix(session.codebase_id)
    )
    return render(
        request,
        "conversations/plan.html",
        {
            "session": session,
            "plan": plan,
            "plan_html": html,
            "versions": session.plans.order_by("version"),
        },
    )


@login_required
def plan_download(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _session_or_404(request, session_id)
    plan = _plan_or_404(request, session)
    response = HttpResponse(plan.markdown, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="plan-{session.pk}-v{plan.version}.md"'
    return response


@login_required
def plan_fragment(request: HttpRequest, session_id: int) -> HttpResponse:
    """The latest plan's card, for the live page to swap in when plan.updated arrives."""
    session = _session_or_404(request, session_id)
    plan = _plan_or_404(request, session)
    return render(request, "conversations/_plan.html", {"session": session, "plan": plan})


@login_required
@require_http_methods(["POST"])
def stop_session(request: HttpRequest, session_id: int) -> HttpResponse:
    try:
        services.stop(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None
    except services.SessionError as exc:
        messages.error(request, str(exc))
    return redirect("conversations:detail", session_id=session_id)
