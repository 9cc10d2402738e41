"""The rules and pins part of a final plan, rendered from the plan's structured data alone (no
database): `rules_check` (what the check of the plan found), `rules_overrides` (the critical
rules the human overrode at the checkpoint, with their reasons) and `pins_used` (the pinned
context the agents were shown). Kept free of the runtime so the plan renderer can call it."""

from __future__ import annotations

from typing import Any


def markdown(data: dict[str, Any]) -> str:
    """The `## Rules` and `## Pinned context used` sections; "" when there is nothing to say."""
    lines: list[str] = []
    result = data.get("rules_check")
    overrides = [o for o in data.get("rules_overrides") or [] if isinstance(o, dict)]
    if isinstance(result, dict) or overrides:
        lines += ["## Rules", ""]
    if isinstance(result, dict):
        lines.append(check_line(result, heading="Rules check:"))
        for v in result.get("violations") or []:
            mark = " **[critical]**" if v.get("severity") == "critical" else ""
            lines.append(
                f"- {v.get('label')}{mark} {quote(v.get('text', ''))} — {v.get('explanation', '')}"
            )
        lines.append("")
    for o in overrides:
        labels = ", ".join(str(r.get("label")) for r in o.get("rules") or [])
        lines.append(f"- Overridden by the human ({labels}): {o.get('reason', '')}")
    if overrides:
        lines.append("")
    pins = [p for p in data.get("pins_used") or [] if isinstance(p, dict)]
    if pins:
        lines += ["## Pinned context used", ""]
        for p in pins:
            label = f"P{p.get('number')}"
            if p.get("kind") == "note":
                lines.append(f"- [{label}] note: {p.get('text', '')}")
            else:
                lines.append(f"- [{label}] {p.get('kind')} `{p.get('title', '')}`")
        lines.append("")
    return "\n".join(lines).strip()


def check_line(result: dict[str, Any], *, heading: str) -> str:
    what = result.get("what", "plan")
    if not result.get("ran", True):
        return f"{heading} the check of the {what} could not run; read the rules yourself."
    violations = result.get("violations") or []
    if not violations:
        return f"{heading} the {what} follows the {result.get('checked', 0)} rule(s)."
    return f"{heading} the {what} breaks {len(violations)} rule(s):"


def quote(text: str) -> str:
    text = " ".join(str(text).split())
    return f"“{text if len(text) <= 160 else text[:159] + '…'}”"
