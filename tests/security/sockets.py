"""Session websockets through the app's real router: the ASGI application with its origin
check and AuthMiddlewareStack, logged in by a real session cookie."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from planagents.asgi import application


def login_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def socket(
    user: Any, session_id: int, *, origin: str = "http://127.0.0.1"
) -> WebsocketCommunicator:
    """A communicator for the session's socket, as `user` (None: not logged in) in a page
    served from `origin`."""
    headers = [(b"origin", origin.encode()), (b"host", b"127.0.0.1")]
    if user is not None:
        cookie = await database_sync_to_async(login_cookie)(user)
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return WebsocketCommunicator(application, f"/ws/sessions/{session_id}/", headers=headers)
