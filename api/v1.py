"""The REST API, version 1: Django Ninja, its OpenAPI schema at /api/v1/openapi.json and its
docs page at /api/v1/docs. Every operation needs a token (api.auth) and counts against that
token's rate; the routers hold the operations."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, Throttled

from api import codebases, plans, sessions
from api.auth import TokenAuth, TokenThrottle

api = NinjaAPI(
    title="PlanAgents API",
    version="1",
    description=(
        "Codebases, planning sessions and their plans, for scripts, CI and coding agents. "
        "Authenticate with a token from your account page (/account/tokens/): "
        "`Authorization: Bearer pa_…`. A read token may only read."
    ),
    auth=TokenAuth(),
    throttle=TokenThrottle(),
    urls_namespace="api-v1",
)
api.add_router("/codebases", codebases.router)
api.add_router("/sessions", sessions.router)
api.add_router("/plans", plans.router)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(
        request,
        {
            "detail": "Send a live API token: `Authorization: Bearer pa_…`. Make one on your "
            "account page (/account/tokens/); a revoked token no longer works."
        },
        status=401,
    )
    response["WWW-Authenticate"] = 'Bearer realm="planagents"'
    return response


@api.exception_handler(Throttled)
def throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    wait = f" Try again in {max(1, round(exc.wait))} s." if exc.wait else ""
    return api.create_response(
        request,
        {"detail": f"This token made more than {settings.PLANAGENTS_API_RATE} requests.{wait}"},
        status=429,
    )


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    # The same words for a missing object and someone else's: nothing to tell them apart.
    return api.create_response(request, {"detail": str(exc) or "Not found."}, status=404)
