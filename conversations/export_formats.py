"""Every export format of a plan version, by the name its URL uses: the plain ones
(conversations.exports) and the spec-driven layouts (conversations.spec_exports). The plan
page, its download view and the API read this one table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conversations.exports import (
    github_issue,
    guidance,
    handoff_prompt,
    plan_data,
    plan_with_checks,
    to_json,
)
from conversations.models import Plan
from conversations.spec_exports import LAYOUTS


@dataclass(frozen=True)
class Export:
    """One export format: how to build it from a plan version and how to serve it."""

    render: Callable[[Plan], str]
    content_type: str
    extension: str
    label: str
    archive: Callable[[Plan], bytes] | None = None
    """The export's directory layout as a zip (`?zip=1`), for those that are one."""


EXPORTS: dict[str, Export] = {
    "json": Export(
        lambda plan: to_json(plan_data(plan)), "application/json; charset=utf-8", "json", "JSON"
    ),
    "markdown": Export(
        plan_with_checks,
        "text/markdown; charset=utf-8",
        "md",
        "Markdown, with implementation checks",
    ),
    "github": Export(
        lambda plan: github_issue(plan_data(plan)),
        "text/markdown; charset=utf-8",
        "github.md",
        "GitHub issue",
    ),
    "handoff": Export(
        lambda plan: handoff_prompt(plan_data(plan), guidance(plan)),
        "text/plain; charset=utf-8",
        "prompt.md",
        "Hand-off prompt",
    ),
}


for _kind, _extension, _label in (
    ("speckit", "speckit.md", "GitHub Spec Kit"),
    ("kiro", "kiro.md", "Kiro spec"),
    ("agents", "agents.md", "AGENTS.md section"),
):
    EXPORTS[_kind] = Export(
        LAYOUTS[_kind].markdown,
        "text/markdown; charset=utf-8",
        _extension,
        _label,
        archive=LAYOUTS[_kind].archive,
    )
