"""A websocket client for tests: connects as a user and collects the protocol's events."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.base import SessionBase
from django.contrib.sessions.backends.db import SessionStore

from conversations.routing import websocket_urlpatterns

Event = dict[str, Any]


def login_session(user: Any) -> SessionBase:
    """A saved Django session logging `user` in, as the login view leaves it (the consumer
    checks on every action that the socket's session still signs its user in)."""
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return store


class Client:
    def __init__(self, user: Any, session_id: int) -> None:
        self.comm = WebsocketCommunicator(
            URLRouter(websocket_urlpatterns), f"/ws/sessions/{session_id}/"
        )
        self.comm.scope["user"] = user
        self.events: list[Event] = []
        self.texts: dict[int, str] = {}  # seq -> text as a browser would have assembled it

    async def connect(self, after_seq: int | None = 0) -> None:
        # A socket through the real server (tests/scaleout) logs in with its own cookie.
        if hasattr(self.comm, "scope") and "session" not in self.comm.scope:
            self.comm.scope["session"] = await database_sync_to_async(login_session)(
                self.comm.scope["user"]
            )
        connected, code = await self.comm.connect()
        assert connected, f"refused with {code}"
        self._live_state_seen = False
        if after_seq is not None:
            await self.send({"type": "resume", "after_seq": after_seq})

    async def send(self, frame: Event) -> None:
        if frame.get("type") == "resume":
            self._live_state_seen = False
        await self.comm.send_json_to(frame)

    async def close(self) -> None:
        await self.comm.disconnect()

    async def until(self, predicate: Callable[[Event], bool], timeout: float = 60) -> Event:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                kinds = [e.get("type") for e in self.events[-8:]]
                raise AssertionError(f"timed out; last events: {kinds}")
            try:
                event = await self.comm.receive_json_from(timeout=remaining)
            except TimeoutError:
                continue
            self._apply(event)
            self.events.append(event)
            if predicate(event):
                return event

    async def until_state(
        self, status: str, *, node: str | None = None, timeout: float = 60
    ) -> Event:
        """The next state event with `status`. As in session.js, a replay's state (a snapshot,
        sent from a replay thread) that comes after a live state is stale and skipped."""
        return await self.until(
            lambda e: (
                e["type"] == "session.state"
                and e["status"] == status
                and (node is None or e["node"] == node)
                and not (e.get("replay") and e.get("_stale"))
            ),
            timeout,
        )

    def _apply(self, event: Event) -> None:
        kind = event["type"]
        if kind == "session.state":
            if not event.get("replay"):
                self._live_state_seen = True
            elif getattr(self, "_live_state_seen", False):
                event["_stale"] = True
        if kind in ("message.start", "message.end"):
            message = event["message"]
            self.texts[message["seq"]] = message["content"]
        elif kind == "message.delta":
            if event["seq"] not in self.texts:
                return  # live delta racing the replay: the replay's start will carry it
            have = self.texts[event["seq"]]
            assert event["offset"] <= len(have), f"gap in message {event['seq']}"
            self.texts[event["seq"]] = have[: event["offset"]] + event["text"]

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.events if e["type"] == kind]
