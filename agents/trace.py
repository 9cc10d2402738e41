"""A trace of every LLM call: the prompt messages, the raw output, the profile and model, tokens,
time and how it ended. `agents.call_policy.call` is the one place calls are made; it opens a
`CallTrace` for each call (a retry, a redo and a repair are calls of their own) and finishes it
when the call ends, however it ends.

What is stored is safe to show the session's owner: prompts are built from the task, the
human's messages and the indexed code, and withheld files (rag.secrets) never reach the index
or a prompt; a configured API key that an uploaded file still holds is scrubbed from the
stored prompt, as it is from the output (the stream the page was shown). Each call is bounded to PLANAGENTS_TRACE_MAX_CHARS characters (200,000 by
default): the middle of the longest parts is cut, and the record says it was.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from agents.models import LLMCall
from agents.providers.base import ChatMessage, LLMProvider, Usage
from agents.providers.remote import scrub

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
    pk: int | None = None

    def finish(self, outcome: str, output: str, usage: Usage, note: str = "") -> None:
        record_call(self, outcome=outcome, output=output, usage=usage, note=note)


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
            truncated=truncated,
        )
    except Exception:
        log.exception("could not record an LLM call of session %s", call.session_id)
        return None
    call.pk = row.pk
    return row


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
