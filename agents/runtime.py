"""Streaming one agent turn into a Message row and the session's websocket group.

A turn is named by a `turn_key` unique in its session. Opening a turn whose message is
already complete returns it untouched (the turn ran before a crash and must not run twice);
opening one that was cut off mid-stream resets that same row, so a re-run replaces the
partial text instead of adding a second message.

A server that is stopping (planagents.shutdown) cuts a turn at its next piece, and opens no
new one: the message stays as it was, mid-stream, and the next start re-streams it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents import trace
from agents.providers.base import Usage
from conversations.models import Message, PlanningSession
from conversations.store import message_payload, next_seq
from planagents import shutdown
from planagents.streaming import publish

FLUSH_SECONDS = 0.075  # batch tokens into one channel-layer event about this often
SAVE_SECONDS = 1.0  # beat the heart about this often (text is saved at every flush)


class SessionStopped(Exception):
    """The human pressed Stop; the job unwinds and writes the summary."""


class TurnStream:
    def __init__(
        self,
        session_id: int,
        *,
        turn_key: str,
        role: str = Message.Role.AGENT,
        agent: str = "",
        node: str = "",
        profile: str = "",
        model: str = "",
    ) -> None:
        self.session_id = session_id
        self.turn_key = turn_key
        self.fields: dict[str, Any] = {
            "role": role,
            "agent": agent,
            "node": node,
            "profile": profile,
            "model": model,
        }
        self.message: Message | None = None
        self.content = ""
        self._sent = 0  # how much of content the watchers have been sent
        self._redraw = False  # content changed other than by appending
        self._last_flush = 0.0
        self._last_save = 0.0
        self._started = 0.0

    # ------------------------------------------------------------ lifecycle

    def existing(self) -> Message | None:
        """The complete message of this turn if it already ran, else None."""
        return Message.objects.filter(
            session_id=self.session_id, turn_key=self.turn_key, state=Message.State.COMPLETE
        ).first()

    def open(self) -> Message:
        shutdown.check()
        with transaction.atomic():
            message = Message.objects.filter(
                session_id=self.session_id, turn_key=self.turn_key
            ).first()
            if message is None:
                message = Message.objects.create(
                    session_id=self.session_id,
                    seq=next_seq(self.session_id),
                    turn_key=self.turn_key,
                    state=Message.State.STREAMING,
                    **self.fields,
                )
            else:
                for name, value in self.fields.items():
                    setattr(message, name, value)
                message.content = ""
                message.state = Message.State.STREAMING
                message.save()
        self.message = message
        self.content = ""
        self._sent = 0
        self._started = self._last_flush = self._last_save = time.monotonic()
        beat(self.session_id)
        publish(self.session_id, {"type": "message.start", "message": message_payload(message)})
        return message

    def feed(self, piece: str) -> None:
        """Append text; flush to watchers and the database when it is time."""
        shutdown.check()
        self.content += piece
        now = time.monotonic()
        if now - self._last_flush >= FLUSH_SECONDS:
            self._flush()
        if now - self._last_save >= SAVE_SECONDS:
            self._save_partial()

    def show(self, rendered: str) -> None:
        """Replace what is shown with a new rendering (structured replies re-render as the
        JSON grows). Appends when the new text extends the old, restarts the message if not."""
        if rendered.startswith(self.content):
            self.feed(rendered[len(self.content) :])
            return
        # Rare (the renderers only append): redraw at the next flush, not on every token.
        self.content = rendered
        self._redraw = True
        if time.monotonic() - self._last_flush >= FLUSH_SECONDS:
            self._flush()

    def finish(
        self, *, content: str | None = None, usage: Usage | None = None, **extra: Any
    ) -> Message:
        assert self.message is not None
        if content is not None:
            self.content = content
        message = self.message
        message.content = self.content
        message.state = Message.State.COMPLETE
        # Tokens and time come from the trace of the message's calls (agents.trace.settle).
        if not trace.settle(message, usage):
            message.latency_ms = int((time.monotonic() - self._started) * 1000)
        for name, value in extra.items():
            setattr(message, name, value)
        message.save()
        publish(self.session_id, {"type": "message.end", "message": message_payload(message)})
        return message

    def interrupt(self, note: str) -> Message:
        assert self.message is not None
        self.content = (self.content.rstrip() + f"\n\n_{note}_").strip()
        message = self.message
        message.content = self.content
        message.state = Message.State.INTERRUPTED
        # What the cut calls used is recorded; the page shows it, not 0→0.
        trace.settle(message)
        message.save(
            update_fields=["content", "state", "prompt_tokens", "completion_tokens", "latency_ms"]
        )
        publish(self.session_id, {"type": "message.end", "message": message_payload(message)})
        return message

    def retire(self) -> None:
        """Free this turn's key: a re-run of the turn then writes a new message and this one
        (interrupted, with its partial text) stays as it is."""
        assert self.message is not None
        retired = f"{self.turn_key}~{self.message.seq}"
        Message.objects.filter(pk=self.message.pk).update(turn_key=retired)
        self.message.turn_key = retired

    def pump(self, pieces: Iterator[str]) -> str:
        for piece in pieces:
            self.feed(piece)
        self._flush()
        return self.content

    def flush(self) -> None:
        self._flush()

    # ------------------------------------------------------------ internals

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        assert self.message is not None
        if self._redraw:
            self._redraw = False
            self.message.content = self.content
            Message.objects.filter(pk=self.message.pk).update(content=self.content)
            publish(
                self.session_id, {"type": "message.start", "message": message_payload(self.message)}
            )
            self._sent = len(self.content)
            return
        if self._sent >= len(self.content):
            return
        # Save before publishing: whatever a reconnecting client reads from the database then
        # covers every delta already sent, so replay + live deltas never leave a gap.
        Message.objects.filter(pk=self.message.pk).update(content=self.content)
        delta = self.content[self._sent :]
        publish(
            self.session_id,
            {"type": "message.delta", "seq": self.message.seq, "offset": self._sent, "text": delta},
        )
        self._sent = len(self.content)

    def _save_partial(self) -> None:
        self._last_save = time.monotonic()
        assert self.message is not None
        Message.objects.filter(pk=self.message.pk).update(content=self.content)
        beat(self.session_id)


def beat(session_id: int) -> None:
    if shutdown.stopping():
        return  # a job being parked must not look alive to the sweep at the next start
    PlanningSession.objects.filter(pk=session_id).update(heartbeat_at=timezone.now())


def stop_requested(session_id: int) -> bool:
    return PlanningSession.objects.filter(pk=session_id, stop_requested=True).exists()
