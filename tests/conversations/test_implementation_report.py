"""The implementation report's deterministic half (conversations.implementation): which step's
target changed, whether its sketch's lines are there, unplanned files, tests, critical rules."""

from conversations.implementation import (
    DEVIATED,
    DONE,
    NOT_DONE,
    PARTLY,
    FileChange,
    Judgement,
    moved,
    undone,
    verify,
)

OLD = """\
import time


def login(user, password):
    ok = check(user, password)
    return ok


def logout(user):
    user.session = None
"""
FIXED = """\
import time


def login(user, password):
    if too_many(user):
        return False
    ok = check(user, password)
    return ok


def logout(user):
    user.session = None
"""
OTHER = OLD.replace("user.session = None", "user.session = None\n    user.save()")

LOGIN_STEP = {
    "title": "Refuse logins over the limit",
    "detail": "In `app/auth.py:4`.",
    "files": ["app/auth.py"],
    "target": {"kind": "definition", "name": "login", "path": "app/auth.py", "start": 4, "end": 6},
    "code": {"path": "app/auth.py", "start": 4, "lines": OLD.splitlines()[3:6]},
    "sketch": {
        "before": ["    ok = check(user, password)"],
        "after": [
            "    if too_many(user):",
            "        return False",
            "    ok = check(user, password)",
        ],
        "start": 5,
        "checked": True,
    },
}
PLAN = {
    "steps": [
        LOGIN_STEP,
        {"title": "Test it", "detail": "", "files": ["tests/test_auth.py"]},
    ],
    "files": [{"path": "app/auth.py", "action": "modify"}],
    "testing": ["A sixth login is refused (`tests/test_auth.py`)."],
}


def diff_of(new: str, old: str = OLD) -> dict[str, FileChange]:
    return {"app/auth.py": FileChange("app/auth.py", "modified", old, new)}


def row(report, number=1):
    return report["steps"][number - 1]


def test_it_says_done_when_the_sketch_lines_are_in_the_changed_definition():
    report = verify(PLAN, diff_of(FIXED))
    first = row(report)
    assert first["status"] == DONE
    evidence = first["evidence"][0]
    assert evidence["path"] == "app/auth.py" and evidence["line"] == 5
    assert "+    if too_many(user):" in evidence["hunk"]


def test_it_says_not_done_when_only_another_definition_of_the_file_changed():
    first = row(verify({"steps": [LOGIN_STEP]}, diff_of(OTHER)))
    assert first["status"] == NOT_DONE
    assert "as it was" in first["reason"]


def test_it_says_partly_when_another_file_of_the_step_changed_but_not_its_target():
    step = {**LOGIN_STEP, "files": ["app/auth.py", "app/limit.py"]}
    changes = {
        "app/limit.py": FileChange("app/limit.py", "added", None, "def too_many(u):\n    pass\n")
    }
    assert row(verify({"steps": [step]}, changes))["status"] == PARTLY


def test_it_says_deviated_with_both_sides_when_the_target_changed_unlike_its_sketch():
    new = OLD.replace("    ok = check(user, password)", "    ok = check(user, password.strip())")
    first = row(verify({"steps": [LOGIN_STEP]}, diff_of(new)))
    assert first["status"] == DEVIATED
    assert "+    if too_many(user):" in first["sketch"]
    assert "+    ok = check(user, password.strip())" in first["evidence"][0]["hunk"]


def test_a_sketchs_lines_already_in_the_old_code_are_no_sign_the_change_was_made():
    # The guard the sketch adds is already in `login` (in another branch); the implementation
    # changed something else there.
    had = OLD.replace(
        "    ok = check(user, password)\n",
        "    if admin(user):\n"
        "        if too_many(user):\n"
        "            return False\n"
        "        ok = check(user, password)\n"
        "    ok = check(user, password)\n",
    )
    step = {**LOGIN_STEP, "code": None}
    step["target"] = {**LOGIN_STEP["target"], "end": 10}
    other = had.replace("    return ok", "    return bool(ok)")
    assert row(verify({"steps": [step]}, diff_of(other, old=had)))["status"] == DEVIATED
    guarded = had.replace(
        "\n    ok = check(user, password)\n    return ok",
        "\n    if too_many(user):\n        return False\n    ok = check(user, password)\n"
        "    return ok",
    )
    assert row(verify({"steps": [step]}, diff_of(guarded, old=had)))["status"] == DONE


def test_the_model_is_asked_only_about_a_deviation_and_its_answer_is_labelled():
    asked = []

    def judge(step, sketch, actual):
        asked.append(actual)
        return Judgement(True, "Same guard, written inline.", undone=Judgement(False, "Gone."))

    same = OLD.replace(
        "    ok = check(user, password)", "    ok = not too_many(user) and check(user, password)"
    )
    first = row(verify({"steps": [LOGIN_STEP]}, diff_of(same), judge=judge))
    assert first["status"] == DONE and first["by"] == "model"
    assert first["judgement"]["reason"] == "Same guard, written inline."
    assert first["judgement"]["hunk"] == first["evidence"][0]["hunk"]
    assert first["judgement"]["undone"]["hunk"] == undone(first["judgement"]["hunk"])
    verify({"steps": [LOGIN_STEP]}, diff_of(FIXED), judge=judge)  # the sketch is there: no call
    assert len(asked) == 1


def test_a_yes_without_a_no_on_the_change_undone_leaves_the_step_deviated():
    same = OLD.replace(
        "    ok = check(user, password)", "    ok = not too_many(user) and check(user, password)"
    )
    both = Judgement(True, "Same.", undone=Judgement(True, "Same too."))
    told = row(verify({"steps": [LOGIN_STEP]}, diff_of(same), judge=lambda *a: both))
    assert told["status"] == DEVIATED and "could not tell" in told["reason"]
    alone = Judgement(True, "Same.")  # no control asked: the yes counts for nothing
    assert (
        row(verify({"steps": [LOGIN_STEP]}, diff_of(same), judge=lambda *a: alone))["status"]
        == DEVIATED
    )


def test_a_hunk_undone_swaps_its_added_and_removed_lines_and_its_sides():
    made = ["@@ -2,3 +2,4 @@ login", " a", "-b", "+c", "+d", "… 3 more lines"]
    assert undone(made) == ["@@ -2,4 +2,3 @@ login", " a", "+b", "-c", "-d", "… 3 more lines"]
    assert undone(undone(made)) == made


def test_a_newer_version_compares_with_the_code_the_step_kept():
    change = {"app/auth.py": FileChange("app/auth.py", "modified", None, FIXED, old_known=False)}
    assert row(verify({"steps": [LOGIN_STEP]}, change))["status"] == DONE
    unrelated = {"app/auth.py": FileChange("app/auth.py", "modified", None, OTHER, old_known=False)}
    assert row(verify({"steps": [LOGIN_STEP]}, unrelated))["status"] == NOT_DONE


def test_it_lists_unplanned_files_and_whether_named_tests_changed():
    changes = {
        **diff_of(FIXED),
        "app/views.py": FileChange("app/views.py", "modified", "a = 1\n", "a = 2\n"),
        "tests/test_auth.py": FileChange(
            "tests/test_auth.py", "added", None, "def test_x():\n    pass\n"
        ),
    }
    report = verify(PLAN, changes)
    assert report["unplanned"] == ["app/views.py"]
    assert report["tests"]["named"] == [
        {"path": "tests/test_auth.py", "changed": True, "kind": "added"}
    ]
    assert row(report, 2)["status"] == DONE
    assert verify(PLAN, diff_of(FIXED))["tests"]["named"][0]["changed"] is False


def test_a_critical_rule_naming_a_changed_path_is_reported():
    rules = [
        {"label": "Rule 1", "text": "Never edit `app/auth.py` without a security review."},
        {"label": "Rule 2", "text": "Do not touch migrations/ by hand."},
        {"label": "Rule 3", "text": "Be kind."},
    ]
    found = verify(PLAN, diff_of(FIXED), rules=rules)["rules"]
    assert [r["label"] for r in found["broken"]] == ["Rule 1"]
    assert found["broken"][0]["paths"] == ["app/auth.py"]
    assert [r["label"] for r in found["unchecked"]] == ["Rule 3"]


def test_a_recheck_says_what_moved():
    before = verify({"steps": [LOGIN_STEP]}, diff_of(OTHER))
    after = verify({"steps": [LOGIN_STEP]}, diff_of(FIXED))
    assert moved(before, after) == [
        {"number": 1, "title": "Refuse logins over the limit", "from": NOT_DONE, "to": DONE}
    ]


def test_a_steps_title_renders_its_code_and_no_markup_of_its_own():
    from conversations.rendering import render_inline

    assert render_inline("Change the check in `SessionRedirectMixin.should_strip_auth`") == (
        "Change the check in <code>SessionRedirectMixin.should_strip_auth</code>"
    )
    assert render_inline("1. <script>x</script> [a](https://evil.example/?d=1)").startswith(
        "1. &lt;script&gt;"
    )
    assert "href" not in render_inline("[a](https://evil.example/?d=1)")


def test_progress_names_the_step_being_checked_before_it_runs(monkeypatch):
    # A step the model judges may take a minute on the local model: the page said "reading
    # the changes" through the whole first call (the requests check, local-1.5b).
    from conversations import implementation

    seen: list[tuple[int, int]] = []
    at_step: list[list[tuple[int, int]]] = []
    checked = implementation.verify_step

    def verify_step(*args, **kwargs):
        at_step.append(list(seen))
        return checked(*args, **kwargs)

    monkeypatch.setattr(implementation, "verify_step", verify_step)
    structured = {"steps": [{"title": "One"}, {"title": "Two"}]}
    implementation.verify(structured, {}, on_step=lambda n, t: seen.append((n, t)))
    assert at_step == [[(1, 2)], [(1, 2), (2, 2)]]


def test_a_step_sharing_an_earlier_steps_code_is_judged_on_a_newer_version():
    # The plan keeps a definition's code under the first step on it; a second step on it
    # carries only `same_code_as` (agents.planning.sketching).
    second = {
        "title": "Log refused logins",
        "files": ["app/auth.py"],
        "target": LOGIN_STEP["target"],
        "same_code_as": 1,
    }
    plan = {"steps": [LOGIN_STEP, second]}
    change = {"app/auth.py": FileChange("app/auth.py", "modified", None, FIXED, old_known=False)}
    assert row(verify(plan, change), 2)["status"] == DONE
    unrelated = {"app/auth.py": FileChange("app/auth.py", "modified", None, OTHER, old_known=False)}
    assert row(verify(plan, unrelated), 2)["status"] == NOT_DONE


def test_the_model_reads_at_most_the_hunk_the_report_shows_it_read():
    from conversations.implementation import MAX_HUNK_LINES

    body = "".join(f"    x{i} = {i}\n" for i in range(300))
    old = f"def login(user, password):\n{body}    return ok\n"
    new = old.replace(" = ", " == ")
    read = []

    def judge(step, sketch, actual):
        read.append(actual)
        return Judgement(False, "Not the guard.")

    step = {**LOGIN_STEP, "code": None}
    step["target"] = {**LOGIN_STEP["target"], "end": 302}
    first = row(verify({"steps": [step]}, diff_of(new, old=old), judge=judge))
    assert first["status"] == DEVIATED
    assert len(read[0]) == MAX_HUNK_LINES + 1 and read[0][-1].startswith("… ")
    assert first["judgement"]["hunk"] == read[0]
