"""bench/implementation_check.py on a small synthetic instance: a grounding bench's plan read
from its database, checked against the real fix and an unrelated change (forward, and in
reverse where the pack already holds the fix), with and without the model's judgement."""

import difflib
import json
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import implementation_check as bench  # noqa: E402

from agents.providers.fake import FakeProvider  # noqa: E402

AUTH = """\
def login(user, password):
    ok = check(user, password)
    return ok


def logout(user):
    user.session = None
"""
FIXED = AUTH.replace(
    "    ok = check(user, password)",
    "    if too_many(user):\n        return False\n" + "    ok = check(user, password)",
)
VIEWS = "def render(page):\n    return page\n"


def patch(path, old, new):
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )


GOLD = {
    "app__app-1": {
        "gold_patch": patch("app/auth.py", AUTH, FIXED),
        "gold_spans": {"app/auth.py": ["login"]},
    },
    "app__app-2": {
        "gold_patch": patch("app/views.py", VIEWS, VIEWS.replace("page\n", "page.strip()\n")),
        "gold_spans": {"app/views.py": ["render"]},
    },
}
POOL = [
    {"instance_id": i, "repo": "app/app", "pypi_name": "app", "pypi_version": "1", "query": "q"}
    for i in GOLD
]


def step(name, start, end, sketch=None):
    out = {
        "title": f"Change `{name}`",
        "detail": "",
        "files": ["app/auth.py"],
        "target": {"kind": "definition", "name": name, "path": "app/auth.py",
                   "start": start, "end": end},
    }  # fmt: skip
    if sketch:
        out["sketch"] = sketch
    return out


# The model's sketch: a guard written otherwise than the fix writes it.
SKETCH = {
    "before": ["    ok = check(user, password)"],
    "after": ["    ok = check(user, password) and not too_many(user)"],
    "checked": True,
}
PLAN = {
    "steps": [
        step("login", 1, 3, SKETCH),
        step("logout", 6, 7),
        {"title": "Document it", "detail": "", "files": ["docs/limits.md"]},
    ],
    "files": [{"path": "app/auth.py"}],
}

OLD_CODE_PLAN = {"steps": [{"title": "Something else", "files": ["app/auth.py"]}]}


def grounding_database(folder: Path, plan=PLAN) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(folder / "bench.sqlite3")
    db.execute(
        "CREATE TABLE conversations_planningsession (id INTEGER, task TEXT, codebase_id INT)"
    )
    db.execute("CREATE TABLE conversations_plan (session_id INTEGER, version INT, structured TEXT)")
    db.execute("INSERT INTO conversations_planningsession VALUES (7, 'Throttle logins', 1)")
    db.execute("INSERT INTO conversations_plan VALUES (7, 1, ?)", (json.dumps({"steps": []}),))
    db.execute("INSERT INTO conversations_plan VALUES (7, 2, ?)", (json.dumps(plan),))
    db.execute("INSERT INTO conversations_planningsession VALUES (3, 'Before', 1)")
    db.execute("INSERT INTO conversations_plan VALUES (3, 1, ?)", (json.dumps(OLD_CODE_PLAN),))
    db.commit()
    db.close()
    return folder


@pytest.fixture
def grounded(tmp_path):
    data = grounding_database(tmp_path / "grounding")
    log = tmp_path / "sessions.jsonl"
    rows = [
        {"instance": "app__app-1", "condition": "after", "session": 7, "data": str(data)},
        # The older code's session, logged after: not the plan of the code measured.
        {"instance": "app__app-1", "condition": "before", "session": 3, "data": str(data)},
        {"instance": "app__app-2", "condition": "after", "session": 9,
         "data": str(tmp_path / "gone")},
    ]  # fmt: skip
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # An older run's row: its session number now names app-1's session in a fresh database.
    older = tmp_path / "older.jsonl"
    older.write_text(json.dumps(
        {"instance": "app__app-3", "condition": "after", "session": 7, "data": str(data)}
    ) + "\n")  # fmt: skip
    queries = {"app__app-1": " Throttle\r\nlogins", "app__app-2": "q", "app__app-3": "Other"}
    return bench.grounding_plans([log, older, tmp_path / "none.jsonl"], queries)


def test_the_grounding_benchs_latest_plan_is_read_from_its_database(grounded):
    # app-2's database is not here; app-3's row names a session of another task.
    assert set(grounded) == {"app__app-1"}
    assert grounded["app__app-1"]["structured"] == PLAN
    assert grounded["app__app-1"]["task"] == "Throttle logins"


@pytest.fixture
def swe(monkeypatch):
    def use(pack: str) -> None:
        monkeypatch.setattr(bench, "gold_spans", lambda: GOLD)
        monkeypatch.setattr(
            bench, "pack_files", lambda _: {"app/auth.py": pack, "app/views.py": VIEWS}
        )

    return use


@pytest.mark.parametrize("pack, how", [(AUTH, "applies"), (FIXED, "reversed")])
def test_a_grounding_plan_is_checked_against_the_real_fix_and_an_unrelated_change(
    swe, grounded, pack, how
):
    swe(pack)
    row = bench.one(POOL[0], POOL, {}, mode="grounding", grounded=grounded)
    assert row["plans"] == "grounding" and row["fix"] == how and row["session"] == 7
    # The gold step changed unlike its sketch (deviated, no model asked); logout did not.
    assert row["real"]["statuses"] == ["deviated", "not_done", "not_done"]
    assert (row["real"]["true_steps"], row["real"]["true_deviated"]) == (1, 1)
    assert (row["real"]["false_steps"], row["real"]["false_done"]) == (1, 0)
    assert row["real"]["untruthed"] == ["not_done"]  # the docs step has no name-level truth
    assert row["real_no_sketch"]["true_done"] == 1
    unrelated = row["unrelated"]
    assert unrelated["instance"] == "app__app-2"
    assert unrelated["false_done"] == 0 and unrelated["false_deviated"] == 0
    assert unrelated["unplanned"] == ["app/views.py"]
    text = bench.report([row])
    assert "The grounding bench's plans (the model's), no model call" in text
    assert (
        "| real fix: agreement with the name-level truth over all steps (done or deviated = changed) | 100% (2/2) |"
        in text
    )


def test_with_a_profile_the_model_judges_the_deviated_step_as_the_product_asks(swe, grounded):
    swe(AUTH)
    FakeProvider.script(
        "fake",
        {"equivalent": True, "reason": "The same guard, inline."},
        {"equivalent": False, "reason": "Undone, no guard."},  # the control
    )
    row = bench.one(
        POOL[0], POOL, {}, mode="grounding", grounded=grounded, model=bench.ModelJudge("fake")
    )
    assert row["profile"] == "fake"
    assert row["real"]["statuses"][0] == "done" and row["real"]["by_model"] == 1
    assert row["real"]["model_calls"] == 2  # the yes and its control
    asked = [
        c for c in FakeProvider.calls("fake") if c.schema and c.schema.__name__ == "Equivalence"
    ]
    assert "Task: Throttle logins" in asked[-1].prompt  # the session's task, from its database


def test_without_a_grounding_plan_auto_builds_one_from_gold_spans(swe):
    swe(AUTH)
    row = bench.one(POOL[0], POOL, {}, mode="auto", grounded={})
    assert row["plans"] == "gold"
    # A step on login (gold) and one on logout, no sketches: exactly the gold step is done.
    assert row["real"]["statuses"] == ["done", "not_done"]
    assert bench.one(POOL[0], POOL, {}, mode="grounding", grounded={})["fix"] == "no grounding plan"


def test_the_results_file_keeps_its_prose_and_replaces_its_own_block(tmp_path):
    out = tmp_path / "RESULTS.md"
    out.write_text("# Title\n\nWhy it matters.\n")
    bench.write_results(out, 6, "first")
    bench.write_results(out, 99, "all")
    bench.write_results(out, 6, "second")
    text = out.read_text()
    assert text.startswith("# Title\n\nWhy it matters.\n")
    assert "second" in text and "first" not in text and "all" in text
