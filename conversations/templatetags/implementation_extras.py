"""The plan page's list of implementation checks and its "Check an implementation" button, and
the reports a share link shows; `report_context` is what a report template reads. Computed
from the plan alone, so the pages' views need no change to show them.

    {% load implementation_extras %}
    {% implementation_checks plan is_owner %}
    {% implementation_reports shared.checks shared.link.shows_evidence shared.link.shows_rules %}
"""

from __future__ import annotations

from typing import Any

from django import template

from conversations.implementation import LABELS
from conversations.implementation_checks import checks_of, state
from conversations.models import ImplementationCheck, Plan
from conversations.rendering import render_markdown

register = template.Library()


def counted(check: Any) -> Any:
    """The check with `counts`: (status, label, how many) for the list's badges."""
    found = (check.report or {}).get("counts") or {}
    check.counts = [(k, v, found.get(k, 0)) for k, v in LABELS.items()]
    return check


@register.inclusion_tag("conversations/_implementation_checks.html")
def implementation_checks(plan: Plan, is_owner: bool) -> dict[str, Any]:
    """The plan version's checks, newest first; the owner of an approved version may ask for
    another."""
    return {
        "session": plan.session,
        "plan": plan,
        "implementation_checks": [counted(c) for c in checks_of(plan)],
        "can_check_implementation": bool(is_owner) and plan.review_status == Plan.Review.APPROVED,
    }


def report_context(check: ImplementationCheck) -> dict[str, Any]:
    """What a report shows, model text rendered through markdown and the sanitizer."""
    report = check.report if isinstance(check.report, dict) else {}
    rows = []
    for row in report.get("steps") or []:
        judgement = row.get("judgement")
        rows.append(
            {
                **row,
                "label": LABELS.get(row.get("status"), row.get("status")),
                "reason_html": render_markdown(str(row.get("reason") or "")),
                "judgement_html": render_markdown(str(judgement.get("reason") or ""))
                if judgement
                else "",
                "undone_html": render_markdown(str(judgement["undone"].get("reason") or ""))
                if judgement and judgement.get("undone")
                else "",
            }
        )
    return {
        "check": check,
        "check_state": state(check),
        "report": report,
        "rows": rows,
        "counts": [(k, v, (report.get("counts") or {}).get(k, 0)) for k, v in LABELS.items()],
        "moved": [
            {
                **m,
                "from_label": LABELS.get(m["from"], m["from"]),
                "to_label": LABELS.get(m["to"], m["to"]),
            }
            for m in report.get("moved") or []
        ],
    }


def without_code(row: dict[str, Any]) -> dict[str, Any]:
    """A row for a share link whose owner did not share code excerpts: paths and lines only.
    The model's answers (on the change and on it undone) keep their verdicts, not their words
    (which may quote the code), their hunks nor an error (a provider's words)."""
    evidence = [{**e, "hunk": []} for e in row.get("evidence") or []]
    judgement = _wordless(row["judgement"]) if row.get("judgement") else None
    if judgement and judgement.get("undone"):
        judgement["undone"] = _wordless(judgement["undone"])
    return {**row, "evidence": evidence, "sketch": [], "judgement": judgement,
            "judgement_html": "", "undone_html": ""}  # fmt: skip


def _wordless(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "hunk": [], "reason": "", "error": ""}


@register.inclusion_tag("conversations/_implementation_shared.html")
def implementation_reports(
    checks: list[ImplementationCheck], show_code: bool, show_rules: bool = False
) -> dict[str, Any]:
    """The reports a share link shows, newest first: code only when the owner shared the
    evidence, the codebase's rules only when the owner shared them."""
    reports = []
    for check in checks:
        found = report_context(check)
        if not show_code:
            found["rows"] = [without_code(r) for r in found["rows"]]
        if not show_rules:
            found["report"] = {**found["report"], "rules": {}}
        reports.append(found)
    return {"reports": reports, "show_code": show_code, "show_rules": show_rules}
