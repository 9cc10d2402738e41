"""The app's own checks of a proposal, given to Agent B as points to judge: each is a fact read
off the code (evidence, Files vs steps, the import graph's tests), never a guess."""

from agents.investigation.evidence import Evidence
from agents.review_checks import action_risks, checks_block, review_points
from rag.navigation import RelatedResult
from rag.navigation import TestLink as Link
from rag.paths import FileSet

PATHS = FileSet(["todo/auth.py", "todo/api.py", "todo/storage.py", "tests/test_api.py"])
TESTS = {"todo/api.py": ["tests/test_api.py"], "todo/auth.py": ["tests/test_api.py"]}
IMPORTERS = {
    "todo/storage.py": ["todo/api.py", "todo/auth.py", "tests/test_api.py", "todo/cli.py"],
    "todo/auth.py": ["todo/api.py"],
}


def related(path):
    return RelatedResult(
        path,
        path,
        importers=IMPORTERS.get(path, []),
        tests=[Link(t, "imports it") for t in TESTS.get(path, [])],
    )


def found(number, name, path, start=3, end=20):
    return Evidence(number, "find_symbol", name, "", True, "1 definition", path, start, end)


def proposal(*files, detail=None, action="modify"):
    return {
        "summary": "s",
        "steps": [{"title": "t", "detail": detail or f"Edit `{files[0]}:4`.", "files": []}],
        "files": [{"path": p, "action": action, "reason": "r"} for p in files],
    }


def points(data, evidence=()):
    return review_points(data, list(evidence), PATHS, related)


def test_a_named_symbol_defined_in_a_file_the_proposal_leaves_alone_is_pointed_out():
    said = points(proposal("todo/api.py"), [found(1, "TokenStore", "todo/auth.py")])
    assert said[0] == (
        "[E1] finds `TokenStore` defined at `todo/auth.py:3-20`; the proposal changes nothing "
        "in that file."
    )
    # Changed already (written with another case or a leading folder), or a test's definition:
    # nothing to say.
    assert not any(
        "[E" in p for p in points(proposal("TODO/auth.py"), [found(1, "T", "todo/auth.py")])
    )
    tested = points(proposal("todo/api.py"), [found(2, "helper", "tests/test_api.py")])
    assert not any("[E2]" in p for p in tested)
    missed = Evidence(3, "find_symbol", "Nope", "", False, "No symbol", "", 0, 0)
    assert not any("[E3]" in p for p in points(proposal("todo/api.py"), [missed]))


def test_a_file_in_files_that_no_step_mentions_is_pointed_out():
    data = proposal("todo/api.py", "todo/storage.py", "todo/storage.py")  # listed twice
    said = [p for p in points(data) if "no step says" in p]
    assert said == ["`todo/storage.py` is in Files, but no step says what changes in it."]
    data = proposal("todo/api.py", "todo/storage.py", detail="`todo/api.py:1`, `todo/storage.py:2`")
    assert not any("no step says" in p for p in points(data))


def test_tests_of_a_changed_file_are_named_when_no_test_changes():
    said = points(proposal("todo/api.py"))
    assert said == [
        "No test file changes, though `todo/api.py`, which changes, has tests: `tests/test_api.py`."
    ]
    assert (
        points(
            proposal("todo/api.py", "tests/test_api.py", detail="`todo/api.py` `tests/test_api.py`")
        )
        == []
    )


def test_points_come_most_telling_first_as_one_tagged_block():
    evidence = [found(1, "TokenStore", "todo/auth.py")]
    said = points(proposal("todo/api.py", "todo/storage.py", detail="`todo/api.py:1`"), evidence)
    assert [p[:12] for p in said] == ["[E1] finds `", "`todo/storag", "No test file"]
    block = checks_block(said)
    assert block.startswith("<checks>\n") and block.endswith("\n</checks>")
    assert all(f"- {p}" in block for p in said)
    assert checks_block([]) == ""


def test_deleting_a_file_other_files_import_is_pointed_out_with_its_importers():
    said = points(proposal("todo/storage.py", action="delete", detail="Remove `todo/storage.py`."))
    assert said[0] == (
        "`todo/storage.py` is deleted, but 4 file(s) import it: `todo/api.py`, `todo/auth.py`, "
        "`tests/test_api.py` and 1 more."
    )
    # Deleted together with its only importer: nothing breaks, nothing to say; a modified
    # file with importers is not a deletion.
    both = proposal(
        "todo/auth.py", "todo/api.py", action="delete", detail="`todo/auth.py` `todo/api.py`"
    )
    assert not any("is deleted" in p for p in points(both))
    assert not any("is deleted" in p for p in points(proposal("todo/storage.py")))


BUG_FIX = {"type": "bug_fix", "language": "en"}
FIX_TASK = "Fix: expired tokens are still accepted by the login view"


def plan(*steps, files):
    return {
        "steps": [{"title": t, "detail": d, "files": f} for t, d, f in steps],
        "files": [{"path": p, "action": a, "reason": "r"} for p, a in files],
    }


def test_a_bug_fix_plan_that_deletes_the_file_to_fix_is_returned_as_a_risk():
    data = plan(
        ("Check expiry", "In `todo/auth.py:4`.", ["todo/auth.py"]),
        ("Drop the store", "Remove the module.", ["todo/storage.py"]),
        files=[("todo/auth.py", "modify"), ("todo/storage.py", "delete")],
    )
    assert action_risks(FIX_TASK, BUG_FIX, data) == [
        "Step 2 deletes `todo/storage.py`, which the task does not ask for; a bug fix usually "
        "modifies it."
    ]
    # No step names it: the plan as a whole does.
    unnamed = plan(files=[("todo/storage.py", "delete")])
    assert action_risks(FIX_TASK, BUG_FIX, unnamed)[0].startswith("The plan deletes `todo/")


def test_a_bug_fix_step_that_renames_a_public_name_is_returned_as_a_risk():
    data = plan(
        ("Rename", "Rename `TokenStore.check` to `validate` in `todo/auth.py:4`.", []),
        ("Tidy", "Rename the helper `_expiry` to `_expires_at`.", []),
        files=[("todo/auth.py", "modify")],
    )
    assert action_risks(FIX_TASK, BUG_FIX, data) == [
        "Step 1 renames `TokenStore.check`, a public name, which the task does not ask for; a "
        "bug fix keeps public names so that their callers do not break."
    ]  # `_expiry` is private: renaming it breaks no caller


def test_a_task_that_asks_for_the_action_or_is_no_bug_fix_has_no_action_risk():
    data = plan(("Drop", "Drop `todo/storage.py`.", []), files=[("todo/storage.py", "delete")])
    assert action_risks("Fix the login bug and delete todo/storage.py", BUG_FIX, data) == []
    assert action_risks("Sửa lỗi đăng nhập và xóa tệp cũ", {"type": "bug_fix", "language": "vi"},
                        data) == []  # fmt: skip
    assert action_risks("Refactor the token store", {"type": "refactor"}, data) == []
    assert action_risks(FIX_TASK, BUG_FIX, plan(files=[("todo/auth.py", "modify")])) == []


def test_the_reviewer_is_asked_about_an_action_the_bug_fix_does_not_call_for():
    data = proposal("todo/auth.py", action="delete", detail="Delete `todo/auth.py`.")
    said = review_points(data, [], PATHS, related, task=FIX_TASK, analysis=BUG_FIX)
    assert said[0] == (
        "Step 1 deletes `todo/auth.py`, which the task does not ask for; a bug fix usually "
        "modifies it."
    )
    assert not any("does not ask" in p for p in points(data))  # without the task: not judged
