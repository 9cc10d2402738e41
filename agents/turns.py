"""Run one agent turn against a provider: stream free text, or stream a structured reply that
is re-rendered as markdown while its JSON grows. Both persist through TurnStream."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from agents.providers import get_provider
from agents.providers.base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    ProviderError,
    Usage,
)
from agents.runtime import SessionStopped, TurnStream, stop_requested
from conversations.models import Message, PlanningSession

T = TypeVar("T", bound=BaseModel)

STOP_CHECK_SECONDS = 0.5


@dataclass
class Agent:
    """One side of the conversation: which letter, which profile."""

    letter: str  # "A" or "B"
    profile: str


def agent_for(session: PlanningSession, letter: str) -> Agent:
    return Agent(letter, session.agent_a_profile if letter == "A" else session.agent_b_profile)


class TurnFailed(Exception):
    """The model failed mid-turn; the partial text was kept and marked interrupted."""


def _stop_check(session_id: int) -> Callable[[], bool]:
    last = 0.0
    stopped = False

    def should_stop() -> bool:
        nonlocal last, stopped
        now = time.monotonic()
        if not stopped and now - last >= STOP_CHECK_SECONDS:
            last = now
            stopped = stop_requested(session_id)
        return stopped

    return should_stop


def text_turn(
    session: PlanningSession,
    agent: Agent,
    *,
    turn_key: str,
    node: str,
    messages: list[ChatMessage],
    max_tokens: int = 400,
    role: str = Message.Role.AGENT,
    stoppable: bool = True,
) -> Message:
    """Stream a free-text reply into a message (or return the one a previous run finished).
    Stoppable turns end early when the human presses Stop; the stop summary itself is not."""
    provider = get_provider(agent.profile)
    stream = TurnStream(
        session.pk,
        turn_key=turn_key,
        role=role,
        agent=agent.letter if role == Message.Role.AGENT else "",
        node=node,
        profile=agent.profile,
        model=provider.model_name,
    )
    done = stream.existing()
    if done is not None:
        return done
    stream.open()
    options = CallOptions(
        max_tokens=max_tokens, should_stop=_stop_check(session.pk) if stoppable else None
    )
    try:
        text = stream.pump(provider.stream(messages, options))
    except GenerationCancelled:
        stream.interrupt("Stopped by you while writing.")
        raise SessionStopped from None
    except ProviderError as exc:
        stream.interrupt(f"Interrupted: {exc}")
        raise TurnFailed(str(exc)) from exc
    return stream.finish(content=text.strip() or "(no reply)", usage=options.usage)


def structured_turn(
    session: PlanningSession,
    agent: Agent,
    *,
    turn_key: str,
    node: str,
    messages: list[ChatMessage],
    schema: type[T],
    render: Callable[[dict[str, Any], bool], str],
    max_tokens: int = 700,
) -> tuple[Message, T]:
    """Stream a JSON reply constrained to `schema`, showing its markdown rendering as it grows.
    Returns the message and the validated object; invalid output gets one repair attempt."""
    provider = get_provider(agent.profile)
    stream = TurnStream(
        session.pk,
        turn_key=turn_key,
        agent=agent.letter,
        node=node,
        profile=agent.profile,
        model=provider.model_name,
    )
    done = stream.existing()
    if done is not None and done.data:
        return done, schema.model_validate(done.data)
    stream.open()
    usage = Usage()
    raw = ""
    try:
        for attempt in range(2):
            options = CallOptions(
                max_tokens=max_tokens, should_stop=_stop_check(session.pk), usage=usage
            )
            raw = ""
            for piece in provider.stream_structured(messages, schema, options):
                raw += piece
                partial = _partial(raw)
                if partial:
                    stream.show(render(partial, False))
            try:
                obj = schema.model_validate_json(raw)
                break
            except ValidationError as exc:
                if attempt == 1:
                    raise ProviderError(
                        f"the reply did not fit the expected form ({exc.error_count()} errors)"
                    ) from exc
                messages = [
                    *messages,
                    ChatMessage("assistant", raw),
                    ChatMessage(
                        "user",
                        f"That JSON was invalid: {exc.errors()[:3]}. Reply again with valid JSON only.",
                    ),
                ]
    except GenerationCancelled:
        stream.interrupt("Stopped by you while writing.")
        raise SessionStopped from None
    except ProviderError as exc:
        stream.interrupt(f"Interrupted: {exc}")
        raise TurnFailed(str(exc)) from exc
    message = stream.finish(
        content=render(obj.model_dump(), True), usage=usage, data=obj.model_dump()
    )
    return message, obj


def _partial(raw: str) -> dict[str, Any] | None:
    try:
        value = from_json(raw, allow_partial="trailing-strings")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def require_running(session_id: int) -> PlanningSession:
    session = PlanningSession.objects.select_related("codebase").get(pk=session_id)
    if session.stop_requested:
        raise SessionStopped
    return session
