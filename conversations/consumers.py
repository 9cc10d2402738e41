"""The session websocket. Thin: it checks who is asking (on connect and again before every
action), validates the frame, and calls the services; events from jobs arrive through the
session's group and are forwarded as they are.

Every frame gets an answer. A frame that is not a valid action (not JSON, nested too deeply,
too large, binary, an unknown type, a field of the wrong type) gets an `error` frame and the
socket carries on. A socket whose login ended (logout, deactivation, a changed password, an
expired session) is refused its next action and closed with 4401; a logout closes the sockets
opened with that login at once.

Replays are bounded: `resume` sends at most the REPLAY_LIMIT latest messages after the seq the
client has (starting with `history.gap` when it left older ones out), and `history` pages
through the older ones the same way, ending with `history.end` (`more`: it left some out).
The HTML of finished messages is rendered once and stored (store.message_html), and
replays run on threads of their own, not on the one thread every socket's database calls
share, nor on the pool the in-process jobs hold for minutes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import import_module
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    load_backend,
)
from django.utils.crypto import constant_time_compare

from conversations import services, store
from conversations.models import Message
from planagents.streaming import session_group, user_group

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 * 1024
MAX_SEQ = 2**31 - 1  # the largest seq every database can store
REPLAY_LIMIT = 50
"""Most messages one resume or history frame sends; older ones are paged with `history`."""
REPLAY_MAX_CHARS = 400_000
"""Most text one replay sends (its first message goes whatever its size)."""
STOPPING = {"cancel": "reply", "stop": "session"}
"""Control actions acknowledged with a `stopping` event, and what they stop."""
CONTROL_ACTIONS = ("approve", "modify", "stop", "continue", "cancel", "revise")
FRAME_TYPES = ("resume", "history", "user.message", "control")
SIGNED_OUT, NOT_FOUND = 4401, 4404
SIGNED_OUT_MESSAGE = "You are signed out; sign in again to keep working in this session."
SERVER_FAILED = "The server failed to do that; try again, or reload the page."

# Two at a time: replays are mostly CPU (JSON, and rendering text stored before the html
# was), and more threads would only take the interpreter from the event loop.
_replays = ThreadPoolExecutor(max_workers=2, thread_name_prefix="replay")


def _on_replay_threads(func: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    return database_sync_to_async(func, thread_sensitive=False, executor=_replays)


Action = Callable[[], Awaitable[None]]
Event = dict[str, Any]
Replay = tuple[list[Event], dict[int, Message]]
"""The events of a replay, and the finished messages in it whose HTML is still to render."""


class BadFrame(Exception):
    """A frame the protocol does not allow; the message says what was wrong with it."""


def parse_frame(text_data: str | None) -> dict[str, Any]:
    """The frame as a JSON object with a string "type", or BadFrame saying what is wrong."""
    if text_data is None:
        raise BadFrame("Frames must be JSON text.")
    # Characters first: free, and at most 4 bytes each.
    if (
        len(text_data) > MAX_FRAME_BYTES
        or len(size := text_data.encode("utf-8", "surrogatepass")) > MAX_FRAME_BYTES
    ):
        length = len(text_data) if len(text_data) > MAX_FRAME_BYTES else len(size)
        raise BadFrame(f"Frame too large ({length:,} bytes or more; at most {MAX_FRAME_BYTES:,}).")
    try:
        frame = json.loads(text_data)
    except RecursionError:
        raise BadFrame("Frames must be JSON objects; that one was nested too deeply.") from None
    except ValueError:
        raise BadFrame("Frames must be JSON objects; that was not valid JSON.") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
        raise BadFrame('Frames must be JSON objects with a "type".')
    return frame


def whole_number(frame: dict[str, Any], name: str, *, default: int | None = None) -> int:
    value = frame.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SEQ:
        raise BadFrame(f"{frame['type']} needs {name}: a whole number ≥ 0.")
    return value


def text_field(frame: dict[str, Any], name: str = "text") -> Any:
    """The text as sent; its type and length are the service's to judge. Text a database
    cannot store (NUL, halves of surrogate pairs) is refused here."""
    value = frame.get(name)
    if isinstance(value, str):
        if "\x00" in value:
            raise BadFrame("The text contains a NUL character.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadFrame("The text is not valid Unicode.") from None
    return value


def shown(value: Any) -> str:
    """A value sent by the client, short enough to quote back in an error."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class SessionConsumer(AsyncJsonWebsocketConsumer):
    session_id: int

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        if user is None or not user.is_authenticated or not await self._signed_in():
            await self.close(code=SIGNED_OUT)
            return
        if not await self._can_view():
            await self.close(code=NOT_FOUND)
            return
        await self.channel_layer.group_add(session_group(self.session_id), self.channel_name)
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        self.joined = True
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "joined", False):
            await self.channel_layer.group_discard(
                session_group(self.session_id), self.channel_name
            )
            await self.channel_layer.group_discard(
                user_group(self.scope["user"].pk), self.channel_name
            )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            frame = parse_frame(text_data)
            action = self._action_for(frame)
        except BadFrame as exc:
            await self._error(str(exc))
            return
        if not await self._signed_in():
            await self._error(SIGNED_OUT_MESSAGE)
            await self.close(code=SIGNED_OUT)
            return
        # Ownership is checked again on every action: the session could have changed hands.
        if not await self._can_view():
            await self._error("That session does not exist.")
            await self.close(code=NOT_FOUND)
            return
        try:
            await action()
        except services.SessionError as exc:
            await self._error(str(exc))
        except Exception:
            # A bug, not the client's doing: say so, keep the socket, leave a traceback.
            log.exception("session %s: a %s frame failed", self.session_id, frame["type"])
            await self._error(SERVER_FAILED)

    # ------------------------------------------------------------ group events

    async def session_event(self, event: dict[str, Any]) -> None:
        await self.send_json(event["event"])

    async def user_signed_out(self, event: dict[str, Any]) -> None:
        """A logout (of this login, or another of the user's) or a deactivation."""
        ended = event.get("session_key") or None
        if ended != self._session_key() and await self._signed_in():
            return  # another browser logged out; this login is still good
        await self._error(SIGNED_OUT_MESSAGE)
        await self.close(code=SIGNED_OUT)

    # ------------------------------------------------------------ frames

    def _action_for(self, frame: dict[str, Any]) -> Action:
        """The action a frame asks for, its fields checked; BadFrame when it asks for none."""
        kind = frame["type"]
        user = self.scope["user"]
        if kind == "resume":
            after = whole_number(frame, "after_seq", default=0)
            return lambda: self._send_all(self._replay, after, None)
        if kind == "history":
            after = whole_number(frame, "after_seq", default=0)
            before = whole_number(frame, "before_seq")
            return lambda: self._send_all(self._replay, after, before)
        if kind == "user.message":
            text = text_field(frame)
            return lambda: self._call(services.post_user_message, user, self.session_id, text)
        if kind == "control":
            action = frame.get("action")
            if not isinstance(action, str) or action not in CONTROL_ACTIONS:
                raise BadFrame(
                    f"Unknown control action {shown(action)}; expected one of "
                    f"{', '.join(CONTROL_ACTIONS)}."
                )
            if action == "modify":
                text = text_field(frame)
                return lambda: self._call(services.request_changes, user, self.session_id, text)
            if action == "approve" and "override" in frame:  # past a critical rule, with a reason
                reason = text_field(frame, "override")
                return lambda: self._call(services.approve, user, self.session_id, reason)
            call = {
                "approve": services.approve,
                "stop": services.stop,
                "continue": services.continue_session,
                "cancel": services.cancel_reply,
                "revise": services.revise,  # a completed plan back to the checkpoint
            }[action]
            if action in STOPPING:
                return lambda: self._stop(call, STOPPING[action])
            return lambda: self._call(call, user, self.session_id)
        raise BadFrame(f"Unknown frame type {shown(kind)}; expected {', '.join(FRAME_TYPES)}.")

    async def _call(self, service: Callable[..., Any], *args: Any) -> None:
        await database_sync_to_async(service)(*args)

    async def _stop(self, service: Callable[..., Any], what: str) -> None:
        """Stop or Stop reply, acknowledged at once to every page of the session: the job
        sees the flag within about half a second, wherever its call is (reading the prompt
        included), and the page says it is stopping until the state says it stopped."""
        await self._call(service, self.scope["user"], self.session_id)
        await self.channel_layer.group_send(
            session_group(self.session_id),
            {"type": "session.event", "event": {"type": "stopping", "what": what}},
        )

    async def _send_all(
        self, replay: Callable[[int, int | None], Replay], after: int, before: int | None
    ) -> None:
        # Off the thread every socket's database calls share: a long replay must not make
        # everyone else's actions wait. A message never rendered is rendered on its own turn
        # of the pool, so a small replay waits for a message or two, not for whole replays.
        events, unrendered = await _on_replay_threads(replay)(after, before)
        for event in events:
            payload = event.get("message")
            if payload is not None and payload["seq"] in unrendered:
                message = unrendered[payload["seq"]]
                payload["html"] = await _on_replay_threads(_rendered)(message)
            await self.send_json(event)

    # ------------------------------------------------------------ helpers

    async def _error(self, message: str) -> None:
        await self.send_json({"type": "error", "message": message})

    def _session_key(self) -> str | None:
        session = self.scope.get("session")
        return getattr(session, "session_key", None) if session is not None else None

    @database_sync_to_async
    def _signed_in(self) -> bool:
        """Whether the login that opened this socket still signs its user in: the Django
        session behind its cookie exists, names this user and this password, and the user may
        still log in (ModelBackend refuses inactive users). Read-only, unlike
        django.contrib.auth.get_user, which may flush or re-key the session it checks."""
        user = self.scope["user"]
        key = self._session_key()
        if not key:
            return False
        data = import_module(settings.SESSION_ENGINE).SessionStore(key).load()
        backend_path = data.get(BACKEND_SESSION_KEY)
        if data.get(SESSION_KEY) != str(user.pk) or backend_path not in (
            settings.AUTHENTICATION_BACKENDS
        ):
            return False
        current = load_backend(backend_path).get_user(user.pk)
        if current is None or not current.is_active:
            return False
        session_hash = data.get(HASH_SESSION_KEY) or ""
        return any(
            constant_time_compare(session_hash, valid)
            for valid in [current.get_session_auth_hash(), *_fallback_hashes(current)]
        )

    @database_sync_to_async
    def _can_view(self) -> bool:
        try:
            services.get_session_for(self.scope["user"], self.session_id)
        except services.SessionNotFound:
            return False
        return True

    def _replay(self, after_seq: int, before_seq: int | None) -> Replay:
        """Messages after `after_seq` (and before `before_seq`, for a history page) from the
        database: the latest REPLAY_LIMIT of them, oldest first. A resume ends with the current
        state, a history page with `history.end`; either starts with `history.gap` when it left
        older messages out. Messages still streaming are sent as a start with the text so far;
        live deltas follow."""
        session = services.get_session_for(self.scope["user"], self.session_id)
        if before_seq is None:
            services.resume_if_stalled(session.pk)
        wanted = session.messages.filter(seq__gt=after_seq)
        if before_seq is not None:
            wanted = wanted.filter(seq__lt=before_seq)
        latest = list(wanted.order_by("-seq")[: REPLAY_LIMIT + 1])
        chosen: list[Message] = []
        chars = 0
        for message in latest[:REPLAY_LIMIT]:
            chars += len(message.content)
            if chosen and chars > REPLAY_MAX_CHARS:
                break
            chosen.append(message)
        chosen.reverse()
        events: list[Event] = []
        more = len(chosen) < len(latest)
        if more:
            events.append(
                {"type": "history.gap", "after_seq": after_seq, "before_seq": chosen[0].seq}
            )
        unrendered: dict[int, Message] = {}
        for message in chosen:
            payload = store.message_payload(message, render=False)
            streaming = message.state == Message.State.STREAMING
            if not streaming and "html" not in payload:
                unrendered[message.seq] = message
            kind = "message.start" if streaming else "message.end"
            events.append({"type": kind, "message": payload, "replay": True})
        if before_seq is not None:
            events.append(
                {
                    "type": "history.end",
                    "after_seq": after_seq,
                    "before_seq": before_seq,
                    "more": more,
                }
            )
            return events, unrendered
        session.refresh_from_db()
        events.append({**store.session_state_payload(session), "replay": True})
        return events, unrendered


def _rendered(message: Message) -> str:
    # Another socket replaying the same history may have rendered it since: read again first.
    message.refresh_from_db(fields=["content", "html", "html_digest"])
    return store.message_html(message)


def _fallback_hashes(user: Any) -> list[str]:
    # Sessions signed before a SECRET_KEY rotation stay valid while the old key is a fallback.
    hashes = getattr(user, "get_session_auth_fallback_hash", None)
    return list(hashes()) if hashes else []
