"""A trace of every LLM call: the prompt messages, the raw output, the profile and model, tokens,
time and how it ended. `agents.call_policy.call` is the one place calls are made; it opens a
`CallTrace` for each call (a retry, a redo and a repair are calls of their own) and finishes it
when the call ends, however it ends.

What is stored is safe to show the session's owner: prompts are built from the task, the
human's messages and the indexed code, and withheld files (rag.secrets) never reach the index
or a prompt; a configured API key that an uploaded file still holds is scrubbed from the
stored prompt, as it is from the output (the stream the page was shown). Each call is bounded to PLANAGENTS_TRACE_MAX_CHARS characters (200,000 by
default): the middle of the longest parts is cut, and the record says it was.

The trace is also the one source of the figures shown about calls: a message's tokens and time
are its calls' (`settle`), and this machine's speed for a profile (`speed`, `history`) is read
off its latest calls, for the turn estimates, the call time limits and the Models page.
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from django.conf import settings
from django.db.models import Count, Sum

from agents.models import LLMCall
from agents.providers.base import ChatMessage, LLMProvider, Usage
from agents.providers.remote import scrub
from conversations.models import Message

log = logging.getLogger(__name__)

Outcome = LLMCall.Outcome


@dataclass
class CallTrace:
    """One call being made; `finish` records it."""

    session_id: int
    profile: str
    model: str
    messages: list[ChatMessage]
    schema: str = ""
    purpose: str = ""
    message_id: int | None = None
    started: float = field(default_factory=time.monotonic)
    tokens_before: tuple[int, int, int] = (0, 0, 0)
    first_piece: float | None = None
    pk: int | None = None

    def piece_came(self) -> None:
        """Note the first piece of the reply: the wait and the prompt reading end there."""
        if self.first_piece is None:
            self.first_piece = time.monotonic()

    def finish(self, outcome: str, output: str, usage: Usage, note: str = "") -> None:
        row = record_call(self, outcome=outcome, output=output, usage=usage, note=note)
        if row is not None:
            _counted_by(usage).append(row.pk)


def begin(
    session_id: int,
    provider: LLMProvider,
    messages: list[ChatMessage],
    usage: Usage,
    *,
    schema: type[Any] | None = None,
    purpose: str = "",
    message_id: int | None = None,
) -> CallTrace:
    """Note the start of a call: its time, and the tokens counted so far (a turn's usage keeps
    counting across its calls, so each call's share is the difference)."""
    return CallTrace(
        session_id=session_id,
        profile=provider.profile,
        model=provider.model_name,
        messages=list(messages),
        schema=schema.__name__ if schema is not None else "",
        purpose=purpose[:80],
        message_id=message_id,
        tokens_before=(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens),
    )


def record_call(
    call: CallTrace, *, outcome: str, output: str, usage: Usage, note: str = ""
) -> LLMCall | None:
    """The one recording function. A trace that cannot be written (the session was deleted
    mid-call) is logged and dropped: it never fails the call it describes."""
    prompt, output, truncated = bounded(
        # A configured API key in an uploaded file would reach the prompt: not the trace.
        [{"role": m.role, "content": scrub(m.content)} for m in call.messages],
        scrub(output),
        settings.PLANAGENTS_TRACE_MAX_CHARS,
    )
    before_prompt, before_completion, before_cached = call.tokens_before
    try:
        row = LLMCall.objects.create(
            session_id=call.session_id,
            message_id=call.message_id,
            purpose=call.purpose,
            profile=call.profile[:50],
            model=call.model[:100],
            schema=call.schema[:80],
            prompt=prompt,
            output=output,
            outcome=outcome,
            note=note[:2000],
            prompt_tokens=max(0, usage.prompt_tokens - before_prompt),
            completion_tokens=max(0, usage.completion_tokens - before_completion),
            cached_tokens=max(0, usage.cached_tokens - before_cached),
            duration_ms=int((time.monotonic() - call.started) * 1000),
            first_piece_ms=(
                int((call.first_piece - call.started) * 1000)
                if call.first_piece is not None
                else None
            ),
            truncated=truncated,
        )
    except Exception:
        log.exception("could not record an LLM call of session %s", call.session_id)
        return None
    call.pk = row.pk
    return row


# The records of the calls each Usage counted, so a message written after its calls (an
# evidence plan, an objection check: calls outside any message) can take them as its own.
_records: dict[int, list[int]] = {}


def _counted_by(usage: Usage) -> list[int]:
    key = id(usage)
    if key not in _records:
        _records[key] = []
        weakref.finalize(usage, _records.pop, key, None)
    return _records[key]


def settle(message: Message, usage: Usage | None = None) -> bool:
    """Set `message`'s tokens and time from the records of its calls: the one source of the
    figures the page shows beside a message, whether it finished or was interrupted. Calls
    counted by `usage` that were made before the message existed become its own first. False
    when the message has no recorded call (its figures are left as they are)."""
    if usage is not None:
        waiting = _records.get(id(usage), [])
        if waiting:
            LLMCall.objects.filter(pk__in=waiting, message__isnull=True).update(message=message)
    totals = LLMCall.objects.filter(message_id=message.pk).aggregate(
        calls=Count("pk"),
        prompt=Sum("prompt_tokens"),
        completion=Sum("completion_tokens"),
        ms=Sum("duration_ms"),
    )
    if not totals["calls"]:
        return False
    message.prompt_tokens = totals["prompt"] or 0
    message.completion_tokens = totals["completion"] or 0
    message.latency_ms = totals["ms"] or 0
    return True


# ---------------------------------------------------------------- this machine's speed

SPEED_SAMPLE = 12
"""The latest calls of a profile its current speed is the median of."""
_MIN_READ = 32  # fewer new prompt tokens than this say more about overhead than speed
_MIN_WRITTEN = 8


@dataclass(frozen=True)
class Speed:
    """How fast a profile read prompts and wrote replies on this machine lately: the medians
    over its latest recorded calls (tokens per second), and how many calls each rests on."""

    read: float | None
    write: float | None
    read_calls: int
    write_calls: int

    def seconds(self, prompt_tokens: int, reply_tokens: int) -> float | None:
        """About how long a call reading `prompt_tokens` and writing `reply_tokens` takes at
        this speed (waiting for a free slot aside); None while either speed is unmeasured."""
        if not self.read or not self.write:
            return None
        return prompt_tokens / self.read + reply_tokens / self.write


def speed(profile: str) -> Speed:
    """`profile`'s reading and writing speed on this machine, from the trace. Reading: the new
    (uncached) prompt tokens over the time to the first piece, which includes any wait for a
    slot, so it errs slow; writing: the pieces after the first over the time after it."""
    rows = (
        LLMCall.objects.filter(profile=profile, first_piece_ms__isnull=False)
        .exclude(outcome__in=[Outcome.ERROR, Outcome.RETRIED])
        .order_by("-pk")
        .values_list("prompt_tokens", "cached_tokens", "completion_tokens", "duration_ms",
                     "first_piece_ms")[:SPEED_SAMPLE]
    )  # fmt: skip
    reads: list[float] = []
    writes: list[float] = []
    for prompt, cached, written, total_ms, first in rows:
        first_ms = first or 0
        new = prompt - cached
        if new >= _MIN_READ:
            reads.append(new * 1000 / max(first_ms, 1))
        if written >= _MIN_WRITTEN and total_ms > first_ms:
            writes.append((written - 1) * 1000 / (total_ms - first_ms))
    return Speed(
        read=median(reads) if reads else None,
        write=median(writes) if writes else None,
        read_calls=len(reads),
        write_calls=len(writes),
    )


SESSION_SAMPLE = 20
"""The latest finished sessions a profile's session time is the median of."""


@dataclass(frozen=True)
class History:
    """What this machine measured of a profile, for the Models page: its current speed and,
    over its latest completed planning sessions run on it alone, the median time its calls
    took per session (the model's time, not the human's)."""

    speed: Speed
    calls: int
    session_seconds: float | None
    sessions: int


def history(profile: str) -> History:
    calls = LLMCall.objects.filter(profile=profile)
    totals = list(
        calls.filter(
            session__status="completed",
            session__mode="planning",
            session__agent_a_profile=profile,
            session__agent_b_profile=profile,
        )
        .values("session_id")
        .annotate(ms=Sum("duration_ms"))
        .order_by("-session_id")
        .values_list("ms", flat=True)[:SESSION_SAMPLE]
    )
    return History(
        speed=speed(profile),
        calls=calls.count(),
        session_seconds=median(totals) / 1000 if totals else None,
        sessions=len(totals),
    )


def relabel(call: CallTrace | None, outcome: str, note: str) -> None:
    """Say afterwards that a finished call's reply was not used as it was (an echo redone,
    invalid JSON repaired)."""
    if call is not None and call.pk is not None:
        LLMCall.objects.filter(pk=call.pk).update(outcome=outcome, note=note[:2000])


def bounded(
    prompt: list[dict[str, str]], output: str, limit: int
) -> tuple[list[dict[str, str]], str, bool]:
    """The prompt and output cut to `limit` characters together: the longest part is cut in
    its middle first (its start and its end are what a reader looks for), until it fits."""
    texts = [m["content"] for m in prompt] + [output]
    total = sum(len(t) for t in texts)
    if total <= limit:
        return prompt, output, False
    # Find the cap c such that sum(min(len, c)) fits: everything shorter stays whole.
    lengths = sorted(len(t) for t in texts)
    left, cap = limit, 0
    for index, length in enumerate(lengths):
        share = left // (len(lengths) - index)
        if length <= share:
            left -= length
            continue
        cap = share
        break
    cut = [_cut_middle(t, cap) for t in texts]
    return [{**m, "content": c} for m, c in zip(prompt, cut, strict=False)], cut[-1], True


def _cut_middle(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    marker = f"\n[… {len(text) - cap:,} characters cut from the trace …]\n"
    keep = max(0, cap - len(marker))
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def calls_for(session_id: int) -> list[LLMCall]:
    """A session's calls in the order they ended."""
    return list(LLMCall.objects.filter(session_id=session_id).order_by("pk"))


PANEL_CALLS = 60
"""Most calls the session page's Trace panel lists (the latest); older ones are counted."""
PANEL_CHARS = 4000
"""Most characters of each prompt message and output shown inline; the rest is a click away."""


def panel(session_id: int) -> dict[str, Any]:
    """The Trace panel of the session page: the latest calls, grouped under the message they
    wrote into, each part cut to PANEL_CHARS (the whole call is the call's own text page)."""
    calls = LLMCall.objects.filter(session_id=session_id)
    total = calls.count()
    latest = list(calls.select_related("message").order_by("-pk")[:PANEL_CALLS])[::-1]
    groups: list[dict[str, Any]] = []
    for call in latest:
        seq = call.message.seq if call.message else None
        if not groups or groups[-1]["seq"] != seq or seq is None:
            groups.append({"seq": seq, "purpose": call.purpose, "calls": []})
        groups[-1]["calls"].append(
            {
                "call": call,
                "prompt": [
                    {"role": m.get("role", ""), **_preview(str(m.get("content", "")))}
                    for m in call.prompt
                    if isinstance(m, dict)
                ],
                "output": _preview(call.output),
            }
        )
    return {"groups": groups, "total": total, "shown": len(latest)}


def _preview(text: str) -> dict[str, Any]:
    return {"text": text[:PANEL_CHARS], "cut": max(0, len(text) - PANEL_CHARS)}


def as_text(call: LLMCall) -> str:
    """One call as plain text: what its text page serves (never HTML)."""
    head = [
        f"LLM call {call.pk} of session {call.session_id}",
        f"purpose: {call.purpose or '-'}   schema: {call.schema or '(free text)'}",
        f"profile: {call.profile}   model: {call.model}",
        f"outcome: {call.get_outcome_display()}" + (f" - {call.note}" if call.note else ""),
        f"tokens: {call.prompt_tokens} read ({call.cached_tokens} cached), "
        f"{call.completion_tokens} written   time: {call.duration_ms} ms",
    ]
    if call.truncated:
        head.append("(cut to the stored size: PLANAGENTS_TRACE_MAX_CHARS characters per call)")
    parts = ["\n".join(head)]
    for index, message in enumerate(call.prompt, 1):
        if isinstance(message, dict):
            parts.append(
                f"===== prompt {index}: {message.get('role', '')} =====\n{message.get('content', '')}"
            )
    parts.append(f"===== output =====\n{call.output}")
    return "\n\n".join(parts) + "\n"
