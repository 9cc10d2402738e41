"""The grounding bench counts as non-objections only what the app would have refused to keep:
the app's own "no objection raised" row is the honest outcome, not a fake objection."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import plan_scores  # noqa: E402

from agents.objections import NO_OBJECTION  # noqa: E402


def row(objection: str) -> dict[str, object]:
    return {"decision": "d", "proposed": "p", "objection": objection, "resolution": "—"}


def test_the_apps_no_objection_row_is_not_a_non_objection():
    assert plan_scores.non_objections({"decision_log": [row(NO_OBJECTION), row("—")]}) == 0


def test_an_apology_kept_as_an_objection_is_counted():
    apology = "I am sorry, but I do not have enough information to review this proposal."
    assert plan_scores.non_objections({"decision_log": [row(apology)]}) == 1
