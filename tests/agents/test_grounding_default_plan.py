"""The evidence plan the app makes when the model's is unusable looks up the task's own names,
never the language's: on pylint-4551 the 0.5B model's plan was cut off and the app's plan spent
a step on `find_symbol None`."""

import pytest
from channels.db import database_sync_to_async

from agents.investigation.session import copies_the_guide, default_steps, frame_names
from agents.providers.fake import FakeProvider
from conversations.models import Message
from tests.conversations.conftest import jobs_drained, start  # noqa: F401 (fixtures)
from tests.conversations.wsclient import Client

TASK = (
    "Use Python type hints for UML generation: pyreverse ignores `None` defaults in "
    "`ClassDiagram`, and `self` attributes set from `get_annotation`."
)


def test_the_default_plan_looks_up_the_tasks_names_not_python_builtins():
    looked_up = [s.argument for s in default_steps(TASK) if s.tool == "find_symbol"]
    assert looked_up == ["ClassDiagram", "get_annotation"]


# seaborn-2848's traceback (IPython's format, cut down): the error surfaced in
# `_lookup_single`, in seaborn/_core.py at the reporter's version, seaborn/_oldcore.py here.
TRACEBACK_TASK = """PairGrid errors with `hue` assigned in `map`
```
KeyError                                  Traceback (most recent call last)
<ipython-input-3-abc> in <module>
----> 1 g.map(sns.scatterplot, hue=iris["species"])

~/envs/py3.9/lib/python3.8/site-packages/seaborn/axisgrid.py in map(self, func, **kwargs)
   1263         row_indices, col_indices = np.indices(self.axes.shape)
-> 1265         self._map_bivariate(func, indices, **kwargs)

~/envs/py3.9/lib/python3.8/site-packages/seaborn/_core.py in _lookup_single(self, key)
    149                 normed = self.norm(key)

~/envs/py3.9/lib/python3.8/site-packages/pandas/core/series.py in _get_value(self, label)
   1000         return self.index.get_value(self, label)
```"""
SEABORN = ["seaborn/__init__.py", "seaborn/_oldcore.py", "seaborn/axisgrid.py", "setup.py"]


def test_the_default_plan_looks_up_where_a_traceback_failed_in_the_codebase_first():
    steps = [s for s in default_steps(TRACEBACK_TASK, SEABORN) if s.tool == "find_symbol"]
    # The innermost frame of ours, though its file moved since; not pandas's frame below it,
    # not the script's `<module>`.
    assert steps[0].argument == "_lookup_single"
    assert steps[0].why == "where the traceback failed: _lookup_single"
    assert "_get_value" not in [s.argument for s in steps]
    # Without the codebase's files no frame is known to be ours.
    assert "_lookup_single" not in [s.argument for s in default_steps(TRACEBACK_TASK)]


def test_a_traceback_into_a_file_of_the_codebase_counts_without_a_package():
    task = (
        "Crash:\n"
        "Traceback (most recent call last):\n"
        '  File "/home/me/proj/tools/build.py", line 9, in run_build\n'
        "    compile_all()\n"
        '  File "/usr/lib/python3/json/decoder.py", line 3, in decode\n'
        "    raise ValueError\n"
        "ValueError: boom"
    )
    assert frame_names(task, ["tools/build.py", "README.md"]) == ["run_build"]
    assert frame_names(task, ["tools/other.py"]) == []


ASTROPY_TASK = (
    "Subclassed SkyCoord gives misleading attribute access message\n"
    "```\n"
    "Traceback (most recent call last):\n"
    '  File "test.py", line 11, in <module>\n'
    "    c.prop\n"
    '  File "/Users/me/miniconda3/lib/python3.7/site-packages/astropy/coordinates/'
    'sky_coordinate.py", line 600, in __getattr__\n'
    "    .format(self.__class__.__name__, attr))\n"
    "AttributeError: 'custom_coord' object has no attribute 'prop'\n"
    "```"
)
ASTROPY = ["astropy/__init__.py", "astropy/coordinates/sky_coordinate.py", "astropy/units/core.py"]


def test_a_traceback_failing_in_a_protocol_method_of_a_known_file_looks_it_up_in_that_file():
    # astropy-14096: the error surfaces in `SkyCoord.__getattr__`, the definition the fix
    # changed; `__getattr__` alone names a method of every other class too.
    assert frame_names(ASTROPY_TASK, ASTROPY) == [
        "astropy/coordinates/sky_coordinate.py::__getattr__"
    ]
    steps = [s for s in default_steps(ASTROPY_TASK, ASTROPY) if s.tool == "find_symbol"]
    assert steps[0].argument == "astropy/coordinates/sky_coordinate.py::__getattr__"
    assert steps[0].why == "where the traceback failed: __getattr__"
    # The same frame in a file of the package this codebase does not hold names no place.
    moved = ["astropy/__init__.py", "astropy/coordinates/sky.py"]
    assert frame_names(ASTROPY_TASK, moved) == []


def test_steps_that_copy_the_tool_guide_are_not_run():
    assert copies_the_guide("find_symbol(name)")
    assert copies_the_guide(" query ")
    assert not copies_the_guide("E1")  # a reference to another step's file
    assert not copies_the_guide("ClassDiagram")
    assert not copies_the_guide("seaborn/_core/plot.py:1-40")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_a_session_runs_the_models_real_lookups_and_not_the_guides_examples(
    start,  # noqa: F811
    user,
    settings,
):
    settings.PLANAGENTS_EVIDENCE_STEPS = 6
    plan = {
        "steps": [
            {"id": "E1", "tool": "search", "argument": "find_symbol(name)", "why": "copied",
             "depends_on": [], "kind": "independent"},
            {"id": "E2", "tool": "find_references", "argument": "TokenStore", "why": "users",
             "depends_on": [], "kind": "independent"},
        ],
        "next_action": "synthesize",
    }  # fmt: skip
    proposal = {
        "summary": "Expire tokens.",
        "steps": [
            {
                "title": "Expire",
                "symbol": "none",
                "detail": "In `todo/auth.py:1`.",
                "files": ["todo/auth.py"],
            }
        ],
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "TokenStore"}],
        "new_files": [],
    }
    FakeProvider.script(
        "fake", plan, "TokenStore is in `todo/auth.py:1`.", proposal, "Fine.", "Fine."
    )
    session = await start(task="Make the token store drop old tokens")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()
    ran = await database_sync_to_async(
        lambda: [
            (m.data["evidence"]["tool"], m.data["evidence"]["argument"])
            for m in Message.objects.filter(session=session, node="investigate", role="system")
        ]
    )()
    assert ("find_references", "TokenStore") in ran
    assert all(argument != "find_symbol(name)" for _, argument in ran)


# pylint-4551's issue, as written: a screenshot whose file name reads like code, and an example
# class the reporter wrote to show the problem.
EXAMPLE_TASK = """Use Python type hints for UML generation
It seems that pyreverse does not read python type hints (as defined by [PEP 484](https://www.python.org/dev/peps/pep-0484/)):

### Code example
```
class C(object):
    def __init__(self, a: str = None, *rest, **options):
        self.a = a
```

### Current behavior

![classes_test](https://user-images.githubusercontent.com/22218701/27432305-f10fe03e.png)

I would like `get_annotation` to be used."""


def test_a_screenshots_name_and_an_addresss_words_are_not_looked_up():
    looked_up = [s.argument for s in default_steps(EXAMPLE_TASK) if s.tool == "find_symbol"]
    assert "classes_test" not in looked_up
    assert "get_annotation" in looked_up


def test_what_the_tasks_example_defines_is_known():
    from agents.investigation.task_names import example_names

    assert example_names(EXAMPLE_TASK) == {"C", "__init__", "a", "rest", "options"}
    assert example_names("Nothing but prose about `Session.send`.") == set()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_a_session_does_not_spend_lookups_on_names_only_the_tasks_example_defines(
    start,  # noqa: F811
    user,
    settings,
):
    settings.PLANAGENTS_EVIDENCE_STEPS = 6
    plan = {
        "steps": [
            {"id": "E1", "tool": "find_symbol", "argument": "C", "why": "the class",
             "depends_on": [], "kind": "independent"},
            {"id": "E2", "tool": "find_references", "argument": "C.__init__", "why": "callers",
             "depends_on": [], "kind": "independent"},
            {"id": "E3", "tool": "find_symbol", "argument": "TokenStore", "why": "the store",
             "depends_on": [], "kind": "independent"},
            # The 1.5B model's way: a path tool given the example's class.
            {"id": "E4", "tool": "outline", "argument": "C", "why": "the class",
             "depends_on": [], "kind": "independent"},
        ],
        "next_action": "synthesize",
    }  # fmt: skip
    proposal = {
        "summary": "Expire tokens.",
        "steps": [{"title": "Expire", "symbol": "none", "detail": "In `todo/auth.py:1`.",
                   "files": ["todo/auth.py"]}],
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "TokenStore"}],
        "new_files": [],
    }  # fmt: skip
    FakeProvider.script("fake", "TokenStore is in `todo/auth.py:1`.", plan, proposal, "Fine.")
    task = "Make the token store drop old tokens, as in\n```\nclass C(TokenStore):\n    pass\n```"
    session = await start(task=task)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()

    def looked_up():
        return [
            (m.data["evidence"]["tool"], m.data["evidence"]["argument"])
            for m in Message.objects.filter(session=session, node="investigate", role="system")
        ], Message.objects.get(session=session, node="investigate", role="agent").content

    ran, shown = await database_sync_to_async(looked_up)()
    assert ("find_symbol", "TokenStore") in ran
    assert not [a for _, a in ran if a.split(".")[0] == "C"]
    assert "of the model's 4 step(s) left out" in shown
    assert "names only the task's example defines" in shown
