from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from agents import estimate, trace
from agents.citations import line_note
from agents.models import LLMCall, SessionEstimate
from agents.providers import list_profiles
from conversations import progress, services, stale, store
from conversations.forms import NewSessionForm, start_from
from conversations.models import Plan, PlanningSession
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
def models_help(request: HttpRequest) -> HttpResponse:
    """Which model to pick: each profile's quality (benchmarks), its speed and time on this
    machine (the trace of its calls here), and how to make it usable."""
    context = {
        "rows": [(p, trace.history(p.name)) for p in list_profiles()],
        "default": settings.PLANAGENTS_DEFAULT_PROFILE,
    }
    return render(request, "conversations/models.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def new_session(request: HttpRequest) -> HttpResponse:
    form = NewSessionForm(
        request.POST or None, user=request.user, initial={"codebase": request.GET.get("codebase")}
    )
    if request.method == "POST" and form.is_valid():
        try:
            session = start_from(form)
        except services.SessionError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("conversations:detail", session_id=session.pk)
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "estimates": form.estimates()}
    return render(request, "conversations/new.html", context, status=status)


def _session_or_404(request: HttpRequest, session_id: int) -> PlanningSession:
    try:
        return services.get_session_for(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None


@login_required
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _session_or_404(request, session_id)
    rows = [{"message": m, "html": store.message_html(m)} for m in session.messages.order_by("seq")]
    plan = session.plans.order_by("-version").first()
    answered = progress.answered(session)
    return render(
        request,
        "conversations/detail.html",
        {
            "session": session,
            "rows": rows,
            "plan": plan,
            "answered": answered,
            "ended_label": ended_label(session, plan is not None, answered),
            "state": store.session_state_payload(session),
            "line_note": line_note(session.codebase),
            "can_revise": services.can_revise(request.user, session),
            "revise_prefill": services.revision_prefill(session),
            "trace": trace.panel(session.pk),
            "code": stale.session_code(session),
            "estimate": _estimate_versus(session),
        },
    )


def _estimate_versus(session: PlanningSession) -> dict[str, object] | None:
    """The estimate made at the start against what the session used, once it has ended."""
    stored = SessionEstimate.objects.filter(session=session).first()
    if stored is None:
        return None
    return {**estimate.versus(stored), "ended": session.status in ENDED}


ENDED = (PlanningSession.Status.COMPLETED, PlanningSession.Status.STOPPED,
         PlanningSession.Status.FAILED)  # fmt: skip


def ended_label(session: PlanningSession, has_plan: bool, answered: bool) -> str:
    """What the page says once a session is over: only what happened. session.js says the
    same (endedLabel) when the state changes live."""
    if session.status == PlanningSession.Status.COMPLETED:
        if has_plan:
            return "Completed. The plan is in the Plan card."
        if answered:
            return "Answered. Ask another question or describe a change in a new session."
        return "Completed without a plan."
    return "This session has ended."


def _plan_or_404(request: HttpRequest, session: PlanningSession) -> Plan:
    plans = Plan.objects.filter(session=session)
    version = request.GET.get("version", "")
    # isdigit() alone takes "²" and 5,000-digit numbers, which int() refuses.
    wanted = version.isascii() and version.isdigit() and len(version) < 10
    plan = get_object_or_404(plans, version=int(version)) if wanted else plans.first()
    if plan is None:
        raise Http404("This session has no plan yet")
    return plan


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


@login_required
@require_http_methods(["POST"])
def revise_session(request: HttpRequest, session_id: int) -> HttpResponse:
    """Reopen a completed plan at the checkpoint; the page then suggests the reviewer's notes
    as the change request."""
    try:
        notes = services.revise(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None
    except services.SessionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            "Reopened for revision: the reviewer's notes are in the change request below; "
            "edit them and send."
            if notes
            else "Reopened for revision: say what should change, and send.",
        )
    return redirect(reverse("conversations:detail", args=[session_id]) + "#controls")


@login_required
def trace_call(request: HttpRequest, session_id: int, call_id: int) -> HttpResponse:
    """One LLM call of the session, whole, as plain text: the prompt and the model's raw
    output are data, never markup."""
    session = _session_or_404(request, session_id)
    call = get_object_or_404(LLMCall, pk=call_id, session=session)
    return HttpResponse(trace.as_text(call), content_type="text/plain; charset=utf-8")
