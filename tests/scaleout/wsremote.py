"""The test websocket client (tests/conversations/wsclient.py), over real TCP to a server
process, logged in with a Django session cookie."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from tests.conversations.wsclient import Client


def session_cookie(user: Any) -> str:
    """A logged-in Django session for `user`, as the login view would have saved it."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    assert store.session_key is not None
    return store.session_key


class _Socket:
    """What Client expects of a WebsocketCommunicator, over a real connection."""

    def __init__(self, url: str, origin: str, cookie: str) -> None:
        self.url, self.origin, self.cookie = url, origin, cookie
        self.ws: ClientConnection | None = None

    async def connect(self) -> tuple[bool, int | None]:
        self.ws = await connect(
            self.url,
            origin=self.origin,  # type: ignore[arg-type]
            additional_headers={"Cookie": f"sessionid={self.cookie}"},
            max_size=None,
        )
        return True, None

    async def send_json_to(self, frame: dict[str, Any]) -> None:
        assert self.ws is not None
        await self.ws.send(json.dumps(frame))

    async def receive_json_from(self, timeout: float = 1) -> dict[str, Any]:
        assert self.ws is not None
        raw = await asyncio.wait_for(self.ws.recv(), timeout)
        return dict(json.loads(raw))

    async def disconnect(self) -> None:
        if self.ws is not None:
            await self.ws.close()


class RemoteClient(Client):
    def __init__(self, port: int, cookie: str, session_id: int) -> None:
        origin = f"http://127.0.0.1:{port}"
        self.comm = _Socket(f"ws://127.0.0.1:{port}/ws/sessions/{session_id}/", origin, cookie)  # type: ignore[assignment]
        self.events = []
        self.texts = {}
