"""/api/v1/plans: a session's plan, its versions and its exports. A plan is named by its
session's id; the session's permission (conversations.services.get_session_for) is the plan's."""

from __future__ import annotations

from typing import Annotated, Any

from django.db.models import Max
from django.http import Http404, HttpRequest, HttpResponse
from ninja import Query, Router
from ninja.pagination import LimitOffsetPagination, paginate

from api import present
from api.auth import reader
from api.schemas import PlanOut, PlanSummary, PlanVersionOut
from api.sessions import session_or_404
from conversations import export_formats, exports, services
from conversations.models import Plan, PlanningSession

router = Router(tags=["plans"])


def plan_or_404(session: PlanningSession, version: int | None = None) -> Plan:
    plans = Plan.objects.filter(session=session)
    plan = plans.filter(version=version).first() if version is not None else plans.first()
    if plan is None:
        raise Http404("No such plan version" if version is not None else "No plan yet")
    return plan


@router.get("", response=list[PlanSummary])
@paginate(LimitOffsetPagination)
def list_plans(request: HttpRequest) -> list[dict[str, Any]]:
    """Your sessions that have a plan, newest first, with each one's latest version."""
    rows = (
        services.sessions_for(reader(request))
        .annotate(latest=Max("plans__version"))
        .filter(latest__isnull=False)
    )
    return [
        {
            "session": s.pk,
            "title": s.title,
            "latest_version": s.latest,
            "codebase": s.codebase_id,
            "updated_at": s.updated_at,
        }
        for s in rows
    ]


@router.get("/{session_id}", response=PlanOut)
def get_plan(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """The session's latest plan version, as markdown and as data."""
    return present.plan(plan_or_404(session_or_404(reader(request), session_id)))


@router.get("/{session_id}/versions", response=list[PlanVersionOut])
@paginate(LimitOffsetPagination)
def list_plan_versions(request: HttpRequest, session_id: int) -> list[dict[str, Any]]:
    """Every version of the session's plan, newest first: who made it and its quality line."""
    session = session_or_404(reader(request), session_id)
    return [present.plan_version(p) for p in Plan.objects.filter(session=session)]


@router.get("/{session_id}/versions/{version}", response=PlanOut)
def get_plan_version(request: HttpRequest, session_id: int, version: int) -> dict[str, Any]:
    """One version of the session's plan."""
    return present.plan(plan_or_404(session_or_404(reader(request), session_id), version))


@router.get("/{session_id}/export/{kind}", response={200: str})
def export_plan(
    request: HttpRequest,
    session_id: int,
    kind: str,
    version: Annotated[int | None, Query(description="A plan version; the latest if none.")] = None,
    zipped: Annotated[
        bool, Query(alias="zip", description="The layout as a zip of its folders (speckit, kiro…).")
    ] = False,
) -> HttpResponse:
    """The plan in one of the plan page's export formats (`json`, `github`, `handoff`, and
    any other conversations.exports offers), served as the page serves it."""
    export = export_formats.EXPORTS.get(kind)
    if export is None:
        raise Http404(
            f"No export {kind!r}; there are: {', '.join(sorted(export_formats.EXPORTS))}."
        )
    session = session_or_404(reader(request), session_id)
    plan = plan_or_404(session, version)
    name = f"plan-{session.pk}-v{plan.version}.{export.extension}"
    if zipped:
        if export.archive is None:
            raise Http404(f"The {kind!r} export is one file; it has no zip.")
        response = HttpResponse(export.archive(plan), content_type="application/zip")
        name = f"plan-{session.pk}-v{plan.version}-{kind}.zip"
    else:
        response = HttpResponse(export.render(plan), content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@router.get("/{session_id}/implementation-checks", response=list[dict[str, Any]])
def list_implementation_checks(
    request: HttpRequest,
    session_id: int,
    version: Annotated[int | None, Query(description="A plan version; the latest if none.")] = None,
) -> list[dict[str, Any]]:
    """The finished checks of an implementation against the plan version, oldest first: each
    step done, partly, not done or deviated with its evidence (as the JSON export has them)."""
    plan = plan_or_404(session_or_404(reader(request), session_id), version)
    return exports.implementation_checks(plan)
