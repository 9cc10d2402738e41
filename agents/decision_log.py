"""The disagreements behind a plan, read from the session's own messages: what Agent A proposed,
what Agent B objected, what the verification pass made of each objection (keep / update /
discard, stored on its "verify" message) and what the human asked to change. Nothing here is
written by a model at finalize time: each row points back at messages the human saw.

Only real objections are rows (agents.objections): B's apology, refusal, question back, praise
or restatement of the proposal is none, even where an older verification pass judged it. A
review with no real objection is one row saying "no objection raised", never a kept objection.

The verification pass does not always run (no evidence). B's objections still count then: each
is a row, resolved by what Agent A's next proposal (or the plan) did, where code can tell — it
adds or drops a file the objection names (changed), or it is the same proposal again (dropped)
— and "open — not verified" otherwise.

A human's note is "changed" only when Agent A's next proposal (or the plan) took it up, as far
as code can tell: it differs from the proposal before the note in its files or steps, and it
newly mentions a word the note uses. Otherwise the row says "note not applied"."""

from __future__ import annotations

import re
from typing import Any

from agents.investigation.evidence import Evidence
from agents.objections import NO_OBJECTION, is_real, objections
from conversations.models import Message, PlanningSession
from rag.paths import find_citations, tidy
from rag.vietnamese import fold

RESOLUTION = {"keep": "kept", "update": "changed", "discard": "dropped"}
"""A verdict as the Decisions table says it: the objection kept, changed by the check, dropped."""
CONTROL = ("Stopped the session.", "Approved the proposal.", "Write the plan", "Regenerate ")
"""Buttons the human pressed, recorded as messages: not decisions."""
OPEN = "open — not verified"
"""An objection nobody checked and whose fate the next proposal does not show."""
NOT_APPLIED = "note not applied"
"""A human's note that the next proposal (or the plan) shows no sign of."""
REVIEW_NODES = ("", "review_and_refine")
"""Agent B's critiques: a debate turn, or the planning workflow's review."""
ANSWER_NODES = ("", "propose_changes", "finalize_plan", "debate_plan")
"""Agent A's replies that answer a critique: the next proposal, or the plan itself."""
CELL_CHARS = 200
_EVIDENCE = re.compile(r"\[E\d{1,4}(?:\s*,\s*E\d{1,4})*\]")
_PATHISH = re.compile(r"[\w.+@~/-]{1,300}")
_WORD = re.compile(r"\w{2,40}")


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
    """One row per real objection, per review that raised none, and per change the human asked
    for, in the order they happened, each with the proposal it answered."""
    rows: list[dict[str, Any]] = []
    proposed = ""
    proposal: Message | None = None
    said = session.task
    pending: list[tuple[dict[str, Any], str]] = []  # B's unchecked objections (row, text)
    reviewed: list[dict[str, Any]] = []  # the rows of B's latest review
    notes: list[tuple[dict[str, Any], str, Message | None]] = []  # (row, note, proposal then)
    cited: dict[int, str] = {}  # what the investigation showed, by [E#], as the review saw it
    first_user = True
    messages = session.messages.filter(state=Message.State.COMPLETE).order_by("seq")
    for m in messages:
        found_here = m.data.get("evidence") if isinstance(m.data, dict) else None
        if m.role == Message.Role.SYSTEM and isinstance(found_here, dict):
            item = Evidence.from_dict(found_here)
            cited[item.number] = item.said()
        elif m.role == Message.Role.AGENT and m.agent == "A" and m.node in ANSWER_NODES:
            for row, objection in pending:
                row.update(_answered(objection, proposal, m))
            for row, note, before in notes:
                row["resolution"] = "changed" if _took_up(note, before, m) else NOT_APPLIED
            pending, notes = [], []
            if m.node in ("", "propose_changes"):
                proposed, proposal = _proposal_of(m), m
        elif m.role == Message.Role.AGENT and m.agent == "B" and m.node in REVIEW_NODES:
            said = f"{proposal.content if proposal is not None else ''}\n{session.task}"
            found = objections(m.content, restating=said, cited=cited)
            pending = [(_objection_row(text, proposed), text) for text in found]
            reviewed = [row for row, _ in pending] or [_no_objection_row(proposed)]
            rows += reviewed
        elif m.role == Message.Role.SYSTEM and m.node == "verify":
            # The verification pass judged this review's objections: its verdicts are the rows,
            # those of real objections (an older pass judged apologies and restatements too).
            rows = [r for r in rows if not any(r is row for row in reviewed)]
            pending = []
            verdicts = (m.data or {}).get("verdicts", [])
            real = [v for v in verdicts if is_real(str(v.get("objection", "")), said, cited=cited)]
            reviewed = [_verdict_row(verdict, proposed) for verdict in real]
            rows += reviewed or [_no_objection_row(proposed)]
        elif m.role == Message.Role.USER:
            if first_user:  # the task itself
                first_user = False
                continue
            text = m.content.strip()
            if not text or text.startswith(CONTROL):
                continue
            text = text.removeprefix("Requested changes: ")
            row = {
                "decision": _short(text),
                "proposed": proposed or "—",
                "objection": "—",
                "resolution": NOT_APPLIED,
                "by": "human",
                "evidence": evidence_in(text),
            }
            rows.append(row)
            notes.append((row, text, proposal))
    return _without_repeats(rows)


def _without_repeats(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same "no objection raised" row for the same proposal once: two reviews of one
    proposal that both raised nothing say one thing."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for row in rows:
        if row["objection"] == NO_OBJECTION:
            key = (row["proposed"], row["objection"])
            if key in seen:
                continue
            seen.add(key)
        kept.append(row)
    return kept


def _no_objection_row(proposed: str) -> dict[str, Any]:
    return {
        "decision": "Proposal stands",
        "proposed": proposed or "—",
        "objection": NO_OBJECTION,
        "resolution": "—",
        "by": "Agent B",
        "evidence": [],
    }


def _steps(message: Message | None) -> list[tuple[str, str]] | None:
    data = message.data if message is not None and isinstance(message.data, dict) else {}
    steps = data.get("steps")
    if not isinstance(steps, list):
        return None
    return [
        (str(s.get("title", "")), str(s.get("detail", ""))) for s in steps if isinstance(s, dict)
    ]


def _took_up(note: str, before: Message | None, after: Message) -> bool:
    """Whether `after` (Agent A's next proposal, or the plan) answers a human's `note` made
    about the proposal `before`: it differs in its files or steps (in its text, for prose),
    and it newly mentions a word the note uses ("Count per IP" → "… per IP address")."""
    old_text = fold(before.content) if before is not None else ""
    new_text = fold(after.content)
    if before is not None:
        old_files, new_files = _files(before), _files(after)
        if old_files is not None and new_files is not None:
            differs = old_files != new_files or _steps(before) != _steps(after)
        else:
            differs = " ".join(old_text.split()) != " ".join(new_text.split())
        if not differs:
            return False
    old_words, new_words = set(_WORD.findall(old_text)), set(_WORD.findall(new_text))
    return any(w in new_words and w not in old_words for w in _WORD.findall(fold(note)))


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
