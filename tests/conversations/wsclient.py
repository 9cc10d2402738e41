"""A websocket client for tests: connects as a user and collects the protocol's events."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from conversations.routing import websocket_urlpatterns

Event = dict[str, Any]


class Client:
    def __init__(self, user: Any, session_id: int) -> None:
        self.comm = WebsocketCommunicator(
            URLRouter(websocket_urlpatterns), f"/ws/sessions/{session_id}/"
        )
        self.comm.scope["user"] = user
        self.events: list[Event] = []
        self.texts: dict[int, str] = {}  # seq -> text as a browser would have assembled it

    async def connect(self, after_seq: int | None = 0) -> None:
        connected, code = await self.comm.connect()
        assert connected, f"refused with {code}"
        if after_seq is not None:
            await self.send({"type": "resume", "after_seq": after_seq})

    async def send(self, frame: Event) -> None:
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
        return await self.until(
            lambda e: (
                e["type"] == "session.state"
                and e["status"] == status
                and (node is None or e["node"] == node)
            ),
            timeout,
        )

    def _apply(self, event: Event) -> None:
        kind = event["type"]
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
