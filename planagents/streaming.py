"""The streaming seam: jobs publish events to a session's channel-layer group.

Events are plain JSON-able dicts in the websocket protocol's shape ({"type": "message.delta",
...}); the consumer forwards them unchanged. The layer may drop events when a channel is full;
the database, replayed by `seq`, is what guarantees delivery.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)


def session_group(session_id: int) -> str:
    return f"session-{session_id}"


def publish(session_id: int, event: dict[str, Any]) -> None:
    """Send one event to everyone watching the session. Never raises: delivery is best effort."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            session_group(session_id), {"type": "session.event", "event": event}
        )
    except Exception:
        log.warning(
            "could not publish %s to session %s", event.get("type"), session_id, exc_info=True
        )
