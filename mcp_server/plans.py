"""The session and plan tools' work, in plain sync functions over conversations.services: a
session is found by `get_session_for` (the web app's and the API's permission), started
through the new-session page's own form, approved, stopped and revised by the same services
the page's buttons call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from mcp.server.mcpserver.exceptions import ToolError

from agents.plan_quality import Quality
from agents.workflow import CHECKPOINT
from api import present
from conversations import export_formats, services
from conversations.forms import NewSessionForm, problems, start_from
from conversations.models import Message, Plan, PlanningSession
from conversations.store import session_state_payload
from mcp_server.codebases import ready_codebase
from mcp_server.identity import Caller, writer

Status = PlanningSession.Status


def session_for(caller: Caller, session_id: int) -> PlanningSession:
    try:
        return services.get_session_for(caller.user, int(session_id))
    except (services.SessionNotFound, ValueError):
        raise ToolError(f"No session {session_id} of yours.") from None


def start(caller: Caller, codebase_id: int, task: str, mode: str, models: list[str]) -> int:
    """Start a session as the new-session page does (its form checks the input); its id."""
    writer(caller)
    codebase = ready_codebase(caller, codebase_id)
    if len(models) > 2:
        raise ToolError("`models` names at most two profiles: Agent A's, then Agent B's.")
    default = settings.PLANAGENTS_DEFAULT_PROFILE
    a = models[0] if models else default
    b = models[1] if len(models) > 1 else a
    form = NewSessionForm(
        {
            "codebase": codebase.pk,
            "task": task,
            "mode": mode,
            "agent_a_profile": a,
            "agent_b_profile": b,
            "fallback_profile": "",
            "max_exchanges": settings.PLANAGENTS_DEBATE_EXCHANGES,
        },
        user=caller.user,
    )
    if not form.is_valid():
        raise ToolError(problems(form))
    try:
        session = start_from(form)
    except services.SessionError as exc:
        raise ToolError(str(exc)) from None
    return session.pk


@dataclass(frozen=True)
class Snapshot:
    """Where a session is, as its page's status line says it."""

    session: int
    status: str
    mode: str
    node: str
    step: int
    total: int
    line: str
    plan_version: int | None
    blocking: list[str]
    error: str
    reply: str = ""
    """The agents' last reply, once the session has ended without a plan (a greeting or a
    question is answered instead of planned)."""

    @property
    def at_checkpoint(self) -> bool:
        return self.status == Status.AWAITING_HUMAN and self.node == CHECKPOINT

    def as_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "status": self.status,
            "mode": self.mode,
            "node": self.node,
            "step": self.step,
            "total": self.total,
            "progress": self.line,
            "plan_version": self.plan_version,
            "blocking_rules": self.blocking,
            "error": self.error,
        }


def snapshot(caller: Caller, session_id: int) -> Snapshot:
    """The session's state, from the payload its page's `session.state` frame carries."""
    session = session_for(caller, session_id)
    state = session_state_payload(session)
    workflow = state.get("workflow") or {}
    step, total = int(workflow.get("step") or 0), int(workflow.get("total") or 0)
    steps = {s["node"]: s for s in workflow.get("steps") or []}
    node = state["node"] or ""
    if node in steps:
        here = steps[node]
        who = f" ({'Agent ' + here['who'] if here['who'] in 'AB' else here['who']})"
        line = f"Step {step} of {total}: {here['label']}{who if here['who'] else ''}"
    else:
        line = state["status_label"]
    progress = state.get("progress") or {}
    if progress.get("phase"):
        line += f", {progress['phase']}"
    if session.status != Status.RUNNING:
        line += f" · {session.get_status_display()}"
    blocking = [v.get("label", "") for v in (state.get("rules") or {}).get("blocking") or []]
    reply = ""
    if session.status in services.ENDED and state["plan_version"] is None:
        last = session.messages.exclude(role=Message.Role.USER).order_by("-seq").first()
        reply = last.content[:4000] if last else ""
    return Snapshot(
        session=session.pk,
        status=session.status,
        mode=session.mode,
        node=node,
        step=step,
        total=total,
        line=line,
        plan_version=state["plan_version"],
        blocking=blocking,
        error=session.error,
        reply=reply,
    )


def approve(caller: Caller, session_id: int) -> None:
    """Approve the proposal at the checkpoint, as the page's Approve button (the rules gate
    refuses one that breaks a critical rule: that needs a human's reason, on the page)."""
    try:
        services.approve(caller.user, session_id)
    except services.SessionError as exc:
        raise ToolError(str(exc)) from None


def end_debate(caller: Caller, session_id: int) -> None:
    """End a debate that handed over and have its plan written (the page's Write plan)."""
    try:
        services.stop(caller.user, session_id)
    except services.SessionError as exc:
        raise ToolError(str(exc)) from None


def revise(caller: Caller, session_id: int, instruction: str) -> None:
    """Ask for changes: a completed plan is reopened (the page's Revise) and the instruction
    sent as the change request; at the checkpoint it is the change request; when the agents
    handed over (a question, a loop) it is the human's reply."""
    writer(caller)
    session = session_for(caller, session_id)
    if not instruction.strip():
        raise ToolError("Say what to change.")
    try:
        if session.status == Status.COMPLETED:
            services.revise(caller.user, session.pk)
        if session.status == Status.RUNNING:
            raise ToolError("The agents are still working; wait for plan_status to say so.")
        services.post_user_message(caller.user, session.pk, instruction)
    except services.SessionError as exc:
        raise ToolError(str(exc)) from None


def plan_row(caller: Caller, session_id: int, version: int | None = None) -> Plan:
    session = session_for(caller, session_id)
    plans = Plan.objects.filter(session=session)
    plan = plans.filter(version=version).first() if version else plans.first()
    if plan is None:
        raise ToolError(
            f"Session {session.pk} has no plan version {version}."
            if version
            else f"Session {session.pk} has no plan yet; plan_status says where it is."
        )
    return plan


def quality_line(plan: Plan) -> str:
    data = plan.structured.get("quality") if isinstance(plan.structured, dict) else None
    if not isinstance(data, dict):
        return ""
    try:
        return Quality.from_dict(data).line()
    except (TypeError, ValueError):
        return ""


def plan_result(caller: Caller, session_id: int, version: int | None = None) -> dict[str, Any]:
    """The plan version as the API gives it (api.present.plan), with its quality line."""
    plan = plan_row(caller, session_id, version)
    row = present.plan(plan)
    row["created_at"] = row["created_at"].isoformat()
    return {
        **row,
        "quality_line": quality_line(plan),
        "uri": f"plan://{plan.session_id}/{plan.version}",
    }


def export(caller: Caller, session_id: int, version: int | None, kind: str) -> str:
    """The plan version in one of the plan page's export formats (its single-file form)."""
    fmt = export_formats.EXPORTS.get(kind)
    if fmt is None:
        raise ToolError(
            f"No format {kind!r}; there are: markdown, {', '.join(sorted(export_formats.EXPORTS))}."
        )
    return fmt.render(plan_row(caller, session_id, version))
