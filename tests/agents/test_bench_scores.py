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


def test_the_definitions_a_prompt_listed_are_read_back_as_offered(tmp_path):
    # "gold definition offered" is the ceiling of "targeted": read from what the model saw.
    import json
    import sqlite3

    from agents.citations import Definition
    from agents.planning.nodes import _definition_choices

    listed = _definition_choices({
        "SessionRedirectMixin.should_strip_auth": Definition("requests/sessions.py", 118, 132),
        "merge_setting": Definition("requests/sessions.py", 50, 80),
        "HTTPAdapter.send": Definition("requests/adapters.py", 388, 530),
    })  # fmt: skip
    database = tmp_path / "db.sqlite3"
    db = sqlite3.connect(database)
    db.execute("CREATE TABLE agents_llmcall (session_id INTEGER, prompt TEXT)")
    prompt = [{"role": "user", "content": f"Write the plan. {listed} files: every file."}]
    db.execute("INSERT INTO agents_llmcall VALUES (1, ?)", (json.dumps(prompt),))
    db.execute("INSERT INTO agents_llmcall VALUES (2, ?)", (json.dumps([]),))
    db.commit()
    db.close()
    assert plan_scores.offered(database, 1) == {
        ("requests/sessions.py", "SessionRedirectMixin.should_strip_auth"),
        ("requests/sessions.py", "merge_setting"),
        ("requests/adapters.py", "HTTPAdapter.send"),
    }
    assert plan_scores.offered(database, 2) == set()
