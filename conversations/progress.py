"""Where a session is and how long its current step is likely to take, for the page.

The workflow panel and the status line are built from the workflow's state table itself
(agents.workflow.NODES): a node added there gets its row here, and "Step k of n" counts those
rows. The estimate of a step is measured, never guessed: its prompt read and a reply as long as
the past ones written at this machine's current speed for the profile (the trace of its latest
calls), else the median duration of the owner's past turns of the same node on that profile."""

from __future__ import annotations

from statistics import median
from typing import Any

from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone

from agents.workflow import CHECKPOINT, COMPLETED, NODES, STOPPED
from conversations.models import Message, PlanningSession, PlanningState

ESTIMATE_SAMPLE = 20  # the latest turns a median is taken over
ANSWERED_ROUTES = ("greeting", "question")
"""agents.routing.GREETING and QUESTION: routes that end in a reply, never a plan. Spelled out
here because agents.routing reaches agents.turns, which reaches this module."""


def answered(session: PlanningSession) -> bool:
    """Whether the session answers instead of planning: routed to an instant reply or to a
    cited answer (agents.routing, agents.answers) and without a plan version. Such a session
    never enters the workflow, so the page shows no workflow panel and no plan talk."""
    route = (session.task_analysis or {}).get("route")
    return route in ANSWERED_ROUTES and not session.plans.exists()


def workflow_order() -> list[str]:
    """Every node of the workflow table in the order a session meets them, "completed" last."""
    return list(NODES)


def _stopped_at(session: PlanningSession, order: list[str]) -> str | None:
    """The step a stopped session was in: the node of its last message that has one."""
    last = (
        Message.objects.filter(session=session, node__in=order)
        .order_by("-seq")
        .values_list("node", flat=True)
        .first()
    )
    return last


def workflow_steps(session: PlanningSession, state: PlanningState | None) -> dict[str, Any]:
    """{"steps": [{node, label, who, status}], "step": k, "total": n}. The steps are the nodes
    of the workflow table in order, up to "completed", which is where they end, not a step:
    the sidebar draws one row per step and the status line says "Step k of n" with n the
    number of those rows. status is one of done, current, paused, stopped, pending; k is the
    1-based position of the step in hand (0 when none is). A session that answers instead
    of planning (`answered`) has no steps and "answered": True."""
    if answered(session):
        return {"steps": [], "step": 0, "total": 0, "answered": True}
    order = workflow_order()
    node = state.current_node if state else order[0]
    marks: dict[str, str] = {}
    if node == COMPLETED:
        marks = {n: "done" for n in order}
        at = None
    elif node == STOPPED or session.status == PlanningSession.Status.STOPPED:
        at = _stopped_at(session, order) if node == STOPPED else node
        if at is not None:
            position = order.index(at)
            marks = {n: "done" for n in order[:position]}
            marks[at] = "stopped"
    else:
        at = node if node in order else None
        if at is not None:
            position = order.index(at)
            marks = {n: "done" for n in order[:position]}
            waiting = session.status == PlanningSession.Status.AWAITING_HUMAN
            paused = session.status == PlanningSession.Status.FAILED or (
                waiting and at != CHECKPOINT
            )
            marks[at] = "paused" if paused else "current"
    steps = [
        {
            "node": n,
            "label": NODES[n].label,
            "who": NODES[n].actor,
            "status": marks.get(n, "pending"),
        }
        for n in order
        if n != COMPLETED
    ]
    nodes = [s["node"] for s in steps]
    step = nodes.index(at) + 1 if at in nodes else 0
    return {"steps": steps, "step": step, "total": len(steps)}


def estimate(session: PlanningSession, node: str, profile: str) -> dict[str, Any] | None:
    """{"seconds", "runs"}: the median duration of the owner's latest finished turns of this
    node on this profile; None before there is one to measure."""
    durations = list(
        Message.objects.filter(
            session__owner_id=session.owner_id,
            node=node,
            profile=profile,
            state=Message.State.COMPLETE,
            latency_ms__gt=0,
        )
        .order_by("-pk")
        .values_list("latency_ms", flat=True)[:ESTIMATE_SAMPLE]
    )
    if not durations:
        return None
    return {"seconds": round(median(durations) / 1000, 1), "runs": len(durations)}


def speed_estimate(
    session: PlanningSession, node: str, profile: str, prompt_tokens: int
) -> dict[str, Any] | None:
    """{"seconds", "basis": "speed", "read_per_s", "write_per_s", "reply_tokens"}: how long
    reading this prompt and writing a reply as long as the owner's past ones of this node
    (else the profile's latest calls) takes at this machine's current speed for the profile
    (agents.trace.speed: its latest recorded calls). None while that speed is unmeasured."""
    from agents.trace import speed  # agents reach conversations through progress, not back

    measured = speed(profile)
    if not measured.read or not measured.write:
        return None
    replies = list(
        Message.objects.filter(
            session__owner_id=session.owner_id, node=node, profile=profile,
            state=Message.State.COMPLETE, completion_tokens__gt=0,
        )
        .order_by("-pk")
        .values_list("completion_tokens", flat=True)[:ESTIMATE_SAMPLE]
    )  # fmt: skip
    if not replies:
        from agents.models import LLMCall

        replies = list(
            LLMCall.objects.filter(profile=profile, completion_tokens__gt=0)
            .order_by("-pk")
            .values_list("completion_tokens", flat=True)[:ESTIMATE_SAMPLE]
        )
    reply_tokens = int(median(replies)) if replies else 0
    seconds = measured.seconds(prompt_tokens, reply_tokens)
    if seconds is None:
        return None
    return {
        "seconds": round(seconds, 1),
        "basis": "speed",
        "read_per_s": round(measured.read, 1),
        "write_per_s": round(measured.write, 1),
        "reply_tokens": reply_tokens,
    }


def _call_speed(profile: str, purpose: str, prompt_tokens: int) -> dict[str, Any] | None:
    """How long a call on `profile` for `purpose` should take: this prompt read and a reply as
    long as the latest ones for the same purpose (a turn key's kind: "propose" for
    "propose:2") written, at this machine's current speed for the profile. None while either
    is unmeasured."""
    from agents.models import LLMCall
    from agents.trace import speed

    kind = purpose.split(":", 1)[0]
    replies = list(
        LLMCall.objects.filter(profile=profile, completion_tokens__gt=0)
        .filter(Q(purpose=purpose) | Q(purpose__startswith=kind + ":"))
        .order_by("-pk")
        .values_list("completion_tokens", flat=True)[:ESTIMATE_SAMPLE]
    )
    if not replies:
        return None
    measured = speed(profile)
    reply_tokens = int(median(replies))
    seconds = measured.seconds(prompt_tokens, reply_tokens)
    if seconds is None:
        return None
    return {
        "seconds": round(seconds, 1),
        "basis": "speed",
        "read_per_s": round(measured.read or 0, 1),
        "write_per_s": round(measured.write or 0, 1),
        "reply_tokens": reply_tokens,
    }


def call_estimate(profile: str, purpose: str, prompt_tokens: int) -> float | None:
    """Seconds a call should take once it starts (`_call_speed`), None while unmeasured."""
    found = _call_speed(profile, purpose, prompt_tokens)
    return None if found is None else float(found["seconds"])


def call_progress(
    profile: str, purpose: str, prompt_tokens: int, *, phase: str = "reading"
) -> dict[str, Any]:
    """A "progress" event for a call outside any message (an evidence plan, a check, a
    signal: `seq` None), so the page's status line says what the agents wait for and how long
    it should take, at this machine's current speed for the profile. Then "writing" when its
    first piece came, and "done" when it ended."""
    if phase != "reading":
        return {"type": "progress", "seq": None, "phase": phase, "purpose": purpose}
    return {
        "type": "progress",
        "seq": None,
        "purpose": purpose,
        "profile": profile,
        "phase": "reading",
        "prompt_tokens": prompt_tokens,
        "elapsed_s": 0.0,
        "estimate": _call_speed(profile, purpose, prompt_tokens),
    }


def queue_progress(
    session_id: int, message_id: int | None, profile: str, purpose: str, where: Any
) -> dict[str, Any]:
    """A "progress" event for a call waiting its turn for the local model
    (agents.model_queue.Place `where`): phase "queued", with how many calls are ahead, how
    many of them generate, and about how long until this one starts. For a turn (its
    message's seq) `where` None means it was let in: the turn is reading its prompt again."""
    seq = None
    if message_id is not None:
        message = Message.objects.filter(pk=message_id).select_related("session").first()
        if message is not None:
            if where is None:
                return turn_progress(message.session, message, phase="reading")
            seq = message.seq
    return {
        "type": "progress",
        "seq": seq,
        "purpose": purpose,
        "profile": profile,
        "phase": "queued",
        "queue": where.as_event(),
        "elapsed_s": 0.0,
    }


def approx_tokens(texts: list[str]) -> int:
    """About how many tokens a prompt is (4 characters a token: the page says "about")."""
    return sum(len(t) for t in texts) // 4


def turn_progress(
    session: PlanningSession, message: Message, *, phase: str, prompt_tokens: int | None = None
) -> dict[str, Any]:
    """A "progress" event for a turn in hand: its phase (reading the prompt, writing, redoing),
    how long it has run and how long such turns took before."""
    event: dict[str, Any] = {
        "type": "progress",
        "seq": message.seq,
        "node": message.node,
        "agent": message.agent,
        "profile": message.profile,
        "phase": phase,
        "elapsed_s": round(max(0.0, (timezone.now() - message.created_at).total_seconds()), 1),
        "estimate": None,
    }
    key = f"planagents:prompt-tokens:{message.pk}"
    loading_key = f"planagents:loading-model:{message.pk}"
    if prompt_tokens is not None:
        # The job, opening the turn, in the process that runs its model. Both are kept for a
        # page that connects mid-turn (the job and the sockets share the cache).
        loading = phase == "reading" and loads_model_first(message.profile)
        cache.set(key, prompt_tokens, 3600)
        cache.set(loading_key, loading, 3600)
    else:
        prompt_tokens = cache.get(key)
        # Asked again here: where the job runs in this process, the model may be in by now.
        loading = bool(cache.get(loading_key)) and loads_model_first(message.profile)
    if prompt_tokens is not None:
        event["prompt_tokens"] = prompt_tokens
    # At this machine's current speed for this prompt, from the first turn on; else, for a
    # turn whose prompt size is unknown here, how long such turns took.
    event["estimate"] = (
        speed_estimate(session, message.node, message.profile, prompt_tokens)
        if prompt_tokens is not None and message.profile
        else None
    ) or (estimate(session, message.node, message.profile) if message.node else None)
    stopping = (
        PlanningSession.objects.filter(pk=session.pk)
        .values_list("stop_requested", "cancel_requested")
        .first()
    )
    if stopping and any(stopping):
        event["stopping"] = "session" if stopping[0] else "reply"
    if loading and phase == "reading":
        event["loading_model"] = True
    return event


def loads_model_first(profile: str) -> bool:
    """Whether a call on `profile` loads its model before it reads the prompt: a local
    (llama.cpp) profile whose server this process has not started yet. The first step of the
    first session then says so instead of sitting silent for the seconds to minutes it takes."""
    from agents.providers import PROFILES  # agents imports conversations, not the reverse
    from agents.providers.local import is_loaded

    row = next((p for p in PROFILES if p.name == profile), None)
    return row is not None and row.backend == "llama.cpp" and not is_loaded(profile)


def current_progress(session: PlanningSession) -> dict[str, Any] | None:
    """The progress of the turn streaming now (for a page that loads or reconnects mid-turn)."""
    message = (
        Message.objects.filter(session=session, state=Message.State.STREAMING)
        .order_by("-seq")
        .first()
    )
    if message is None:
        return None
    return turn_progress(session, message, phase="writing" if message.content else "reading")


def heard_in(session_id: int, prompt: list[str]) -> list[int]:
    """Seqs of the human's messages after the task whose text reached this prompt."""
    text = "\n".join(prompt)
    rows = Message.objects.filter(session_id=session_id, role=Message.Role.USER).order_by("seq")
    seqs = []
    for seq, content in rows.values_list("seq", "content")[1:]:  # the first is the task
        note = content.strip()
        if note and note in text:
            seqs.append(seq)
    return seqs
