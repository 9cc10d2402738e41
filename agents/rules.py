"""The codebase's rules and pins in a session: the prompt sections every agent node shares, the
rules check of each proposal and final plan, and the gate that keeps a plan breaking a critical
rule from being approved until the human overrides it with a reason.

The check is one structured call (repaired by the one repair path, `structured_reply`, through
`structured_call`); with no enabled rules there is no call and no message. Its result is a
system message (turn key `rules:proposal:<iteration>` or `rules:plan:<version>`), so a re-run
finds it, and the human's override is a message of their own: both are in the transcript."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, Field

from agents.plan_rules import check_line, quote
from agents.providers import get_provider
from agents.providers.base import CallOptions, ChatMessage, ProviderError
from agents.runtime import TurnStream
from agents.turns import Agent, BudgetSpent, structured_call
from conversations.models import Message, PlanningSession
from rag import pins as rag_pins
from rag import rules as rag_rules
from rag.models import Rule

log = logging.getLogger(__name__)

NODE = "check_rules"
PINS_NODE = "pinned_context"
PINS_KEY = "pins"
MAX_VIOLATIONS = 8
TARGET_CHARS = 2500
"""How much of the proposal or plan the check reads (its summary, steps and files come first)."""


class Violation(BaseModel):
    rule: int = Field(description="The number of the rule broken (R#).", ge=1, le=99)
    explanation: str = Field(description="One sentence: what breaks it.", max_length=300)


class RuleCheck(BaseModel):
    """The rules the plan breaks; an empty list when it follows them all."""

    violations: list[Violation] = Field(max_length=MAX_VIOLATIONS)


# ---------------------------------------------------------------- prompt sections


def session_pins(session: PlanningSession) -> list[rag_pins.PinnedItem]:
    """The pins this session's agents see: those of the codebase when the session first asked,
    kept as a message of their own (shown like the evidence, and the same for every node even
    if the codebase's pins change meanwhile)."""
    stream = TurnStream(session.pk, turn_key=PINS_KEY, role=Message.Role.SYSTEM, node=PINS_NODE)
    done = stream.existing()
    if done is not None:
        return [rag_pins.PinnedItem.from_dict(d) for d in done.data.get("pins", [])]
    items = rag_pins.pinned_items(session.codebase)
    if not items:
        return []
    stream.open()
    stream.finish(content=render_pins(items), data={"pins": [i.as_dict() for i in items]})
    return items


def render_pins(items: list[rag_pins.PinnedItem]) -> str:
    lines = ["**Pinned context** (pinned on the codebase; every agent prompt includes it):"]
    for item in items:
        if item.kind == "note":
            lines.append(f"- [{item.label}] note: {item.text}")
        elif not item.found:
            lines.append(f"- [{item.label}] `{item.title}`: unresolved ({item.text})")
        else:
            lines.append(f"- [{item.label}] {item.kind} `{item.title}`")
    return "\n".join(lines)


def prompt_sections(session: PlanningSession, pinned: list[rag_pins.PinnedItem]) -> list[str]:
    """The rules and the pinned context as prompt sections (each bounded; none when empty)."""
    rules_text, _ = rag_rules.prompt_rules(session.codebase)
    return [p for p in (rules_text, rag_pins.prompt_section(pinned)) if p]


# ---------------------------------------------------------------- the check


def check_prompt(rules_text: str, what: str, text: str) -> list[ChatMessage]:
    shown = text if len(text) <= TARGET_CHARS else text[:TARGET_CHARS] + "\n…"
    request = (
        f"Check the {what} between the <{what}> tags against the codebase rules above. List "
        "only the rules it clearly breaks, by number, each with one sentence on what breaks "
        'it. If it breaks none, reply {"violations": []}.'
    )
    return [ChatMessage("user", f"{rules_text}\n\n<{what}>\n{shown}\n</{what}>\n\n{request}")]


def check(
    session: PlanningSession, agent: Agent, what: str, text: str, *, turn_key: str
) -> dict[str, Any] | None:
    """Check `text` (a proposal or a plan) against the enabled rules and show the result;
    None when the codebase has no rules (no call). Runs once per turn key."""
    stream = TurnStream(session.pk, turn_key=turn_key, role=Message.Role.SYSTEM, node=NODE)
    done = stream.existing()
    if done is not None:
        found: dict[str, Any] | None = done.data.get("rules_check")
        return found
    rules_text, rules = rag_rules.prompt_rules(session.codebase)
    if not rules:
        return None
    options = CallOptions(max_tokens=60 * len(rules) + 40, temperature=0.0)
    by_number = {r.number: r for r in rules}
    violations: list[dict[str, Any]] = []
    ran = True
    try:
        reply = structured_call(
            session,
            get_provider(agent.profile),
            check_prompt(rules_text, what, text),
            RuleCheck,
            options,
        )
    except BudgetSpent:
        raise
    except ProviderError as exc:
        log.info("session %s: rules check did not run (%s)", session.pk, exc)
        ran = False
    else:
        seen: set[int] = set()
        for v in reply.violations:
            rule = by_number.get(v.rule)
            if rule is None or v.rule in seen:
                continue  # a number the prompt never showed, or said twice
            seen.add(v.rule)
            violations.append(
                {
                    "label": rule.label,
                    "rule_id": rule.rule_id,
                    "text": rule.text,
                    "severity": rule.severity,
                    "explanation": v.explanation.strip(),
                }
            )
    result = {
        "what": what,
        "ran": ran,
        "checked": len(rules),
        "violations": violations,
        "critical": sum(1 for v in violations if v["severity"] == Rule.Severity.CRITICAL),
    }
    stream.open()
    stream.finish(content=render_check(result), usage=options.usage, data={"rules_check": result})
    return result


def render_check(result: dict[str, Any]) -> str:
    """The check as the transcript shows it."""
    lines = [check_line(result, heading="**Rules check:**")]
    for v in result["violations"]:
        mark = " **[critical]**" if v["severity"] == Rule.Severity.CRITICAL else ""
        lines.append(f"- {v['label']}{mark} {quote(v['text'])} — {v['explanation']}")
    if result["critical"] and result["what"] == "proposal":
        lines.append(
            "\nApproval is blocked until you override the critical rule(s) with a reason, "
            "or ask for changes."
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- the final plan


def plan_data(
    session_id: int, result: dict[str, Any] | None, pinned: list[rag_pins.PinnedItem]
) -> dict[str, Any]:
    """What the final plan's data keeps of the rules and pins (rendered by plan_rules)."""
    overrides = [
        d["rules_override"]
        for d in Message.objects.filter(
            session_id=session_id, role=Message.Role.USER, data__has_key="rules_override"
        )
        .order_by("seq")
        .values_list("data", flat=True)
    ]
    return {
        "rules_check": result,
        "rules_overrides": overrides,
        "pins_used": [item.as_dict() for item in pinned],
    }
