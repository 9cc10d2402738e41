"""The task's own words are looked up before any model plans: the files it names, the
definitions it writes as code and the lines it quotes, each resolved or said not found; what
only an example or the task's own snippet defines is not taken for the project's code."""

import pytest

from agents.investigation.task_names import (
    IMPORT_NOTE,
    TEST_DEFINITION_NOTE,
    named_files,
    named_in_task,
)
from rag import profile
from rag.navigation import Navigator
from rag.paths import FileSet

FILES = {
    "pkg/__init__.py": "",
    "pkg/mixins.py": "class ClosingMixin:\n    def close(self):\n        return 'closed'\n",
    "pkg/sessions.py": (
        "from pkg.mixins import ClosingMixin\n"
        "\n"
        "\n"
        "class Session(ClosingMixin):\n"
        "    def request(self, x):\n"
        "        x = str(x)\n"
        "        return x\n"
    ),
    "pkg/compat.py": "import sys\nif sys.version_info[0] == 2:\n    text_type = unicode\nelse:\n    text_type = str\n",
    "pkg/utils.py": "def join(a, b):\n    return a + b\n",
    "examples/demo.py": "iris = load('iris')\n\n\ndef plot_demo():\n    y = str(iris)\n",
    "docs/conf.py": "project = 'pkg'\n",
}


@pytest.fixture
def world(tmp_path):
    profile.write(tmp_path, profile.analyze(profile.sources(FILES)))
    return FileSet(FILES), Navigator(tmp_path, texts=lambda needles: FILES.items())


def found(items):
    return [(n.kind, n.written, n.path, n.line) for n in items if n.found]


def test_a_quoted_line_is_found_word_for_word_and_cited_at_its_line(world):
    paths, nav = world
    items = named_in_task(
        "Calling request turns bytes into text: `x=str( x )` is wrong.", paths, nav
    )
    line = next(n for n in items if n.kind == "line")
    assert (line.path, line.line) == ("pkg/sessions.py", 6)
    # Its card shows the definition around it, so a step can target that definition.
    assert (line.tool, line.argument) == ("find_symbol", "pkg/sessions.py::Session.request")
    assert line.qualified_name == "Session.request"
    assert line.reason == "The task quotes line 6 of `pkg/sessions.py`: `x=str( x )`"


def test_a_line_quoted_in_a_code_block_or_a_diff_is_found_too(world):
    paths, nav = world
    task = "Fix this:\n\n```diff\n-        x = str(x)\n+        x = x.decode()\n```\n"
    assert ("line", "x = str(x)", "pkg/sessions.py", 6) in found(named_in_task(task, paths, nav))


def test_a_file_path_the_task_names_is_looked_up(world):
    paths, nav = world
    items = named_in_task("The bug is in sessions.py (see pkg/compat.py:3).", paths, nav)
    assert found(items) == [
        ("path", "sessions.py", "pkg/sessions.py", 0),
        ("path", "pkg/compat.py:3", "pkg/compat.py", 3),
    ]
    assert [(n.tool, n.argument) for n in items] == [
        ("outline", "pkg/sessions.py"),
        ("read_file", "pkg/compat.py:1-33"),
    ]


def test_names_written_as_code_resolve_an_inherited_method_to_its_mixin(world):
    paths, nav = world
    items = named_in_task("`Session.close()` leaks; so does pkg.compat.text_type", paths, nav)
    names = {n.written: n for n in items if n.kind == "name"}
    assert (names["Session.close"].path, names["Session.close"].qualified_name) == (
        "pkg/mixins.py",
        "ClosingMixin.close",
    )
    assert names["pkg.compat.text_type"].path == "pkg/compat.py"
    assert names["Session.close"].reason == "The task names `Session.close`, defined here"


def test_a_name_only_an_example_defines_is_not_looked_up_as_source(world):
    paths, nav = world
    task = "```python\niris = load('iris')\nplot_demo()\n```\nThen `iris` and `plot_demo()` fail."
    items = named_in_task(task, paths, nav)
    assert found(items) == []
    notes = {n.written: n.note for n in items}
    assert notes["iris"] == "defined only in examples, docs or vendored files"
    assert notes["plot_demo"] == "defined only in examples, docs or vendored files"
    # The snippet's own line is in examples/ only: no source line to cite.
    assert "y = str(iris)" not in [n.written for n in items if n.found]


def test_another_librarys_dotted_name_does_not_take_a_local_definition(world):
    paths, nav = world
    items = named_in_task("It calls `os.path.join(a, b)` on bytes.", paths, nav)
    assert found(items) == []


def test_named_files_gives_each_file_once_with_its_reason(world):
    paths, nav = world
    task = "In pkg/sessions.py, `x = str(x)` breaks `Session.request`; `ClosingMixin.close` too."
    assert named_files(task, paths, nav) == [
        ("pkg/sessions.py", "The task quotes line 6 of `pkg/sessions.py`: `x = str(x)`"),
        ("pkg/mixins.py", "The task names `ClosingMixin.close`, defined here"),
    ]


def test_without_file_texts_quoted_lines_are_skipped_not_claimed_missing(world, tmp_path):
    paths, _ = world
    bare = Navigator(tmp_path)
    items = named_in_task("`x = str(x)` in pkg/sessions.py", paths, bare)
    assert [n.kind for n in items] == ["path"]


def test_a_long_task_is_read_in_linear_time(world):
    paths, nav = world
    task = "a" * 15000 + "()" + " " * 5000 + "\n" + " " * 8000 + "-" * 3000
    assert named_in_task(task, paths, nav) == []


def test_a_name_the_tasks_own_snippet_assigns_is_its_local_not_the_modules(world):
    paths, nav = world
    task = "```python\ntext_type = load()\nshow(text_type)\n```\nWhy does `text_type` print None?"
    items = {n.written: n for n in named_in_task(task, paths, nav) if n.kind == "name"}
    assert not items["text_type"].found
    assert items["text_type"].note == "a name the task's own snippet assigns"


# A walk on requests 2.32.3 with issue #3829 put `src/requests/auth.py` in the plan's Files
# because the reproduction snippet has `import os`, and missed the one source line that
# reads `REQUESTS_CA_BUNDLE`. Text that many files hold says nothing about where; text the
# code does not define but writes in one source file says exactly where.
LIBRARY = {
    "lib/__init__.py": "",
    "lib/sessions.py": (
        "import os\n"
        "\n"
        "\n"
        "class Session:\n"
        "    def merge_environment_settings(self, verify):\n"
        "        if verify is True or verify is None:\n"
        "            verify = os.environ.get('LIB_CA_BUNDLE') or verify\n"
        "        return verify\n"
    ),
    "lib/auth.py": "import os\n\n\ndef token():\n    return os.environ.get('LIB_TOKEN')\n",
    "lib/hooks.py": "HOOKS = ['response']\nlog('LIB_DEBUG')\n",
    "lib/adapters.py": "log('LIB_DEBUG')\n",
    "tools/release.py": "import lib\n\nprint(lib.__name__)\n",
    "lib/zarr.py": "def check(var):\n    return var.dtype==object\n",
    "lib/data.py": 'def load(name):\n    """A dataset.\n\n    >>> ds = lib.load("iris")\n    """\n',
    "lib/mapping.py": (
        "class Mapping:\n"
        "    def lookup(self, key):\n"
        "        return self.table[key]\n"
        "\n"
        "\n"
        "class HueMapping(Mapping):\n"
        "    def lookup(self, key):\n"
        "        try:\n"
        "            return self.table[key]\n"
        "        except KeyError:\n"
        "            if np.isnan(key):\n"
        "                return (0, 0, 0, 0)\n"
        "            raise\n"
    ),
    "lib/plots.py": (
        "def lineplot(p, ax, kwargs):\n    p.plot(ax, kwargs)\n\n\n"
        "def scatterplot(p, ax, kwargs):\n    p.plot(ax, kwargs)\n"
    ),
    "tests/test_sessions.py": (
        "import os\n\nos.environ['LIB_CA_BUNDLE'] = '/x'\n\n\n"
        "class Duck:\n    def unit(self):\n        return 'm'\n"
    ),
}


@pytest.fixture
def library(tmp_path):
    profile.write(tmp_path, profile.analyze(profile.sources(LIBRARY)))
    return FileSet(LIBRARY), Navigator(tmp_path, texts=lambda needles: LIBRARY.items())


def test_a_line_many_source_files_hold_pins_no_file_and_says_why(library):
    paths, nav = library
    task = "```python\nimport lib\nlog('LIB_DEBUG')\n```\nThe debug log is written twice."
    items = named_in_task(task, paths, nav)
    assert named_files(task, paths, nav) == []
    line = next(n for n in items if n.written == "log('LIB_DEBUG')")
    assert not line.found
    assert (
        line.note
        == "in 2 files (`lib/hooks.py`, `lib/adapters.py`), so it does not say which to change"
    )


def test_an_import_the_task_quotes_pins_no_file_even_when_one_file_holds_it(library):
    # seaborn-2848: `import seaborn as sns` from the reproduction was in one project file, a
    # CI script, and the plan listed that script to modify.
    paths, nav = library
    task = "```python\nimport lib\nfrom lib import hooks\ns = lib.Session()\n```\nIt fails."
    items = named_in_task(task, paths, nav)
    assert named_files(task, paths, nav) == []
    for written in ("import lib", "from lib import hooks"):
        line = next(n for n in items if n.written == written)
        assert (line.found, line.note) == (False, IMPORT_NOTE)


def test_a_definition_line_found_only_in_tests_pins_no_file_but_a_statement_does(library):
    # astropy-13977: the reporter's example class has `def unit(self):`; one test file defines
    # the same header, and the plan listed that test file to change.
    paths, nav = library
    task = (
        "```python\nclass Duck:\n    def unit(self):\n        return 'm'\n\n"
        "os.environ['LIB_CA_BUNDLE'] = '/x'\n```\nDuck arrays fail."
    )
    items = named_in_task(task, paths, nav)
    header = next(n for n in items if n.written == "def unit(self):")
    assert (header.found, header.note) == (False, TEST_DEFINITION_NOTE)
    assert [path for path, _why in named_files(task, paths, nav)] == ["tests/test_sessions.py"]


# seaborn-2848: six statements of the reproduction and IPython's header filled the lookups,
# and the line the traceback fails at, which one method holds, was never looked up.
IPYTHON_TASK = """It fails:
```python
import lib
a = lib.load("iris")
b = lib.Grid(a, rows=["x", "y"])
b.map(lib.scatter, hue=a["species"])
b.map(lib.reg, scatter=False)
c = b.figure
d = c.axes
```
```
---------------------------------------------------------------------------
KeyError                                  Traceback (most recent call last)
~/site-packages/lib/plots.py in scatterplot(p, ax, kwargs)
      4
----> 5     p.plot(ax, kwargs)

~/site-packages/lib/mapping.py in lookup(self, key)
     10         except KeyError:
---> 11             if np.isnan(key):
     12                 return (0, 0, 0, 0)

TypeError: ufunc 'isnan' not supported
```
"""


def test_the_line_a_traceback_fails_at_is_looked_up_first_and_pins_its_definition(library):
    paths, nav = library
    items = named_in_task(IPYTHON_TASK, paths, nav)
    lines = [n for n in items if n.kind == "line"]
    assert (lines[0].written, lines[0].path, lines[0].line, lines[0].qualified_name) == (
        "if np.isnan(key):",
        "lib/mapping.py",
        11,
        "HueMapping.lookup",
    )
    assert lines[0].tool == "find_symbol"


def test_ipythons_traceback_header_is_not_a_quoted_line(library):
    paths, nav = library
    task = "```\nKeyError            Traceback (most recent call last)\n----> 5 x = f(y)\n```"
    assert [n.written for n in named_in_task(task, paths, nav) if n.kind == "line"] == ["x = f(y)"]


def test_a_line_one_file_holds_in_two_definitions_pins_the_file_not_a_definition(library):
    paths, nav = library
    items = named_in_task(IPYTHON_TASK, paths, nav)
    line = next(n for n in items if n.written == "p.plot(ax, kwargs)")
    assert (line.path, line.line, line.qualified_name, line.tool) == (
        "lib/plots.py",
        2,
        "",
        "read_file",
    )


def test_a_line_in_one_source_file_and_its_tests_pins_the_source_file(library):
    paths, nav = library
    task = "This line ignores the session: `verify = os.environ.get('LIB_CA_BUNDLE') or verify`"
    assert found(named_in_task(task, paths, nav)) == [
        ("line", "verify = os.environ.get('LIB_CA_BUNDLE') or verify", "lib/sessions.py", 7)
    ]


def test_a_backticked_word_the_code_writes_but_does_not_define_is_found_where_written(library):
    paths, nav = library
    task = "Session.verify=False is ignored when the `LIB_CA_BUNDLE` environment variable is set."
    item = next(n for n in named_in_task(task, paths, nav) if n.written == "LIB_CA_BUNDLE")
    # In lib/sessions.py and in a test: the source file is where the change goes.
    assert (item.path, item.line, item.qualified_name) == (
        "lib/sessions.py",
        7,
        "Session.merge_environment_settings",
    )
    assert item.argument == "lib/sessions.py::Session.merge_environment_settings"
    assert item.reason == (
        "The task names `LIB_CA_BUNDLE`, which the code does not define; it is written at "
        "line 7 of `lib/sessions.py`"
    )
    assert named_files(task, paths, nav) == [("lib/sessions.py", item.reason)]


def test_a_backticked_word_written_in_several_source_files_pins_none(library):
    paths, nav = library
    task = "Setting `LIB_DEBUG` logs nothing."
    item = next(n for n in named_in_task(task, paths, nav) if n.written == "LIB_DEBUG")
    assert not item.found
    assert named_files(task, paths, nav) == []


def test_a_line_found_only_in_a_docstrings_example_pins_no_file(library):
    # seaborn-2848: the reproduction's `iris = sns.load_dataset("iris")` was found in
    # `clustermap`'s docstring (`>>> iris = …`), and the plan listed seaborn/matrix.py.
    paths, nav = library
    task = '```python\nds = lib.load("iris")\nds.plot()\n```\nThe plot is empty.'
    assert named_files(task, paths, nav) == []
    line = next(n for n in named_in_task(task, paths, nav) if n.written == 'ds = lib.load("iris")')
    assert (line.found, line.note) == (False, "only in examples, docs or vendored files")


def test_a_comparison_the_task_writes_as_code_quotes_no_line(library):
    # xarray-2905: "arrays of `dtype==object`" pinned the one file that writes it.
    paths, nav = library
    task = "Assigning to arrays of `dtype==object` coerces objects with a `.values` property."
    assert named_files(task, paths, nav) == []
    assert not [n for n in named_in_task(task, paths, nav) if n.kind == "line"]
    # A statement with a comparison in it is still a line.
    line = "return var.dtype==object"
    assert found(named_in_task(f"This line is wrong: `{line}`", paths, nav)) == [
        ("line", line, "lib/zarr.py", 2)
    ]
