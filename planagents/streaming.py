"""The streaming seam: jobs publish events to a session's channel-layer group.

Events are plain JSON-able dicts in the websocket protocol's shape ({"type": "message.delta",
...}); the consumer forwards them unchanged. The layer may drop events when a channel is full;
the database, replayed by `seq`, is what guarantees delivery.

Two limits shape what is sent. An event must stay far below the channel layer's frame size
(Redis messages are msgpacked whole; the websocket frame carries it again): a huge delta is
split into several deltas with increasing offsets, and any other oversized event loses its
rendered html, then has its text cut and is marked `"truncated": true` (the full text is in
the database; a resume fetches it). And a Celery worker has no event loop of its own: it
publishes through one long-lived loop per process, so the Redis connections are reused
instead of opened for every batch of tokens.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

log = logging.getLogger(__name__)

MAX_EVENT_BYTES = 256 * 1024  # far below the 1 MB a frame may carry, with room for envelopes
MAX_DELTA_CHARS = MAX_EVENT_BYTES // 8  # UTF-8 is at most 4 bytes a character, JSON escapes 6
SEND_TIMEOUT = 5.0


def session_group(session_id: int) -> str:
    return f"session-{session_id}"


def user_group(user_id: int) -> str:
    """Every open socket of one user: told when the user logs out or is deactivated."""
    return f"user-{user_id}"


def publish(session_id: int, event: dict[str, Any]) -> None:
    """Send one event to everyone watching the session. Never raises: delivery is best effort."""
    layer = get_channel_layer()
    if layer is None:
        return
    group = session_group(session_id)
    if settings.PLANAGENTS_EVENT_TIMESTAMPS:
        event = {**event, "sent_at": time.time()}  # lets bench/scaleout measure latency
    try:
        for part in fit(event):
            _send(layer, group, {"type": "session.event", "event": part})
    except Exception:
        log.warning(
            "could not publish %s to session %s", event.get("type"), session_id, exc_info=True
        )


def notify_user(user_id: int, message: dict[str, Any]) -> None:
    """Send a message (its "type" names the consumer's handler) to every socket of the user.
    Never raises: a logout must not fail because the channel layer is down."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        _send(layer, user_group(user_id), message)
    except Exception:
        log.warning(
            "could not tell user %s's sockets %s", user_id, message.get("type"), exc_info=True
        )


def fit(event: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The event, or the several events that say the same within MAX_EVENT_BYTES each."""
    if event.get("type") == "message.delta" and len(event.get("text", "")) > MAX_DELTA_CHARS:
        text, offset = event["text"], event["offset"]
        for start in range(0, len(text), MAX_DELTA_CHARS):
            piece = text[start : start + MAX_DELTA_CHARS]
            yield {**event, "offset": offset + start, "text": piece}
        return
    if _size(event) <= MAX_EVENT_BYTES:
        yield event
        return
    message = event.get("message")
    if not isinstance(message, dict):
        log.warning("dropping an oversized %s event (%d bytes)", event.get("type"), _size(event))
        return
    smaller = {k: v for k, v in message.items() if k != "html"}
    if _size({**event, "message": smaller}) > MAX_EVENT_BYTES:
        content = smaller.get("content", "")
        smaller["content"] = content[:MAX_DELTA_CHARS]
        smaller["truncated"] = True
    yield {**event, "message": smaller}


def _size(event: dict[str, Any]) -> int:
    return len(json.dumps(event, ensure_ascii=False).encode())


def _send(layer: Any, group: str, message: dict[str, Any]) -> None:
    server_loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if server_loop is not None and server_loop.is_running():
        # A job running inside a server (in-process jobs): use the server's loop, which the
        # in-memory layer needs.
        async_to_sync(layer.group_send)(group, message)
        return
    future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), _own_loop())
    future.result(timeout=SEND_TIMEOUT)


_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0
_loop_lock = threading.Lock()


def _own_loop() -> asyncio.AbstractEventLoop:
    """This process's publishing loop, started on first use (after any fork)."""
    global _loop, _loop_pid
    with _loop_lock:
        # is_closed, not is_running: a loop just started may not be running yet.
        if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, daemon=True, name="publisher").start()
            _loop, _loop_pid = loop, os.getpid()
        return _loop
