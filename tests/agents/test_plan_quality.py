"""A plan's quality, judged by the app in one place (agents.plan_quality): paths written in any
section are checked, names written as code that nothing defines or uses are flagged, and the
quality line says what the plan amounts to."""

import pytest

from agents.plan import render_plan
from agents.plan_quality import (
    Quality,
    check_written_paths,
    code_names,
    judge,
    unquoted,
    written_paths,
)
from rag import profile
from rag.models import Codebase, CodeFile
from rag.navigation import Navigator
from rag.paths import FileSet

AUTH = '''"""Tokens."""
text_type = str


class TokenStore:
    def issue(self, user):
        token = make_token(user)
        return token

    def expire(self, token):
        return None
'''
TEST = "from todo.auth import TokenStore\n\n\ndef test_issue():\n    assert TokenStore()\n"
FILES = {
    "todo/auth.py": AUTH,
    "todo/api.py": "def login():\n    pass\n",
    "tests/test_auth.py": TEST,
}
PATHS = FileSet(FILES)


def indexed(tmp_path):
    profile.build_into(tmp_path, profile.sources(FILES))
    return tmp_path


def plan(**fields):
    base = {
        "summary": "Expire tokens.",
        "steps": [{"title": "Expire", "detail": "Change `TokenStore.expire`.", "files": []}],
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "tokens"}],
        "testing": [],
        "risks": [],
    }
    return {**base, **fields}


def test_paths_are_found_in_code_spans_and_bare_words_but_not_in_code_or_urls():
    text = "Edit `todo/auth.py:12` and setup.cfg, not np.array, https://x.io/a.py or 1.2.3."
    assert written_paths(text) == ["todo/auth.py", "setup.cfg"]


def test_a_testing_section_naming_a_missing_file_in_a_missing_folder_is_an_invented_path():
    data = plan(testing=["Run `tests/unit/test_expiry.py`.", "Extend tests/test_auth.py."])
    checked = {w.path: w.status for w in check_written_paths(data, PATHS)}
    assert checked == {"tests/unit/test_expiry.py": "missing", "tests/test_auth.py": "exists"}


def test_a_new_test_module_in_a_folder_the_codebase_has_is_a_new_file_not_an_invented_one():
    data = plan(risks=["Add `tests/test_expiry.py` for the clock."])
    assert [w.status for w in check_written_paths(data, PATHS)] == ["new"]


def test_code_names_are_the_dotted_names_and_calls_of_code_spans_not_bare_words_or_paths():
    text = "Call `pkg.utils._encode_x()` from `TokenStore.issue`, see `todo/auth.py:5`, `x = f(y)`."
    assert code_names(text) == ["pkg.utils._encode_x", "TokenStore.issue", "f"]
    assert code_names("Read `REMOTE_ADDR` and `blocked`.") == []  # bare words claim nothing


def test_outside_code_and_the_plans_own_new_definitions_are_not_invented(tmp_path):
    steps = [
        {"title": "Add LoginThrottle", "detail": "With `blocked()`.", "target": {"kind": "new"}},
        {"title": "Use it", "detail": "Call `LoginThrottle.blocked` and `self._missing_hook()`."},
    ]
    data = plan(
        steps=steps,
        risks=["`time.monotonic()` and `os.path.join` are standard; `nowhere.mod.f()` is not."],
    )
    quality = judge(data, PATHS, task="", index_folder=indexed(tmp_path))
    assert sorted(quality.invented_names) == ["nowhere.mod.f", "self._missing_hook"]


NAMES = plan(
    summary="Use `todo.auth._encode_token()` and `text_type` in `TokenStore.issue`.",
    risks=["`make_token()` may raise; `len()` of `str` is fine; the task's `ExpiryPolicy()`."],
)


def test_a_name_nothing_in_the_symbol_table_or_the_task_has_is_invented(tmp_path):
    quality = judge(NAMES, PATHS, task="Add an `ExpiryPolicy`", index_folder=indexed(tmp_path))
    # `text_type` is a module-level assignment, `len`/`str` the language's, `ExpiryPolicy` the
    # task's own word; without the files' text, `make_token` (only called) counts as unknown.
    assert quality.invented_names == ["todo.auth._encode_token", "make_token"]
    assert "`todo.auth._encode_token` is not defined" in quality.problems()[0]


@pytest.mark.django_db
def test_a_name_written_in_some_files_text_is_not_invented(tmp_path, user):
    codebase = Codebase.objects.create(owner=user, name="todo", status="ready")
    for path, content in FILES.items():
        CodeFile.objects.create(codebase=codebase, path=path, content=content, size=len(content))
    CodeFile.objects.create(
        codebase=codebase, path=".env", content="_encode_token=1", withheld_reason="secret"
    )
    quality = judge(
        NAMES,
        PATHS,
        task="Add an `ExpiryPolicy`",
        index_folder=indexed(tmp_path),
        codebase_id=codebase.pk,
    )
    # `make_token` is called in auth.py; `_encode_token` only in a withheld file: invented.
    assert quality.invented_names == ["todo.auth._encode_token"]


def test_a_name_a_step_sketch_defines_is_not_invented(tmp_path):
    step = {
        "title": "Add `expiry_of`",
        "detail": "New helper `expiry_of`.",
        "sketch": {"before": ["return None"], "after": ["def expiry_of(token):"]},
    }
    quality = judge(plan(steps=[step]), PATHS, task="", index_folder=indexed(tmp_path))
    assert quality.invented_names == []


def test_the_quality_line_counts_what_the_plan_amounts_to(tmp_path):
    folder = indexed(tmp_path)
    steps = [
        {
            "title": "Expire",
            "detail": "Change `TokenStore.expire`.",
            "target": {"kind": "definition", "name": "TokenStore.expire", "path": "todo/auth.py"},
            "sketch": {"before": ["return None"], "after": ["return 1"], "checked": True},
        },
        {"title": "Add", "detail": "A helper.", "target": {"kind": "new", "path": "todo/api.py"}},
    ]
    data = plan(steps=steps, testing=["Run `tests/test_auth.py`."])
    data["files"].append({"path": "todo/nowhere.py", "action": "modify", "reason": "?"})
    quality = judge(data, PATHS, task="", index_folder=folder, related=Navigator(folder).related)
    assert quality.line() == (
        "2 steps · 1 on real definitions · 1 new definition · 1 sketch checked · "
        "1 invented path · 0 invented names · 2 files (1 that no step changes) · "
        "tests: `tests/test_auth.py` (imports the changed module)"
    )
    assert Quality.from_dict(quality.as_dict()) == quality


def test_a_file_no_step_changes_is_counted_and_named_as_a_problem(tmp_path):
    # The requests walk (local-1.5b): four files listed as "modify" that no step changed.
    steps = [
        {"title": "Fix", "detail": "In `todo/auth.py`.", "files": []},
        {"title": "Route", "detail": "Call it.", "files": ["todo/api.py"]},
    ]
    data = plan(steps=steps, testing=["Extend `tests/test_auth.py`."])
    data["files"] += [
        {"path": "todo/api.py", "action": "modify", "reason": "route"},
        {"path": "tests/test_auth.py", "action": "modify", "reason": "a test"},
        {"path": "todo/other.py", "action": "create", "reason": "nothing says why"},
    ]
    quality = judge(data, PATHS, task="", index_folder=indexed(tmp_path))
    assert quality.without_step == ["todo/other.py"]
    assert "4 files (1 that no step changes)" in quality.line()
    assert "`todo/other.py` is in Files, but no step changes it." in quality.problems()
    data["steps"][0]["detail"] = "Nothing named."
    again = judge(data, PATHS, task="", index_folder=indexed(tmp_path / "b"))
    assert again.without_step == ["todo/auth.py", "todo/other.py"]


STRIP = {"path": "requests/sessions.py", "start": 118, "lines": [
    "    def should_strip_auth(self, old_url, new_url):",
    "        old_parsed = urlparse(old_url)",
    "        if old_parsed.hostname != new_parsed.hostname:",
    "            return True",
    '        return old_parsed.port != new_parsed.port or old_parsed.scheme != "https"',
]}  # fmt: skip


def test_code_a_step_changes_that_its_code_lacks_is_named():
    # The requests walk (local-1.5b): "Remove the line `self._r.headers.pop('Content-Length')`"
    # from `should_strip_auth`, a line in no file of the codebase.
    def step(detail):
        return {"title": "Change `should_strip_auth`", "detail": detail, "code": STRIP}

    invented = "self._r.headers.pop('Content-Length')"
    assert unquoted(step(f"Remove the line `{invented}` and `return True`.")) == [invented]
    # In the code (spacing and quote marks aside), a name alone, or the new code: no claim.
    assert unquoted(step("Change the condition `old_parsed.hostname!=new_parsed.hostname`.")) == []
    assert unquoted(step("Replace `old_parsed.scheme != 'https'` with `x`.")) == []
    assert unquoted(step("Change `should_strip_auth` and `urlparse()`.")) == []
    assert unquoted(step("Add `if old_parsed.port is None:` before the return.")) == []
    assert unquoted({**step(f"Remove `{invented}`."), "code": {}}) == []  # no code shown
    assert unquoted(step(f"Xóa dòng `{invented}`.")) == [invented]


def test_the_plan_names_a_changed_quote_its_code_lacks_under_the_step(tmp_path):
    invented = "self._r.headers.pop('Content-Length')"
    steps = [{"title": "Strip less", "detail": f"Remove `{invented}`.", "code": STRIP,
              "target": {"kind": "definition", "name": "SessionRedirectMixin.should_strip_auth",
                         "path": "requests/sessions.py", "start": 118, "end": 122}}]  # fmt: skip
    quality = judge(plan(steps=steps), PATHS, task="", index_folder=indexed(tmp_path))
    assert quality.unquoted == [invented]
    assert "1 quote not in the code shown" in quality.line()
    assert Quality.from_dict(quality.as_dict()) == quality
    text = render_plan({**plan(steps=steps), "quality": quality.as_dict()}, PATHS, title="t")
    assert f"**Not in this code:** the step changes `{invented}`" in text
    clean = judge(plan(), PATHS, task="", index_folder=indexed(tmp_path / "b"))
    assert "not in the code shown" not in clean.line()


def test_without_named_tests_the_line_offers_the_tests_of_the_changed_files(tmp_path):
    folder = indexed(tmp_path)
    quality = judge(plan(), PATHS, task="", index_folder=folder, related=Navigator(folder).related)
    assert quality.line().endswith(
        "tests not named; `tests/test_auth.py` (imports the changed module)"
    )


def test_the_plan_document_shows_the_quality_line_under_its_title(tmp_path):
    data = plan()
    data["quality"] = judge(data, PATHS, task="", index_folder=indexed(tmp_path)).as_dict()
    markdown = render_plan(data, PATHS, title="Expire tokens")
    assert "> **Checked by the app.** 1 step · 0 on real definitions" in markdown
    assert markdown.index("Checked by the app") < markdown.index("## Summary")
