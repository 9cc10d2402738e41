"""How an API request proves who sent it, how often it may, and whether it may write.

Each request shows a token (`Authorization: Bearer pa_…`); `TokenAuth` finds the live token
(api.services.authenticate) and puts it on `request.auth`. `TokenThrottle` is Django Ninja's
own cache-backed limiter keyed on that token: a token's owner can no more spend another
token's allowance than another user's. Writing needs a write token (`writer`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer
from ninja.throttling import SimpleRateThrottle

from api.models import ApiToken
from api.services import authenticate


class TokenAuth(HttpBearer):
    def __call__(self, request: HttpRequest) -> ApiToken | None:
        # Ninja's own reading logs a header with another scheme whole under DEBUG: a token
        # sent as `Token pa_…` would land in the log. Read it here, and log nothing.
        scheme, _, token = request.headers.get(self.header, "").strip().partition(" ")
        if scheme.lower() != self.openapi_scheme or not token.strip():
            return None
        return self.authenticate(request, token)

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        return authenticate(token.strip())


class TokenThrottle(SimpleRateThrottle):
    """PLANAGENTS_API_RATE requests per token, read per request (a test or an operator may
    change it). Counted in Django's cache: per process in the embedded default."""

    scope = "api-token"

    def __init__(self) -> None:
        super().__init__(rate=settings.PLANAGENTS_API_RATE)

    def allow_request(self, request: HttpRequest) -> bool:
        self.rate = settings.PLANAGENTS_API_RATE
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request)

    def get_cache_key(self, request: HttpRequest) -> str | None:
        token = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return None  # the docs and the schema: no token, nothing to count
        return self.cache_format % {"scope": self.scope, "ident": token.pk}


def token_of(request: HttpRequest) -> ApiToken:
    token = getattr(request, "auth", None)
    assert isinstance(token, ApiToken), "an operation without TokenAuth"
    return token


def reader(request: HttpRequest) -> Any:
    """The user the request's token acts for."""
    return token_of(request).owner


def writer(request: HttpRequest) -> Any:
    """The user the request's token acts for, when that token may write; 403 when it is read-only."""
    token = token_of(request)
    if not token.can_write:
        raise HttpError(
            403,
            f"The token “{token.name}” is read-only. Make a write token on the account page "
            "(/account/tokens/) to change anything.",
        )
    return token.owner
