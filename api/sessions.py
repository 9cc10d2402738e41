"""/api/v1/sessions: list, start and follow planning sessions, through conversations.services
(a new session is checked by the new-session page's own form)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Max
from django.http import Http404, HttpRequest
from ninja import Router, Status
from ninja.pagination import LimitOffsetPagination, paginate

from api import present
from api.auth import reader, writer
from api.schemas import ApproveIn, Problem, SessionIn, SessionOut, StopIn
from conversations import services
from conversations.forms import NewSessionForm, problems, start_from
from conversations.models import PlanningSession
from rag.services import get_codebase_for

router = Router(tags=["sessions"])


def session_or_404(user: Any, session_id: int) -> PlanningSession:
    """The user's session (conversations.services decides); 404 for anyone else's."""
    try:
        return services.get_session_for(user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None


def _latest_plan(session: PlanningSession) -> int | None:
    plan = session.plans.order_by("-version").only("version").first()
    return plan.version if plan else None


@router.get("", response=list[SessionOut])
@paginate(LimitOffsetPagination)
def list_sessions(request: HttpRequest) -> list[dict[str, Any]]:
    """Your planning sessions, newest first."""
    rows = (
        services.sessions_for(reader(request))
        .select_related("state")
        .annotate(latest_plan=Max("plans__version"))
    )
    return [present.session(s, s.latest_plan) for s in rows]


@router.post("", response={201: SessionOut, 400: Problem}, summary="Start a session")
def start_session(request: HttpRequest, body: SessionIn) -> Status[dict[str, Any]]:
    """Start planning a task on one of your ready codebases. The agents run in the
    background; poll the session for its status and the plans for the result."""
    owner = writer(request)
    codebase = get_codebase_for(owner, body.codebase)  # someone else's: 404, as on the page
    default = settings.PLANAGENTS_DEFAULT_PROFILE
    form = NewSessionForm(
        {
            "codebase": codebase.pk,
            "task": body.task,
            "mode": body.mode,
            "agent_a_profile": body.agent_a_profile or default,
            "agent_b_profile": body.agent_b_profile or default,
            "fallback_profile": body.fallback_profile,
            "max_exchanges": body.max_exchanges or settings.PLANAGENTS_DEBATE_EXCHANGES,
        },
        user=owner,
    )
    if not form.is_valid():
        return Status(400, {"detail": problems(form)})
    try:
        session = start_from(form)
    except services.SessionError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, present.session(session_or_404(owner, session.pk), None))


@router.get("/{session_id}", response=SessionOut)
def get_session(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """One of your sessions: its status, where the workflow is, and its latest plan version."""
    session = session_or_404(reader(request), session_id)
    return present.session(session, _latest_plan(session))


@router.post(
    "/{session_id}/approve",
    response={200: SessionOut, 409: Problem},
    summary="Approve the proposal at the checkpoint",
)
def approve_session(request: HttpRequest, session_id: int, body: ApproveIn) -> Status[Any]:
    """Approve the proposal waiting at the checkpoint, as the session page's Approve does:
    the final plan is written next. A proposal that breaks a critical rule needs `override`."""
    owner = writer(request)
    session_or_404(owner, session_id)
    try:
        services.approve(owner, session_id, body.override)
    except services.SessionError as exc:
        return Status(409, {"detail": str(exc)})
    session = session_or_404(owner, session_id)
    return Status(200, present.session(session, _latest_plan(session)))


@router.post("/{session_id}/stop", response={200: SessionOut, 409: Problem}, summary="Stop")
def stop_session(request: HttpRequest, session_id: int, body: StopIn) -> Status[Any]:
    """Stop the session, as the page's Stop does: it ends with a plan from what it has."""
    owner = writer(request)
    session_or_404(owner, session_id)
    try:
        services.stop(owner, session_id)
    except services.SessionError as exc:
        return Status(409, {"detail": str(exc)})
    session = session_or_404(owner, session_id)
    return Status(200, present.session(session, _latest_plan(session)))
