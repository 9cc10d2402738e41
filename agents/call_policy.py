"""The call policy: how one LLM call is made, whatever turn it serves.

Every call goes through `call`: it is refused once the run's time is up, charged to the
session's budget (agents.budget) when it is let in to generate (not while it waits in the
model's line), held to its time limit, recorded (agents.trace) and scrubbed of configured API
keys. A RetryableError before the first piece is retried after a backoff with jitter, or after
the provider's Retry-After (capped); a failure after it is the turn's, since the text already
shown cannot be taken back. A turn whose model stayed down through the retries, or died
mid-reply, is finished on the session's fallback profile (`fallback_for`, `falls_back`);
agents.turns does the finishing.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from django.conf import settings
from django.db.models import Q
from pydantic import BaseModel

from agents import model_queue, trace
from agents.budget import (
    CallClock,
    TimeLimitReached,
    charge_call,
    check_budget,
    check_session_time,
    extend_run,
)
from agents.providers import get_profile_info
from agents.providers.base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    LLMProvider,
    ProviderError,
    ProviderUnavailable,
    RetryableError,
    ToolReply,
    ToolSpec,
)
from agents.providers.remote import scrub_stream
from agents.runtime import beat
from conversations.models import PlanningSession
from conversations.progress import approx_tokens, call_estimate, call_progress, queue_progress
from planagents.streaming import publish

log = logging.getLogger(__name__)


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before retry number `attempt` (0-based): the server's Retry-After when
    it sent one, else exponential with jitter; capped either way so a turn never hangs."""
    cap = float(settings.PLANAGENTS_RETRY_AFTER_CAP)
    if retry_after is not None:
        return min(retry_after, cap)
    base = float(settings.PLANAGENTS_LLM_BACKOFF)
    return min(cap, base * 2**attempt) * random.uniform(0.5, 1.0)


def sleep(seconds: float, should_stop: Callable[[], bool]) -> None:
    """Wait, but give up at once when the human stops or cancels (tests replace this)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if should_stop():
            raise GenerationCancelled("Stopped while waiting to retry.")
        time.sleep(min(left, 0.1))


def fallback_for(session: PlanningSession, profile: str) -> str | None:
    """The profile that finishes a turn `profile` failed, or None when there is no usable
    other one: the session's choice, else PLANAGENTS_FALLBACK_PROFILE."""
    name = session.fallback_profile or settings.PLANAGENTS_FALLBACK_PROFILE
    if not name or name == profile:
        return None
    try:
        info = get_profile_info(name)
    except ProviderUnavailable:
        return None
    return name if info.available else None


def falls_back(exc: ProviderError, streamed: bool) -> bool:
    """Whether a turn that failed with `exc` goes to the fallback profile: a reply cut off
    mid-stream, or a provider that stayed down through the retries. Anything else (a bad key,
    a bad request) needs the human."""
    return streamed or isinstance(exc, RetryableError)


def _human_stopped(session_id: int, own: Callable[[], bool] | None) -> bool:
    """Whether the human asked to stop (Stop, or Stop reply) a call their stop check covers,
    read afresh: a call at its time limit when they did is stopped by them, and says so."""
    if own is None:
        return False  # a call nothing but its limits stop (the stop summary)
    return (
        PlanningSession.objects.filter(pk=session_id)
        .filter(Q(stop_requested=True) | Q(cancel_requested=True))
        .exists()
    )


@contextmanager
def _in_line(
    session_id: int,
    provider: LLMProvider,
    purpose: str,
    prompt_tokens: int,
    message_id: int | None,
    options: CallOptions,
    should_stop: Callable[[], bool],
) -> Iterator[None]:
    """A local-model call waits for its turn in the machine's one line (agents.model_queue)
    and holds a place while it runs; the page hears where it stands while it waits, and the
    wait is added to the session's run time (another session spent it). Other providers go
    straight through: their servers have their own limits."""
    if not getattr(provider, "queued", False):
        yield
        return
    check_budget(session_id)  # a spent budget does not wait in line to be refused
    told: list[bool] = []

    def tell(where: model_queue.Place) -> None:
        told.append(True)
        publish(session_id, queue_progress(session_id, message_id, provider.profile, purpose,
                                           where))  # fmt: skip

    own = options.should_stop
    with model_queue.in_line(
        session_id=session_id,
        profile=provider.profile,
        purpose=purpose,
        estimate_s=call_estimate(provider.profile, purpose, prompt_tokens),
        should_stop=lambda: should_stop() or (own is not None and own()),
        tell=tell,
        keep_alive=lambda: beat(session_id),
    ) as waited:
        if told:
            extend_run(session_id, waited)
            if message_id is not None:  # the turn's line on the page goes back to reading
                publish(session_id, queue_progress(session_id, message_id, provider.profile,
                                                   purpose, None))  # fmt: skip
        yield


def call(
    session_id: int,
    provider: LLMProvider,
    prompt: list[ChatMessage],
    options: CallOptions,
    should_stop: Callable[[], bool],
    *,
    schema: type[BaseModel] | None = None,
    purpose: str = "",
    message_id: int | None = None,
    traces: list[trace.CallTrace] | None = None,
    tools: Sequence[ToolSpec] = (),
) -> Iterator[str]:
    """The pieces of one reply (offered `tools`: the ToolReply JSON of the model's tool
    calls). A RetryableError before the first piece is retried; anything after it is the
    caller's (the text already shown cannot be taken back). Each call is charged, held to its
    time limits (agents.budget) and recorded (agents.trace); `traces` collects the records so
    the caller can say later that a reply was redone or repaired."""
    attempt = 0
    while True:
        check_session_time(session_id)
        size = approx_tokens([m.content for m in prompt])
        named = purpose or (schema.__name__ if schema is not None else "")
        with _in_line(session_id, provider, named, size, message_id, options, should_stop):
            # Charged once let in: the page's count of calls is of calls made, not waiting.
            charge_call(session_id)
            record = trace.begin(
                session_id,
                provider,
                prompt,
                options.usage,
                schema=ToolReply if tools else schema,
                purpose=purpose,
                message_id=message_id,
            )
            if traces is not None:
                traces.append(record)
            clock = CallClock(
                session_id,
                provider.profile,
                options.should_stop,
                usage=options.usage,
                prompt_tokens=size,
                reply_tokens=options.max_tokens,
            )
            if message_id is None:  # no message shows this call: the status line does
                publish(session_id, call_progress(provider.profile, record.purpose, size))
            own_stop, options.should_stop = options.should_stop, clock.should_stop
            output: list[str] = []
            outcome, note = trace.Outcome.ERROR, ""
            retry_in: float | None = None
            pieces: Iterator[str] | None = None
            try:
                if tools:
                    pieces = provider.stream_tool_calls(prompt, list(tools), options)
                elif schema is None:
                    pieces = provider.stream(prompt, options)
                else:
                    pieces = provider.stream_structured(prompt, schema, options)
                try:
                    first = next(pieces)
                    record.piece_came()
                    if message_id is None:
                        writing = call_progress(
                            provider.profile, record.purpose, 0, phase="writing"
                        )
                        publish(session_id, writing)
                except StopIteration:
                    outcome = trace.Outcome.OK
                    return
                except RetryableError as exc:
                    if attempt >= settings.PLANAGENTS_LLM_RETRIES:
                        raise
                    outcome, note = trace.Outcome.RETRIED, str(exc)
                    retry_in = backoff_delay(attempt, exc.retry_after)
                else:
                    # A model can be talked into echoing a configured API key: none leaves this
                    # seam (nor reaches the trace).
                    for piece in scrub_stream(itertools.chain([first], pieces)):
                        clock.progressed()
                        output.append(piece)
                        yield piece
                        if clock.passed():
                            raise GenerationCancelled("time limit")
                    outcome = trace.Outcome.OK
                    return
            except GenerationCancelled as exc:
                if clock.hit and not (clock.by_human or _human_stopped(session_id, own_stop)):
                    outcome, note = trace.Outcome.TIMED_OUT, clock.message
                    raise TimeLimitReached(clock.message) from None
                outcome, note = trace.Outcome.STOPPED, str(exc)
                raise
            except GeneratorExit:
                note = "the caller stopped reading the reply"
                raise
            except BaseException as exc:
                note = note or f"{type(exc).__name__}: {exc}"
                raise
            finally:
                options.should_stop = own_stop
                close = getattr(pieces, "close", None)
                if outcome != trace.Outcome.OK and callable(close):
                    close()  # a local model drops the task when its stream is closed
                record.finish(outcome, "".join(output), options.usage, note)
                if message_id is None:
                    publish(
                        session_id, call_progress(provider.profile, record.purpose, 0, phase="done")
                    )
        attempt += 1
        retry_in = retry_in or 0.0
        log.info("retrying in %.1fs (attempt %d): %s", retry_in, attempt, note)
        beat(session_id)  # waiting is not dying: keep the stalled-session sweep away
        sleep(retry_in, should_stop)
