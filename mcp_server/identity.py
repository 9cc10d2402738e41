"""Who an MCP request acts for. Over HTTP: the live API token the request shows, checked by
the API app's own function (api.services.authenticate) at every call, so a token revoked
mid-session stops working at once. Over stdio: the user the operator named, or the token in
PLANAGENTS_TOKEN, fixed when the command starts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from mcp.server.mcpserver.exceptions import ToolError

from api.services import authenticate

TOKEN_ENV = "PLANAGENTS_TOKEN"


@dataclass(frozen=True)
class Caller:
    """The user a call acts for and what the transport lets them do."""

    user: Any
    can_write: bool
    label: str
    """How they were identified, for messages: `token “laptop”` or `user alice`."""
    local: bool
    """Stdio: the caller runs on this machine, so a path on its disk may be read."""


Identify = Callable[[Any], Caller]
"""Given a tool's request (its transport's HTTP request, or None on stdio), the caller."""


class NotAuthenticated(ToolError):
    """No live token or user behind the call."""


def bearer(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer …` header; None for any other scheme."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def token_caller(secret: str | None, *, local: bool) -> Caller:
    token = authenticate(secret) if secret else None
    if token is None:
        raise NotAuthenticated(
            "The API token is missing, unknown or revoked (or its owner is deactivated). Make "
            "one on the account page (/account/tokens/)."
        )
    return Caller(token.owner, token.can_write, f"token “{token.name}”", local)


def http_caller(request: Any) -> Caller:
    """The caller of an HTTP request: its bearer token, looked up again for this call."""
    headers = getattr(request, "headers", None) or {}
    return token_caller(bearer(headers.get("authorization", "")), local=False)


def user_caller(username: str) -> Caller:
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise NotAuthenticated(f"No active user named {username!r}.")
    return Caller(user, True, f"user {user.get_username()}", True)


def writer(caller: Caller) -> Caller:
    """The caller, when they may change something; the API's words otherwise."""
    if not caller.can_write:
        raise ToolError(
            f"The {caller.label} is read-only. Make a write token on the account page "
            "(/account/tokens/) to change anything."
        )
    return caller
