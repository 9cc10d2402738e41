"""The disagreements behind a plan, read from the session's own messages: what Agent A proposed,
what Agent B objected, what the verification pass made of each objection (keep / update /
discard, stored on its "verify" message) and what the human asked to change. Nothing here is
written by a model at finalize time: each row points back at messages the human saw.

The verification pass does not always run (no evidence, or nothing it could cut into
objections). B's objections still count then: each is a row, resolved by what Agent A's next
proposal (or the plan) did, where code can tell — it adds or drops a file the objection names
(changed), or it is the same proposal again (dropped) — and "open — not verified" otherwise."""

from __future__ import annotations

import re
from typing import Any

from agents.verification import objections
from conversations.models import Message, PlanningSession
from rag.paths import find_citations, tidy

RESOLUTION = {"keep": "kept", "update": "changed", "discard": "dropped"}
"""A verdict as the Decisions table says it: the objection kept, changed by the check, dropped."""
CONTROL = ("Stopped the session.", "Approved the proposal.", "Write the plan", "Regenerate ")
"""Buttons the human pressed, recorded as messages: not decisions."""
OPEN = "open — not verified"
"""An objection nobody checked and whose fate the next proposal does not show."""
REVIEW_NODES = ("", "review_and_refine")
"""Agent B's critiques: a debate turn, or the planning workflow's review."""
ANSWER_NODES = ("", "propose_changes", "finalize_plan", "debate_plan")
"""Agent A's replies that answer a critique: the next proposal, or the plan itself."""
CELL_CHARS = 200
_EVIDENCE = re.compile(r"\[E\d{1,4}(?:\s*,\s*E\d{1,4})*\]")
_PATHISH = re.compile(r"[\w.+@~/-]{1,300}")


def evidence_in(*texts: str) -> list[str]:
    """The evidence labels ([E2]) and `path:line` citations the texts rest on, each once."""
    found: dict[str, None] = {}
    for text in texts:
        for match in _EVIDENCE.finditer(text or ""):
            for label in match[0].strip("[]").split(","):
                found.setdefault(f"[{label.strip()}]", None)
        for c in find_citations(text or ""):
            span = f"{c.path}:{c.start}" + (f"-{c.end}" if c.end != c.start else "")
            found.setdefault(span, None)
    return list(found)


def _short(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1].rstrip() + "…"


def _proposal_of(message: Message) -> str:
    """What an Agent A message proposed, in one short cell: its summary when it is structured."""
    data = message.data if isinstance(message.data, dict) else {}
    summary = data.get("summary")
    if isinstance(summary, str) and summary.strip():
        return _short(summary)
    first = next((ln for ln in message.content.splitlines() if ln.strip()), "")
    return _short(first.lstrip("#*- ").replace("**Proposal.**", ""))


def decision_log(session: PlanningSession) -> list[dict[str, Any]]:
    """One row per objection and per change the human asked for, in the order they happened,
    each with the proposal it answered."""
    rows: list[dict[str, Any]] = []
    proposed = ""
    proposal: Message | None = None
    pending: list[tuple[dict[str, Any], str]] = []  # B's unchecked objections (row, text)
    first_user = True
    messages = session.messages.filter(state=Message.State.COMPLETE).order_by("seq")
    for m in messages:
        if m.role == Message.Role.AGENT and m.agent == "A" and m.node in ANSWER_NODES:
            for row, objection in pending:
                row.update(_answered(objection, proposal, m))
            pending = []
            if m.node in ("", "propose_changes"):
                proposed, proposal = _proposal_of(m), m
        elif m.role == Message.Role.AGENT and m.agent == "B" and m.node in REVIEW_NODES:
            said = f"{proposal.content if proposal is not None else ''}\n{session.task}"
            pending = [
                (_objection_row(text, proposed), text)
                for text in objections(m.content, restating=said)
            ]
            rows += [row for row, _ in pending]
        elif m.role == Message.Role.SYSTEM and m.node == "verify":
            # The verification pass judged this review's objections: its verdicts are the rows.
            rows = [r for r in rows if not any(r is row for row, _ in pending)]
            pending = []
            for verdict in (m.data or {}).get("verdicts", []):
                rows.append(_verdict_row(verdict, proposed))
        elif m.role == Message.Role.USER:
            if first_user:  # the task itself
                first_user = False
                continue
            text = m.content.strip()
            if not text or text.startswith(CONTROL):
                continue
            text = text.removeprefix("Requested changes: ")
            rows.append(
                {
                    "decision": _short(text),
                    "proposed": proposed or "—",
                    "objection": "—",
                    "resolution": "changed",
                    "by": "human",
                    "evidence": evidence_in(text),
                }
            )
    return rows


def _objection_row(objection: str, proposed: str) -> dict[str, Any]:
    return {
        "decision": "Unresolved",
        "proposed": proposed or "—",
        "objection": _short(objection),
        "resolution": OPEN,
        "by": "—",
        "evidence": evidence_in(objection),
    }


def _files(message: Message | None) -> set[str] | None:
    """The paths a structured proposal or plan touches; None when the reply is prose."""
    data = message.data if message is not None and isinstance(message.data, dict) else {}
    if not isinstance(data.get("files"), list):
        return None
    found = {tidy(str(f.get("path", ""))) for f in data["files"] if isinstance(f, dict)}
    new = data.get("new_files")
    if isinstance(new, list):  # a schema held to real paths lists created files apart
        found |= {tidy(str(f.get("path", ""))) for f in new if isinstance(f, dict)}
    return found - {""}


def _same_proposal(before: Message, after: Message) -> bool:
    keys = ("summary", "steps", "files", "new_files")
    old, new = before.data or {}, after.data or {}
    return old.get("files") is not None and all(old.get(k) == new.get(k) for k in keys)


def _answered(objection: str, before: Message | None, answer: Message) -> dict[str, Any]:
    """What Agent A's `answer` did about an unchecked objection to the proposal `before`, as
    far as code can tell: a file the objection names added or dropped, or nothing changed."""
    old, new = _files(before), _files(answer)
    what = "the plan" if answer.node in ("finalize_plan", "debate_plan") else "the next proposal"
    if old is not None and new is not None:
        named = {tidy(t.strip(".,;:()`'\"")) for t in _PATHISH.findall(objection)}
        added, dropped = sorted(named & (new - old)), sorted(named & (old - new))
        if added or dropped:
            moves = [f"adds `{p}`" for p in added] + [f"drops `{p}`" for p in dropped]
            return {
                "decision": _short(f"Revised: {what} {', '.join(moves)}"),
                "resolution": "changed",
                "by": "Agent A",
            }
        if before is not None and what == "the next proposal" and _same_proposal(before, answer):
            return {
                "decision": "Proposal stands: the next proposal is the same",
                "resolution": "dropped",
                "by": "Agent A",
            }
    return {}


def _verdict_row(verdict: dict[str, Any], proposed: str) -> dict[str, Any]:
    kind = str(verdict.get("verdict", "keep"))
    objection = str(verdict.get("objection", ""))
    correction = str(verdict.get("correction", ""))
    reason = str(verdict.get("reason", ""))
    if kind == "discard":
        decision = "Proposal stands: " + (reason or "the evidence does not support the objection")
    elif kind == "update":
        decision = "Revise: " + correction
    else:
        decision = "Revise: " + objection
    return {
        "decision": _short(decision),
        "proposed": proposed or "—",
        "objection": _short(objection),
        "resolution": RESOLUTION.get(kind, "kept"),
        "by": "verification pass",
        "evidence": evidence_in(objection, correction, reason),
    }
