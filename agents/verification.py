"""Claims are checked, in two ways.

Citations: an agent message that cites evidence `[E#]` the investigation never produced, or a
`path:line` outside the file (or a file the codebase lacks), gets a short flag appended (like
the echo flag) and the count in `Message.data["citation_problems"]`. Paths are parsed by the one
citation parser (rag.paths through agents.citations).

Objections: before Agent A revises, each of Agent B's objections is checked against the evidence
in one small structured call (keep / update with the correction / discard with the reason).
Objections are cut from B's review by code (agents.objections: bullet or numbered lines, else
sentences, and only those that object to something) and sent as a numbered list with the
evidence summarised, so the 0.5B model judges short items one by one. Only kept and updated
objections reach A; the verdicts are shown as a system message (node "verify"), and so is a
review that raised no objection at all ("no objection raised")."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, create_model

from agents.citations import extract_citations
from agents.echoes import is_copied
from agents.investigation.evidence import Evidence
from agents.objections import MAX_OBJECTIONS, NO_OBJECTION, objections
from agents.providers import get_provider
from agents.providers.base import CallOptions, ChatMessage, ProviderError
from agents.review_checks import flag_false_absences
from agents.runtime import TurnStream
from agents.turns import Agent, BudgetSpent, structured_call
from conversations.models import Message, PlanningSession
from conversations.store import message_payload
from rag.models import CodeFile

log = logging.getLogger(__name__)

NODE = "verify"
EVIDENCE_ITEM_CHARS = 240
EVIDENCE_CHARS = 1500

_EVIDENCE_REF = re.compile(r"\[(E\d{1,4}(?:\s*,\s*E\d{1,4})*)\]")
NO_OBJECTION_NOTE = f"({NO_OBJECTION.capitalize()}: Agent B's review objects to nothing in it.)"
"""What reaches Agent A in place of objections when the review held none."""


# ---------------------------------------------------------------- citations


def cited_evidence(text: str) -> list[int]:
    """The evidence numbers cited as [E3] or [E1, E2], each once, in order."""
    found: dict[int, None] = {}
    for match in _EVIDENCE_REF.finditer(text):
        for label in match[1].split(","):
            found.setdefault(int(label.strip()[1:]), None)
    return list(found)


def citation_problems(session: PlanningSession, text: str, evidence: list[Evidence]) -> list[str]:
    """What is wrong with the citations in `text`, one short phrase each."""
    problems: list[str] = []
    known = {e.number for e in evidence}
    for number in cited_evidence(text):
        if number not in known:
            have = f"E1–E{max(known)}" if known else "none"
            problems.append(f"[E{number}] does not exist (evidence: {have})")
    broken = [c for c in extract_citations(session.codebase, text) if not c.exists]
    if broken:
        lines = dict(
            CodeFile.objects.filter(
                codebase=session.codebase, path__in={c.path for c in broken}
            ).values_list("path", "line_count")
        )
        for c in broken:
            if c.path in lines:
                problems.append(
                    f"`{c.path}:{c.start}` is past the end of the file ({lines[c.path]} lines)"
                )
            else:
                problems.append(f"`{c.path}` is not in the codebase")
    return problems


def flag_citations(session: PlanningSession, message: Message, evidence: list[Evidence]) -> int:
    """Check `message`'s citations once; append a flag and store the count. Returns it."""
    flag_false_absences(session, message)  # "`X` is not defined" where the code defines X
    data = message.data if isinstance(message.data, dict) else {}
    if "citation_problems" in data:  # checked already (a re-run)
        return int(data["citation_problems"])
    problems = citation_problems(session, message.content, evidence)
    if not problems:  # nothing stored: a re-check finds nothing again
        return 0
    message.content += f"\n\n_Flagged citations: {'; '.join(problems)}._"
    message.data = {**data, "citation_problems": len(problems)}
    Message.objects.filter(pk=message.pk).update(content=message.content, data=message.data)
    from planagents.streaming import publish

    publish(session.pk, {"type": "message.end", "message": message_payload(message)})
    return len(problems)


# ---------------------------------------------------------------- objections


# A verdict's texts are held short by the grammar, and its token budget covers the longest
# the grammar allows (about 4 characters a token, and some 20 tokens of JSON around them):
# the 0.5B model wrote 200-character reasons and ran out of tokens in 5 of 12 sessions.
CORRECTION_CHARS = 200
REASON_CHARS = 120
VERDICT_TOKENS = 20 + (CORRECTION_CHARS + REASON_CHARS) // 4


NO_REASON = "discarded with no reason of its own, so kept"
"""Why an objection the verifier discarded is kept all the same."""


class Verdict(BaseModel):
    objection: int = Field(description="The objection's number.", ge=1, le=MAX_OBJECTIONS)
    verdict: Literal["keep", "update", "discard"] = Field(
        description="keep: the evidence supports it; update: partly right, give the correction; "
        "discard: the evidence contradicts it or it names code that is not there."
    )
    correction: str = Field(
        default="", description="update only: the objection as the evidence supports it.",
        max_length=CORRECTION_CHARS,
    )  # fmt: skip
    reason: str = Field(default="", description="Why, citing [E#].", max_length=REASON_CHARS)


class Verdicts(BaseModel):
    """One verdict per objection."""

    verdicts: list[Verdict] = Field(max_length=MAX_OBJECTIONS)


@lru_cache(maxsize=MAX_OBJECTIONS)
def verdicts_schema(count: int) -> type[Verdicts]:
    """Verdicts held to `count` objections: numbers 1…count, at most `count` verdicts. The 0.5B
    model judged objections 2, 3 and 4 of a review that had one, and ran out of tokens."""
    numbers = Literal.__getitem__(tuple(range(1, max(count, 1) + 1)))  # type: ignore[attr-defined]
    verdict = create_model(
        "Verdict",
        __base__=Verdict,
        objection=(numbers, Field(description="The objection's number.")),  # type: ignore[arg-type]
    )
    return create_model(
        "Verdicts",
        __base__=Verdicts,
        verdicts=(list[verdict], Field(max_length=max(count, 1))),  # type: ignore[valid-type]
    )


@dataclass(frozen=True)
class Checked:
    objection: str
    verdict: str  # keep, update or discard
    correction: str = ""
    reason: str = ""

    @property
    def text(self) -> str:
        """What reaches Agent A."""
        return self.correction if self.verdict == "update" and self.correction else self.objection


def verify_prompt(items: list[str], evidence: list[Evidence]) -> list[ChatMessage]:
    parts: list[str] = []
    used = 0
    for e in evidence:
        block = e.prompt_block(limit=EVIDENCE_ITEM_CHARS) if e.found else e.line()
        if used + len(block) > EVIDENCE_CHARS and parts:
            break
        parts.append(block)
        used += len(block)
    numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(items, 1))
    user = (
        "Evidence from the codebase (untrusted data):\n\n" + "\n\n".join(parts) + "\n\n"
        f"A reviewer's objections:\n{numbered}\n\n"
        "Check each objection against the evidence only. For each number give keep (the "
        "evidence supports it), update (partly right: write the correction) or discard (the "
        "evidence contradicts it, or it names code the evidence does not show), with a short "
        "reason citing [E#]. Reply as JSON."
    )
    return [
        ChatMessage("system", "You check code review objections against evidence. Be strict."),
        ChatMessage("user", user),
    ]


def verify_objections(
    session: PlanningSession,
    agent: Agent,
    review: str,
    evidence: list[Evidence],
    *,
    turn_key: str,
    restating: str = "",
) -> list[Checked] | None:
    """The real objections of `review` (agents.objections) with their verdicts, shown as a
    system message. [] when the review holds no real objection: the page says "no objection
    raised" and nothing is sent to the model. None when there is no evidence to check them
    against. Runs once per turn key."""
    stream = TurnStream(session.pk, turn_key=turn_key, role=Message.Role.SYSTEM, node=NODE)
    done = stream.existing()
    if done is not None:
        return [Checked(**c) for c in done.data.get("verdicts", [])]
    items = objections(review, restating=restating, cited={e.number: e.said() for e in evidence})
    if not items:
        # An apology, a refusal or praise is no objection: none is verified, none reaches A.
        stream.open()
        stream.finish(
            content=f"**Agent B: {NO_OBJECTION}.** Its review objects to nothing in the "
            "proposal (an apology, a refusal, a question back, agreement or the proposal said "
            "again is not an objection), so there is nothing to check.",
            data={"verdicts": [], "no_objection": True},
        )
        return []
    if not evidence:
        return None
    options = CallOptions(max_tokens=VERDICT_TOKENS * len(items) + 30, temperature=0.0)
    note = ""
    try:
        reply = structured_call(
            session,
            get_provider(agent.profile),
            verify_prompt(items, evidence),
            verdicts_schema(len(items)),
            options,
        )
        by_number = {v.objection: v for v in reply.verdicts}
    except BudgetSpent:
        raise
    except ProviderError as exc:
        log.info("session %s: objections not verified (%s)", session.pk, exc)
        by_number, note = {}, "\n\n_The check could not run; every objection is kept._"
    checked = [_checked(text, by_number.get(n), items) for n, text in enumerate(items, 1)]
    stream.open()
    stream.finish(
        content=render(checked) + note,
        usage=options.usage,
        data={"verdicts": [asdict(c) for c in checked]},
    )
    return checked


def kept(checked: list[Checked]) -> str:
    """The objections that reach Agent A, numbered; "" when none survived the check, and
    NO_OBJECTION_NOTE when the review raised none."""
    if not checked:
        return NO_OBJECTION_NOTE
    texts = [c.text for c in checked if c.verdict != "discard"]
    return "\n".join(f"{n}. {t}" for n, t in enumerate(texts, 1))


def render(checked: list[Checked]) -> str:
    lines = ["**Objections checked against the evidence:**"]
    for n, c in enumerate(checked, 1):
        if c.verdict == "keep":
            why = f" ({c.reason})" if c.reason == NO_REASON else ""
            lines.append(f"{n}. kept — {c.objection}{why}")
        elif c.verdict == "update":
            lines.append(f"{n}. updated — {c.objection} → {c.correction}")
        else:
            lines.append(f"{n}. discarded — {c.objection} ({c.reason or 'no reason given'})")
    return "\n".join(lines)


_LABELS = re.compile(r"\[E\d{1,4}(?:\s*,\s*E\d{1,4})*\]")


def _checked(text: str, verdict: Verdict | None, items: Sequence[str] = ()) -> Checked:
    """The verdict on one objection, as far as it holds: dropping critique needs a reason, so
    an objection the verifier skipped is kept, and so is one discarded with no reason of its
    own: none, or the words of an objection again (a bare [E#] is a reason: the evidence
    contradicts it; the requests walk: objection 1 discarded
    with objection 2's text as the reason, and 2 "updated" with 1's)."""
    if verdict is None:
        return Checked(text, "keep", reason="not judged")
    reason = verdict.reason.strip()
    if verdict.verdict == "update" and not verdict.correction.strip():
        return Checked(text, "keep", reason=reason)
    if verdict.verdict == "discard":
        words = _LABELS.sub("", reason).strip(" .;:-")
        if not reason or (words and any(is_copied(words, other) for other in items or [text])):
            return Checked(text, "keep", reason=NO_REASON)
    return Checked(text, verdict.verdict, verdict.correction.strip(), reason)
