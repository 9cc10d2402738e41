"""Run one agent turn against a provider: stream free text, or stream a structured reply that
is re-rendered as markdown while its JSON grows. Both persist through TurnStream.

Every call goes through `_calls`: it charges the session's budget, retries a failed call with
backoff and jitter while nothing has been streamed yet, and leaves later failures to the turn,
which marks the message interrupted and finishes the turn on the session's fallback profile.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db.models import Q
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from agents.budget import charge_call, charge_tokens
from agents.errors import BudgetSpent, TurnCancelled, TurnFailed
from agents.providers import estimate_cost, get_profile_info, get_provider
from agents.providers.base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    InvalidStructuredOutput,
    LLMProvider,
    ProviderError,
    ProviderUnavailable,
    RetryableError,
    parse_structured,
    repair_messages,
)
from agents.providers.remote import env_float, env_str
from agents.runtime import SessionStopped, TurnStream, beat
from conversations.models import Message, PlanningSession

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

STOP_CHECK_SECONDS = 0.5
FALLBACK_SUFFIX = ":fallback"


@dataclass
class Agent:
    """One side of the conversation: which letter, which profile."""

    letter: str  # "A" or "B"
    profile: str


def agent_for(session: PlanningSession, letter: str) -> Agent:
    return Agent(letter, session.agent_a_profile if letter == "A" else session.agent_b_profile)


# ---------------------------------------------------------------- resilience settings


def retries() -> int:
    return int(env_float("PLANAGENTS_LLM_RETRIES", 2))


def backoff_seconds() -> float:
    return env_float("PLANAGENTS_LLM_BACKOFF", 1.0)


def retry_after_cap() -> float:
    return env_float("PLANAGENTS_RETRY_AFTER_CAP", 30.0)


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before retry number `attempt` (0-based): the server's Retry-After when
    it sent one, else exponential with jitter; capped either way so a turn never hangs."""
    cap = retry_after_cap()
    if retry_after is not None:
        return min(retry_after, cap)
    return min(cap, backoff_seconds() * 2**attempt) * random.uniform(0.5, 1.0)


def sleep(seconds: float, should_stop: Callable[[], bool]) -> None:
    """Wait, but give up at once when the human stops or cancels (tests replace this)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if should_stop():
            raise GenerationCancelled("Stopped while waiting to retry.")
        time.sleep(min(left, 0.1))


def default_fallback_profile() -> str:
    return env_str("PLANAGENTS_FALLBACK_PROFILE", "local")


# ---------------------------------------------------------------- calls


def _calls(
    session_id: int, start: Callable[[], Iterator[str]], should_stop: Callable[[], bool]
) -> Iterator[str]:
    """The pieces of one reply. A RetryableError before the first piece is retried; anything
    after it is the caller's (the text already shown cannot be taken back)."""
    attempt = 0
    while True:
        charge_call(session_id)
        pieces = start()
        try:
            first = next(pieces)
        except StopIteration:
            return
        except RetryableError as exc:
            if attempt >= retries():
                raise
            delay = backoff_delay(attempt, exc.retry_after)
            attempt += 1
            log.info("retrying in %.1fs (attempt %d): %s", delay, attempt, exc)
            beat(session_id)  # waiting is not dying: keep the stalled-session sweep away
            sleep(delay, should_stop)
            continue
        yield first
        yield from pieces
        return


def _never() -> bool:
    return False


def _stop_check(session_id: int) -> Callable[[], bool]:
    last = 0.0
    stopped = False

    def should_stop() -> bool:
        nonlocal last, stopped
        now = time.monotonic()
        if not stopped and now - last >= STOP_CHECK_SECONDS:
            last = now
            stopped = (
                PlanningSession.objects.filter(pk=session_id)
                .filter(Q(stop_requested=True) | Q(cancel_requested=True))
                .exists()
            )
        return stopped

    return should_stop


def structured_call(
    session: PlanningSession,
    provider: LLMProvider,
    messages: list[ChatMessage],
    schema: type[T],
    options: CallOptions,
) -> T:
    """A structured reply outside any message (a debate signal): budget, retries, one repair."""
    should_stop = options.should_stop or _never
    try:
        text = "".join(
            _calls(
                session.pk,
                lambda: provider.stream_structured(messages, schema, options),
                should_stop,
            )
        )
        try:
            return parse_structured(text, schema)
        except InvalidStructuredOutput as exc:
            retry = [*messages, *repair_messages(text, exc)]
            text = "".join(
                _calls(
                    session.pk,
                    lambda: provider.stream_structured(retry, schema, options),
                    should_stop,
                )
            )
            return parse_structured(text, schema)
    finally:
        charge_tokens(session.pk, options.usage)


# ---------------------------------------------------------------- turns


def _finished(session_id: int, turn_key: str) -> Message | None:
    """The complete message of this turn, written by its own profile or by the fallback."""
    return (
        Message.objects.filter(
            session_id=session_id,
            turn_key__in=[turn_key, turn_key + FALLBACK_SUFFIX],
            state=Message.State.COMPLETE,
        )
        .order_by("-seq")
        .first()
    )


def fallback_for(session: PlanningSession, agent: Agent) -> str | None:
    """The profile that finishes a failed turn, or None when there is no usable other one."""
    name = session.fallback_profile or default_fallback_profile()
    if not name or name == agent.profile:
        return None
    try:
        info = get_profile_info(name)
    except ProviderUnavailable:
        return None
    return name if info.available else None


def _cancelled(session: PlanningSession, agent: Agent, stream: TurnStream) -> Exception:
    """What a GenerationCancelled means: Stop (end the session) or Stop reply (hand over)."""
    flags = PlanningSession.objects.filter(pk=session.pk).values("stop_requested").get()
    if flags["stop_requested"]:
        stream.interrupt("Stopped by you while writing.")
        return SessionStopped()
    stream.interrupt("Reply stopped by you.")
    # A re-run of this turn (after Continue) writes a new message instead of over this one.
    stream.retire()
    PlanningSession.objects.filter(pk=session.pk).update(cancel_requested=False)
    return TurnCancelled(f"you stopped Agent {agent.letter}'s reply; what it wrote so far is kept")


def _run_turn(
    session: PlanningSession,
    agent: Agent,
    *,
    turn_key: str,
    stream_fields: dict[str, Any],
    stoppable: bool,
    write: Callable[[LLMProvider, TurnStream, CallOptions, Callable[[], bool]], dict[str, Any]],
    allow_fallback: bool = True,
) -> Message:
    """Open the turn's message, let `write` stream into it, and finish it with accounting.
    `write` returns the fields to finish with (content, data)."""
    done = _finished(session.pk, turn_key)
    if done is not None:
        return done
    fallback = fallback_for(session, agent) if allow_fallback else None
    if (
        fallback
        and Message.objects.filter(
            session_id=session.pk, turn_key=turn_key + FALLBACK_SUFFIX
        ).exists()
    ):
        # A run that crashed while the fallback was writing: its own model already failed
        # this turn, so the fallback finishes it (reopening its cut-off message).
        agent, turn_key = Agent(agent.letter, fallback), turn_key + FALLBACK_SUFFIX
        fallback = None
    provider = get_provider(agent.profile)
    stream = TurnStream(
        session.pk,
        turn_key=turn_key,
        profile=agent.profile,
        model=provider.model_name,
        **stream_fields,
    )
    stream.open()
    should_stop = _stop_check(session.pk) if stoppable else _never
    options = CallOptions(should_stop=should_stop if stoppable else None)
    try:
        fields = write(provider, stream, options, should_stop)
    except GenerationCancelled:
        raise _cancelled(session, agent, stream) from None
    except BudgetSpent as exc:
        stream.interrupt("Paused: the session's LLM budget is spent.")
        stream.retire()
        raise exc from None
    except ProviderError as exc:
        streamed = bool(stream.content.strip())
        # A reply cut off mid-stream, or a provider that stayed down through the retries:
        # finish the turn elsewhere. Anything else (a bad key, a bad request) needs the human.
        if fallback and (streamed or isinstance(exc, RetryableError)):
            stream.interrupt(f"Interrupted: {exc}")
            stream.retire()
            _note(
                session,
                f"**Agent {agent.letter}'s model ({agent.profile}) failed:** {exc}. "
                f"Agent {agent.letter} finishes this turn on the fallback profile `{fallback}`.",
                node=str(stream_fields.get("node", "")),
            )
            return _run_turn(
                session,
                Agent(agent.letter, fallback),
                turn_key=turn_key + FALLBACK_SUFFIX,
                stream_fields=stream_fields,
                stoppable=stoppable,
                write=write,
                allow_fallback=False,
            )
        stream.interrupt(f"Interrupted: {exc}")
        raise TurnFailed(str(exc)) from None
    finally:
        charge_tokens(session.pk, options.usage)
    usage = options.usage
    return stream.finish(
        usage=usage,
        cost_usd=estimate_cost(agent.profile, usage.prompt_tokens, usage.completion_tokens),
        **fields,
    )


def _note(session: PlanningSession, text: str, *, node: str = "") -> None:
    from conversations.services import add_message

    add_message(session.pk, role=Message.Role.SYSTEM, content=text, node=node)


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

    def write(
        provider: LLMProvider,
        stream: TurnStream,
        options: CallOptions,
        should_stop: Callable[[], bool],
    ) -> dict[str, Any]:
        options.max_tokens = max_tokens
        text = stream.pump(
            _calls(session.pk, lambda: provider.stream(messages, options), should_stop)
        )
        return {"content": text.strip() or "(no reply)"}

    return _run_turn(
        session,
        agent,
        turn_key=turn_key,
        stream_fields={
            "role": role,
            "agent": agent.letter if role == Message.Role.AGENT else "",
            "node": node,
        },
        stoppable=stoppable,
        write=write,
    )


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
    done = _finished(session.pk, turn_key)
    if done is not None and done.data:
        return done, schema.model_validate(done.data)

    def write(
        provider: LLMProvider,
        stream: TurnStream,
        options: CallOptions,
        should_stop: Callable[[], bool],
    ) -> dict[str, Any]:
        options.max_tokens = max_tokens
        prompt = messages
        for attempt in range(2):
            raw = ""
            pieces = _calls(
                session.pk,
                lambda p=prompt: provider.stream_structured(p, schema, options),  # type: ignore[misc]
                should_stop,
            )
            for piece in pieces:
                raw += piece
                partial = _partial(raw)
                if partial:
                    stream.show(render(partial, False))
            try:
                obj = schema.model_validate_json(raw)
            except ValidationError as exc:
                if attempt == 1:
                    raise ProviderError(
                        f"the reply did not fit the expected form ({exc.error_count()} errors)"
                    ) from None
                prompt = [
                    *messages,
                    ChatMessage("assistant", raw),
                    ChatMessage(
                        "user",
                        f"That JSON was invalid: {exc.errors()[:3]}. Reply again with valid JSON only.",
                    ),
                ]
                continue
            data = obj.model_dump()
            return {"content": render(data, True), "data": data}
        raise AssertionError("unreachable")

    message = _run_turn(
        session,
        agent,
        turn_key=turn_key,
        stream_fields={"agent": agent.letter, "node": node},
        stoppable=True,
        write=write,
    )
    return message, schema.model_validate(message.data)


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
