"""The MCP server over Streamable HTTP, for the ASGI app to mount under /mcp/.

Every request must show a live API token (`Authorization: Bearer pa_…`), checked by the API
app's own function before the MCP transport sees a byte; anything else gets a 401. The token
also becomes the MCP session's owner (the SDK's session manager refuses a session id shown
with another token), and each tool call looks the token up again (mcp_server.identity), so a
revoked token stops at its next call.

Daphne speaks no ASGI lifespan, so the SDK's session manager (which wants one) is started by
the first request, on the server's loop, and runs as long as the server does."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings

from api.services import authenticate
from mcp_server.identity import bearer, http_caller
from mcp_server.server import build

PATH = "/mcp/"

Scope = dict[str, Any]


async def _refuse(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="planagents"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class McpApp:
    """ASGI app: the token check, then the SDK's Streamable HTTP transport."""

    def __init__(self) -> None:
        self.server = build(http_caller)
        # The largest body: a codebase sent as base64 (add_codebase), plus the envelope.
        limit = settings.PLANAGENTS_MAX_UPLOAD_BYTES * 4 // 3 + 64 * 1024
        self.app = self.server.streamable_http_app(
            streamable_http_path=PATH,
            max_request_body_size=limit,
            # A bearer token, never a cookie, authenticates here: a page of a rebinding
            # domain cannot show one, so the Host check would only refuse real host names.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._started: asyncio.Future[None] | None = None

    async def _start(self) -> None:
        if self._started is None:
            loop = asyncio.get_running_loop()
            started: asyncio.Future[None] = loop.create_future()
            self._started = started

            async def keep_running() -> None:
                async with self.server.session_manager.run():
                    started.set_result(None)
                    await asyncio.Event().wait()

            self._runner = loop.create_task(keep_running())
        await asyncio.shield(self._started)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope.get("headers") or [])
        secret = bearer(headers.get(b"authorization", b"").decode("latin-1"))
        token = await sync_to_async(authenticate)(secret) if secret else None
        if token is None:
            await _refuse(
                send,
                401,
                "Send a live API token: Authorization: Bearer pa_… (make one on the account "
                "page, /account/tokens/).",
            )
            return
        principal = AccessToken(
            token=f"token-{token.pk}",
            client_id=f"planagents-token-{token.pk}",
            scopes=[token.scope],
            subject=str(token.owner_id),
        )
        scope = {
            **scope,
            "user": AuthenticatedUser(principal),
            "path": PATH,
            "raw_path": PATH.encode(),
        }
        await self._start()
        await self.app(scope, receive, send)


def mounted(http_app: Any, mcp_app: McpApp | None = None) -> Any:
    """`http_app` with /mcp (and /mcp/) answered by the MCP server instead."""
    mcp = mcp_app or McpApp()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("path") in ("/mcp", PATH):
            await mcp(scope, receive, send)
        else:
            await http_app(scope, receive, send)

    return app
