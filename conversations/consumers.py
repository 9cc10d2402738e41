"""The session websocket. Thin: it checks who is asking, validates the frame, and calls the
services; events from jobs arrive through the session's group and are forwarded as they are."""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from conversations import services
from conversations.models import Message
from planagents.streaming import session_group

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 * 1024
CONTROL_ACTIONS = {"approve", "modify", "stop", "continue", "cancel"}


class SessionConsumer(AsyncJsonWebsocketConsumer):
    session_id: int

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        if not await self._can_view():
            await self.close(code=4404)
            return
        await self.channel_layer.group_add(session_group(self.session_id), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "session_id"):
            await self.channel_layer.group_discard(
                session_group(self.session_id), self.channel_name
            )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self._error("Frames must be JSON text.")
            return
        if len(text_data) > MAX_FRAME_BYTES:
            await self._error(
                f"Frame too large ({len(text_data)} bytes; at most {MAX_FRAME_BYTES})."
            )
            return
        try:
            frame = json.loads(text_data)
        except ValueError:
            await self._error("Frames must be JSON objects; that was not valid JSON.")
            return
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            await self._error('Frames must be JSON objects with a "type".')
            return
        await self.receive_json(frame)

    async def receive_json(self, content: dict[str, Any], **kwargs: Any) -> None:
        kind = content["type"]
        handler = {
            "resume": self._on_resume,
            "user.message": self._on_user_message,
            "control": self._on_control,
        }.get(kind)
        if handler is None:
            await self._error(
                f"Unknown frame type {kind!r}; expected resume, user.message or control."
            )
            return
        # Ownership is checked again on every action: the session could have changed hands.
        if not await self._can_view():
            await self._error("That session does not exist.")
            await self.close(code=4404)
            return
        try:
            await handler(content)
        except services.SessionError as exc:
            await self._error(str(exc))

    async def session_event(self, event: dict[str, Any]) -> None:
        await self.send_json(event["event"])

    # ------------------------------------------------------------ handlers

    async def _on_resume(self, frame: dict[str, Any]) -> None:
        after = frame.get("after_seq", 0)
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            await self._error("resume needs after_seq: a whole number ≥ 0.")
            return
        events = await self._replay(after)
        for event in events:
            await self.send_json(event)

    async def _on_user_message(self, frame: dict[str, Any]) -> None:
        await database_sync_to_async(services.post_user_message)(
            self.scope["user"], self.session_id, frame.get("text")
        )

    async def _on_control(self, frame: dict[str, Any]) -> None:
        action = frame.get("action")
        if action not in CONTROL_ACTIONS:
            await self._error(
                f"Unknown control action {action!r}; expected one of {sorted(CONTROL_ACTIONS)}."
            )
            return
        user = self.scope["user"]
        call = {
            "approve": lambda: services.approve(user, self.session_id),
            "modify": lambda: services.request_changes(user, self.session_id, frame.get("text")),
            "stop": lambda: services.stop(user, self.session_id),
            "continue": lambda: services.continue_session(user, self.session_id),
            "cancel": lambda: services.cancel_reply(user, self.session_id),
        }[action]
        await database_sync_to_async(call)()

    # ------------------------------------------------------------ helpers

    async def _error(self, message: str) -> None:
        await self.send_json({"type": "error", "message": message})

    @database_sync_to_async
    def _can_view(self) -> bool:
        try:
            services.get_session_for(self.scope["user"], self.session_id)
        except services.SessionNotFound:
            return False
        return True

    @database_sync_to_async
    def _replay(self, after_seq: int) -> list[dict[str, Any]]:
        """Everything after `after_seq` from the database, then the current state. Messages
        still streaming are sent as a start carrying the text so far; live deltas follow."""
        session = services.get_session_for(self.scope["user"], self.session_id)
        services.resume_if_stalled(session.pk)
        events: list[dict[str, Any]] = []
        for message in session.messages.filter(seq__gt=after_seq).order_by("seq"):
            payload = services.message_payload(message)
            kind = "message.start" if message.state == Message.State.STREAMING else "message.end"
            events.append({"type": kind, "message": payload, "replay": True})
        session.refresh_from_db()
        events.append(services.session_state_payload(session))
        return events
