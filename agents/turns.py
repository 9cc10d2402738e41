"""Run one agent turn against a provider: stream free text, or stream a structured reply that
is re-rendered as markdown while its JSON grows. Both persist through TurnStream.

A text reply that copies the message it answers, writes out a placeholder from the
instructions, refuses, or (for a review) raises no real objection to what it reviews, is redone
once with a correction appended to the prompt (agents.echoes, agents.objections); a redo no
better than the first is kept, flagged on the page. Invalid JSON gets one repair call
(agents.providers.base.structured_reply, the one repair path).

Every call is made by agents.call_policy.call (budget, time limits, retries before the first
token, trace); a turn whose call fails for good is marked interrupted here and, when the policy
says so, finished on the session's fallback profile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db.models import Q
from pydantic import BaseModel
from pydantic_core import from_json

from agents import trace
from agents.budget import TimeLimitReached, charge_tokens
from agents.call_policy import call, fallback_for, falls_back
from agents.echoes import Problem, check_reply
from agents.errors import BudgetSpent, TurnCancelled, TurnFailed
from agents.language import language_problem
from agents.objections import review_problem
from agents.providers import estimate_cost, get_provider
from agents.providers.base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    InvalidStructuredOutput,
    LLMProvider,
    ProviderError,
    ToolReply,
    ToolSpec,
    salvage,
    structured_reply,
)
from agents.runtime import SessionStopped, TurnStream, stop_requested
from conversations.models import Message, PlanningSession
from conversations.progress import approx_tokens, heard_in, turn_progress
from conversations.store import add_message
from planagents import shutdown
from planagents.streaming import publish

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

STOP_CHECK_SECONDS = 0.5
FALLBACK_SUFFIX = ":fallback"
REPAIR_REASON = "its JSON did not fit the form asked for, so the model repairs it"
REDO_REASONS = {
    "echo": "it copied the message it answers",
    "placeholder": "it wrote out a placeholder from the instructions",
    "refusal": "it refused instead of answering",
    "no_objection": "it raised no objection to the proposal",
    "language": "it was not in the language of the task",
}


@dataclass
class Agent:
    """One side of the conversation: which letter, which profile."""

    letter: str  # "A" or "B"
    profile: str


def agent_for(session: PlanningSession, letter: str) -> Agent:
    return Agent(letter, session.agent_a_profile if letter == "A" else session.agent_b_profile)


def _never() -> bool:
    return False


def _stop_check(session_id: int, *, reply: bool = True) -> Callable[[], bool]:
    """A poll of the session's Stop (and, with `reply`, its Stop reply), at most every
    STOP_CHECK_SECONDS: a provider calls it for every piece it writes. Raises
    planagents.shutdown.ShuttingDown once the process is stopping."""
    last = 0.0
    stopped = False
    wanted = Q(stop_requested=True) | Q(cancel_requested=True) if reply else Q(stop_requested=True)

    def should_stop() -> bool:
        nonlocal last, stopped
        # A server that is stopping parks the turn at once, also while its prompt is read, its
        # call waits in the model's line, or it is a call outside any message.
        shutdown.check()
        now = time.monotonic()
        if not stopped and now - last >= STOP_CHECK_SECONDS:
            last = now
            stopped = PlanningSession.objects.filter(pk=session_id).filter(wanted).exists()
        return stopped

    return should_stop


# ---------------------------------------------------------------- replies outside a message


def structured_call(
    session: PlanningSession,
    provider: LLMProvider,
    messages: list[ChatMessage],
    schema: type[T],
    options: CallOptions,
) -> T:
    """A structured reply outside any message (an evidence plan, an objection check, a debate
    signal): budget, retries, one repair. Stop lands while it is written: the session stops,
    rather than the cut reply being taken for an unusable one; Stop reply gives the human the
    floor (the page offers it whenever the agents work, so it stops this call too)."""
    if options.should_stop is None:
        options.should_stop = _stop_check(session.pk)
    should_stop = options.should_stop
    traces: list[trace.CallTrace] = []

    def complete(prompt: list[ChatMessage]) -> str:
        return "".join(
            call(
                session.pk,
                provider,
                prompt,
                options,
                should_stop,
                schema=schema,
                purpose=schema.__name__,
                traces=traces,
            )
        )

    try:
        return repaired(messages, schema, complete, traces)
    except GenerationCancelled:
        if stop_requested(session.pk):
            raise SessionStopped from None
        if PlanningSession.objects.filter(pk=session.pk, cancel_requested=True).update(
            cancel_requested=False
        ):
            raise TurnCancelled(
                f"the model's reply ({schema.__name__}) was stopped by you; none of it is used"
            ) from None
        raise
    finally:
        charge_tokens(session.pk, options.usage)


def tool_call(
    session: PlanningSession,
    provider: LLMProvider,
    messages: list[ChatMessage],
    tools: list[ToolSpec],
    options: CallOptions,
    *,
    purpose: str = "tool calls",
) -> ToolReply:
    """The model's native tool calls, offered `tools` (provider.native_tools), outside any
    message: budget, retries and trace as for structured_call."""
    should_stop = options.should_stop or _never
    try:
        pieces = call(session.pk, provider, messages, options, should_stop, purpose=purpose,
                      tools=tools)  # fmt: skip
        return ToolReply.from_json("".join(pieces))
    finally:
        charge_tokens(session.pk, options.usage)


def repaired(
    messages: list[ChatMessage],
    schema: type[T],
    complete: Callable[[list[ChatMessage]], str],
    traces: list[trace.CallTrace],
) -> T:
    """structured_reply, with the trace saying which replies were invalid JSON and which were
    cut off at their token limit and kept in part."""
    calls = len(traces)

    def traced(prompt: list[ChatMessage]) -> str:
        if len(traces) > calls:  # the repair call: the previous reply did not validate
            trace.relabel(traces[-1], trace.Outcome.REPAIRED, "invalid JSON, shown to the model")
        return complete(prompt)

    def salvaged(lost: str) -> None:
        trace.relabel(traces[-1] if traces else None, trace.Outcome.CUT_OFF, lost)

    try:
        return structured_reply(messages, schema, traced, salvaged)
    except InvalidStructuredOutput as exc:
        trace.relabel(traces[-1] if traces else None, trace.Outcome.ERROR, exc.problems)
        raise


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
    prompt: list[ChatMessage] | None = None,
) -> Message:
    """Open the turn's message, let `write` stream into it, and finish it with accounting.
    `write` returns the fields to finish with (content, data)."""
    done = _finished(session.pk, turn_key)
    if done is not None:
        return done
    fallback = fallback_for(session, agent.profile) if allow_fallback else None
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
    texts = [m.content for m in prompt or []]
    assert stream.message is not None
    # Until the first token the box is empty for as long as the model reads the prompt: say so.
    publish(
        session.pk,
        turn_progress(session, stream.message, phase="reading", prompt_tokens=approx_tokens(texts)),
    )
    should_stop = _stop_check(session.pk) if stoppable else _never
    options = CallOptions(should_stop=should_stop if stoppable else None)
    try:
        fields = write(provider, stream, options, should_stop)
    except GenerationCancelled:
        raise _cancelled(session, agent, stream) from None
    except TimeLimitReached as exc:
        _tag(exc, kept=_keep_cut(stream, exc, _whose(stream_fields), f"Stopped: {exc}."))
        raise exc from None
    except BudgetSpent as exc:
        stream.interrupt("Paused: the session's LLM budget is spent.")
        stream.retire()
        raise exc from None
    except ProviderError as exc:
        if fallback and falls_back(exc, streamed=bool(stream.content.strip())):
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
                prompt=prompt,
            )
        failed = TurnFailed(str(exc))
        _tag(failed, kept=_keep_cut(stream, exc, _whose(stream_fields), f"Interrupted: {exc}"))
        raise failed from None
    finally:
        charge_tokens(session.pk, options.usage)
    usage = options.usage
    if prompt is not None:
        fields.setdefault("heard", heard_in(session.pk, texts))
    return stream.finish(
        usage=usage,
        cost_usd=estimate_cost(agent.profile, usage.prompt_tokens, usage.completion_tokens),
        **fields,
    )


# ---------------------------------------------------------------- a turn cut off, resumed

CUT = "cut"
"""Message.data key of an interrupted turn that Continue resumes: `text` (a free-text reply as
far as it was written) or `json` (a structured reply's finished parts, `salvage`d)."""


def _tag(exc: BaseException, **facts: Any) -> None:
    """Attach what a turn kept (`kept`, `cut`) to the exception that ends it, whatever its
    class: a provider's error, a time limit, the turn's own TurnFailed."""
    vars(exc).update(facts)


def kept_by(exc: BaseException) -> str:
    """What a turn that failed with `exc` kept for Continue, in a sentence for the page; ""
    when the exception did not come out of a turn (a call outside any message, a crash)."""
    return str(getattr(exc, "kept", ""))


def _whose(stream_fields: dict[str, Any]) -> str:
    letter = stream_fields.get("agent")
    return f"Agent {letter}'s reply" if letter else "the reply"


def words(text: str) -> int:
    return len(text.split())


def _keep_cut(stream: TurnStream, exc: BaseException, whose: str, note: str) -> str:
    """Mark the turn interrupted with `note` and keep what it wrote for Continue: the text of
    a free-text reply (Continue writes on from it), or the finished parts of a structured one
    (`exc.cut`, set by structured_turn; Continue takes them as its result). A structured reply
    with nothing finished frees its key instead, so Continue writes it anew below this one."""
    assert stream.message is not None
    cut: dict[str, Any] | None = getattr(exc, "cut", None)
    if cut is None:  # a free-text turn: everything shown is its reply
        text = stream.content.strip()
        cut = {"text": stream.content} if text else {}
        kept = (
            f"Kept: the first {words(text):,} words of {whose}; Continue goes on from there."
            if text
            else f"Nothing of {whose} was written yet; Continue writes it from the start."
        )
    else:
        kept = str(getattr(exc, "kept", ""))
    stream.interrupt(note)
    if cut:
        data = {**(stream.message.data or {}), CUT: cut}
        Message.objects.filter(pk=stream.message.pk).update(data=data)
        stream.message.data = data
    else:
        stream.retire()
    return kept


def _cut_of(stream: TurnStream) -> dict[str, Any]:
    """What an earlier run of this turn kept when it was cut off (see _keep_cut)."""
    assert stream.message is not None
    data = stream.message.data if isinstance(stream.message.data, dict) else {}
    cut = data.get(CUT)
    return cut if isinstance(cut, dict) else {}


def _note(session: PlanningSession, text: str, *, node: str = "") -> None:

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
    answering: str = "",
    answering_label: str = "the other agent's message",
    reviewing: str = "",
) -> Message:
    """Stream a free-text reply into a message (or return the one a previous run finished).
    Stoppable turns end early when the human presses Stop; the stop summary itself is not.
    `answering` is the message this reply answers (labelled `answering_label` for the model):
    a reply that copies it, holds a literal placeholder or refuses is redone once. `reviewing`
    is what the reply reviews (the proposal and the task, without the request's own words:
    "which tests it forgets" would make "Add a test." say nothing new); a review that raises
    no real objection to it (agents.objections) is redone once too."""

    def problem_of(text: str) -> Problem | None:
        found = check_reply(text, answering, answering_label)
        found = found or language_problem(text, session.language)
        return found or (review_problem(text, reviewing) if reviewing else None)

    def write(
        provider: LLMProvider,
        stream: TurnStream,
        options: CallOptions,
        should_stop: Callable[[], bool],
    ) -> dict[str, Any]:
        options.max_tokens = max_tokens
        discarded: list[dict[str, str]] = []

        traces: list[trace.CallTrace] = []

        def complete(prompt: list[ChatMessage]) -> str:
            return stream.pump(
                call(
                    session.pk,
                    provider,
                    prompt,
                    options,
                    should_stop,
                    traces=traces,
                    **_traced_in(stream),
                )
            )

        begun = str(_cut_of(stream).get("text", ""))
        continued = False
        if begun:
            text, continued = _resume(stream, begun, messages, complete, options, provider.prefills)
        else:
            text = complete(messages)
        problem = problem_of(text)
        if problem is not None:
            log.info(
                "session %s, turn %s: redoing a reply (%s)", session.pk, turn_key, problem.kind
            )
            trace.relabel(traces[-1], trace.Outcome.REDONE, problem.kind)
            # The redo replaces what was shown; the page keeps the discarded text, labelled.
            reason = (
                f"it copied {answering_label}"
                if problem.kind == "echo"
                else REDO_REASONS.get(problem.kind, problem.kind)
            )
            discarded.append({"reason": reason, "text": text})
            restarted(session, stream, discarded[-1]["reason"])
            stream.show("")
            # The prompt as it was first (a prompt cache still holds it), then the bad reply as
            # the model's own turn, so the correction is about something it can see, last.
            redo = [
                *messages,
                ChatMessage("assistant", text[:4000]),
                ChatMessage("user", problem.correction),
            ]
            text = complete(redo)
            problem = problem_of(text)
        fields: dict[str, Any] = {"content": text.strip() or "(no reply)", "data": {}}
        if problem is not None:
            fields["content"] += f"\n\n_{problem.note}_"
            fields["data"] = {"flags": [problem.kind]}
        if discarded:
            fields["data"] = {**fields["data"], "discarded": discarded}
        if continued and not discarded:
            # The record of where the earlier run stopped; the page's text reads as one reply.
            fields["data"] = {**fields["data"], "resumed_after_words": words(begun)}
        return fields

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
        prompt=messages,
    )


GO_ON = (
    "Your reply above was cut off before its end. Write only the rest of it, starting exactly "
    "where it stops: do not repeat any of it."
)
OVERLAP_WORDS = 30
"""How far back a model asked to go on may repeat the end of what it wrote; trimmed off."""


def _resume(
    stream: TurnStream,
    begun: str,
    messages: list[ChatMessage],
    complete: Callable[[list[ChatMessage]], str],
    options: CallOptions,
    prefills: bool,
) -> tuple[str, bool]:
    """Go on with a reply an earlier run wrote up to `begun`: shown again at once, then given
    to the model as the start of its answer, so only the rest is written. A provider that
    `prefills` continues a prompt ending in its own message; any other is asked, after it, to
    write only the rest (GO_ON), and the end of `begun` it repeats anyway is trimmed. A model
    that starts over instead has its new reply kept alone, not glued after the old start.
    Returns the reply and whether it went on from `begun`."""
    stream.feed(begun)
    spent = approx_tokens([begun])
    options.max_tokens = max(64, options.max_tokens - spent)
    prompt = [*messages, ChatMessage("assistant", begun)]
    text = complete(prompt if prefills else [*prompt, ChatMessage("user", GO_ON)])
    rest = text[len(begun) :]
    said, new = begun.split(), rest.split()
    if said and new[: min(8, len(said))] == said[:8]:
        stream.show(rest.lstrip())
        return stream.content, False
    for n in range(min(OVERLAP_WORDS, len(said), len(new)), 2, -1):
        if new[:n] == said[-n:]:
            # Cut the repeated words off where they end in the text, keeping its spacing.
            at = 0
            for word in new[:n]:
                at = rest.index(word, at) + len(word)
            stream.show(begun + rest[at:])
            return stream.content, True
    return text, True


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
    stoppable: bool = True,
) -> tuple[Message, T]:
    """Stream a JSON reply constrained to `schema`, showing its markdown rendering as it grows.
    Returns the message and the validated object; invalid output gets one repair attempt.
    `stoppable=False` for a turn that runs after Stop (a debate's plan, a regenerated section):
    Stop ended the discussion, not that turn."""
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
        attempts = 0
        traces: list[trace.CallTrace] = []
        raw = ""
        kept = _cut_of(stream).get("json")
        if isinstance(kept, dict):
            # An earlier run was cut off: its finished parts are this turn's result.
            value = schema.model_validate(kept)
            note = f"_{_cut_note(stream, value)} Its finished parts are kept as written._"
            return {"content": f"{render(kept, True)}\n\n{note}", "data": kept}

        def complete(prompt: list[ChatMessage]) -> str:
            nonlocal attempts, raw
            attempts += 1
            if attempts > 1 and stream.content:
                # The repair call re-renders from nothing: label the restart, never wipe silently.
                restarted(session, stream, REPAIR_REASON)
            raw = ""
            pieces = call(
                session.pk,
                provider,
                prompt,
                options,
                should_stop,
                schema=schema,
                traces=traces,
                **_traced_in(stream),
            )
            for piece in pieces:
                raw += piece
                partial = _partial(raw)
                if partial:
                    stream.show(render(partial, False))
            return raw

        try:
            data = repaired(messages, schema, complete, traces).model_dump()
        except (TimeLimitReached, ProviderError) as exc:
            if not isinstance(exc, GenerationCancelled):
                _salvage_cut(exc, raw, schema, _whose({"agent": agent.letter}))
            raise
        return {"content": render(data, True), "data": data}

    message = _run_turn(
        session,
        agent,
        turn_key=turn_key,
        stream_fields={"agent": agent.letter, "node": node},
        stoppable=stoppable,
        write=write,
        prompt=messages,
    )
    return message, schema.model_validate(message.data)


def _salvage_cut(exc: BaseException, raw: str, schema: type[BaseModel], whose: str) -> None:
    """Tell _keep_cut what of a structured reply cut off mid-way can be kept: its finished
    items, as `salvage` keeps those of a reply cut at its token limit."""
    saved = salvage(raw, schema) if raw.strip() else None
    if saved is None:
        kept = f"Nothing of {whose} was finished enough to keep; Continue writes it from the start."
        _tag(exc, cut={}, kept=kept)
        return
    value, lost = saved
    kept = f"Kept: the finished part of {whose} ({_items(value)}); Continue takes it as written"
    _tag(exc, cut={"json": value.model_dump(), "lost": lost}, kept=f"{kept} and goes on.")


def _items(value: BaseModel) -> str:
    """'3 steps, 2 files' of a salvaged reply's lists (its other fields are whole or absent)."""
    counts = [
        f"{len(items)} {name[:-1] if len(items) == 1 and name.endswith('s') else name}"
        for name, items in value.model_dump().items()
        if isinstance(items, list) and items
    ]
    return ", ".join(counts) or "its fields written in full"


def _cut_note(stream: TurnStream, value: BaseModel) -> str:
    lost = str(_cut_of(stream).get("lost", ""))
    return f"Cut off by a failed call ({_items(value)} finished{'; ' + lost if lost else ''})."


def _traced_in(stream: TurnStream) -> dict[str, Any]:
    """How a call streaming into this turn's message is named in the trace."""
    message = stream.message
    return {
        "purpose": (message.turn_key or "") if message else "",
        "message_id": message.pk if message else None,
    }


def restarted(session: PlanningSession, stream: TurnStream, reason: str) -> None:
    """Tell the page this turn starts its text again and why, before the text is replaced."""
    stream.flush()
    assert stream.message is not None
    event = turn_progress(session, stream.message, phase="redo")
    publish(session.pk, {**event, "reason": reason})


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
