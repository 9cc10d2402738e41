"""What the app decides about a plan's files, whatever the model chose: vendored and generated
files stay out unless the task names them; a file the task names is in, saying so."""

import pytest

from agents.investigation.evidence import Evidence
from agents.planning.nodes import NodeContext
from conversations.models import PlanningSession, PlanningState
from rag.models import Codebase, CodeFile
from rag.paths import FileSet

FILES = {
    "requests/sessions.py": "source",
    "requests/models.py": "source",
    "requests/packages/urllib3/util.py": "vendored",
    "docs/_build/index.html": "generated",
}


def context(user, task):
    codebase = Codebase.objects.create(owner=user, name="requests", status="ready")
    for path, role in FILES.items():
        CodeFile.objects.create(codebase=codebase, path=path, role=role, content="x = 1\n")
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, task=task, agent_a_profile="fake", agent_b_profile="fake"
    )
    state = PlanningState.objects.create(session=session)
    found = Evidence(1, "search", task, "the task", True, "1 hit", "requests/sessions.py", 1, 1)
    return NodeContext(session, state, paths=FileSet(FILES), evidence=[found])


def plan():
    return {
        "steps": [
            {
                "title": "Fix",
                "detail": "Encode the header.",
                "files": ["requests/sessions.py", "requests/packages/urllib3/util.py"],
            }
        ],
        "files": [
            {"path": "requests/packages/urllib3/util.py", "action": "modify", "reason": "?"},
            {"path": "docs/_build/index.html", "action": "delete", "reason": "?"},
            {"path": "requests/sessions.py", "action": "modify", "reason": "the fix"},
        ],
    }


@pytest.mark.django_db
def test_vendored_and_generated_files_leave_the_plans_files_and_steps(user):
    ctx = context(user, "Sessions send a str header as bytes")
    data = ctx.fill_files(plan())
    assert [f["path"] for f in data["files"]] == ["requests/sessions.py"]
    assert data["steps"][0]["files"] == ["requests/sessions.py"]
    assert ctx.set_aside() == {"requests/packages/urllib3/util.py", "docs/_build/index.html"}


@pytest.mark.django_db
def test_a_vendored_file_the_task_names_stays_in(user):
    ctx = context(user, "The bug is in requests/packages/urllib3/util.py, in `split_first`")
    data = ctx.fill_files(plan())
    assert [f["path"] for f in data["files"]] == [
        "requests/packages/urllib3/util.py",
        "requests/sessions.py",
    ]
    assert ctx.set_aside() == {"docs/_build/index.html"}


@pytest.mark.django_db
def test_a_file_the_task_names_is_in_the_plan_saying_the_app_added_it(user):
    ctx = context(user, "`requests/sessions.py` sends a str header as bytes")
    chosen = {"path": "requests/models.py", "action": "modify", "reason": "headers"}
    data = ctx.fill_files({"steps": [], "files": [chosen]})
    assert data["files"] == [
        chosen,
        {
            "path": "requests/sessions.py",
            "action": "modify",
            "reason": "The task names `requests/sessions.py`; added by the app.",
        },
    ]


@pytest.mark.django_db
def test_no_step_may_change_a_definition_of_a_vendored_file_the_task_does_not_name(
    user, monkeypatch
):
    from agents.planning import nodes
    from rag.navigation import OutlineEntry, OutlineResult
    from rag.retrieval import Hit

    outlines = {
        "requests/sessions.py": [OutlineEntry("merge_setting", "function", 1, 9, 0)],
        "requests/packages/urllib3/util.py": [OutlineEntry("split_first", "function", 1, 9, 0)],
    }

    class Navigator:
        def __init__(self, folder):
            pass

        def outline(self, path):
            return OutlineResult(path, path, entries=outlines.get(path, []))

    monkeypatch.setattr(nodes, "Navigator", Navigator)

    def offered(task):
        ctx = context(user, task)
        ctx.hits = [Hit("requests/packages/urllib3/util.py", 1, 9, "def split_first(): …", 1, "")]
        ctx.further = [Hit(path, 1, 9, "…", 0.5, "") for path in outlines]
        return set(ctx.definitions())

    # Shown or only ranked next, the vendored file's definitions are not offered…
    assert offered("Sessions send a str header as bytes") == {"merge_setting"}
    # …unless the task names the file.
    named = "The bug is in requests/packages/urllib3/util.py, in `split_first`"
    assert offered(named) == {"merge_setting", "split_first"}


@pytest.mark.django_db
def test_a_file_whose_reason_is_the_apps_words_is_the_apps_to_add(user):
    # astropy-13977 on the 1.5B model: the plan listed seven more files, each "The task names
    # `__rlshift__` …, defined here; added by the app", copying the approved proposal's rows.
    ctx = context(user, "`requests/sessions.py` sends a str header as bytes")
    copied = [
        {"path": "requests/models.py", "action": "modify",
         "reason": "The task names `Request.prepare`, defined here; added by the app."},
        {"path": "requests/sessions.py", "action": "modify",
         "reason": "The task names `requests/sessions.py`; added by the app."},
    ]  # fmt: skip
    data = ctx.fill_files({"steps": [], "files": copied})
    # The file the task does name is there once, with the app's reason; the other is gone.
    assert data["files"] == [
        {
            "path": "requests/sessions.py",
            "action": "modify",
            "reason": "The task names `requests/sessions.py`; added by the app.",
        }
    ]


ARRAYS = """class Variable:
    def __setitem__(self, key, value):
        pass


class DataArray:
    @property
    def values(self):
        return 1

    def __setitem__(self, key, value):
        pass
"""


@pytest.mark.django_db
def test_the_codebases_definitions_are_found_by_bare_and_by_class_and_method_name(
    user, tmp_path, monkeypatch
):
    from rag import index as rag_index
    from rag import profile

    profile.build_into(tmp_path, profile.sources({"xarray/core/arrays.py": ARRAYS}))
    monkeypatch.setattr(rag_index, "index_dir", lambda codebase_id: tmp_path)
    ctx = context(user, "Variable.__setitem__ coerces objects with a values property")
    # "Modify `__setitem__` in `DataArray`" is looked up as `DataArray.__setitem__`.
    assert [name for name, _ in ctx.defined("DataArray.__setitem__")] == ["DataArray.__setitem__"]
    assert ctx.defined("DataArray.__setitem__")[0][1].line == 11
    assert sorted(name for name, _ in ctx.defined("__setitem__")) == [
        "DataArray.__setitem__",
        "Variable.__setitem__",
    ]
    # A class that neither defines nor inherits the method: nothing, not its namesakes.
    assert ctx.defined("Dataset.__setitem__") == []
