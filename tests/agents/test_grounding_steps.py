"""Plan steps cite only code the agents were shown: a line number no evidence or retrieved chunk
holds is dropped, and a step citing nothing gets a `path:line` from the sources of its files."""

import pytest
from channels.db import database_sync_to_async

from agents.citations import (
    NEW_DEFINITION,
    Definition,
    Source,
    cite_symbols,
    extract_citations,
    ground_steps,
    offered_definitions,
    shown_definitions,
)
from agents.echoes import is_copied, without_repeated_steps
from agents.investigation.session import load_evidence
from agents.providers.fake import FakeProvider
from agents.transcript import retrieve_for
from conversations.models import Plan
from rag.navigation import OutlineEntry, OutlineResult
from rag.paths import FileSet, find_citations
from tests.conversations.conftest import jobs_drained, start  # noqa: F401 (fixtures)
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

PATHS = FileSet(["todo/auth.py", "todo/api.py", "todo/storage.py"])
SOURCES = [Source("todo/auth.py", 10, 30, "E2"), Source("todo/api.py", 1, 40)]


def step(detail, files=()):
    return {"title": "Do it", "detail": detail, "files": list(files)}


OUTLINES = {
    "todo/auth.py": [OutlineEntry("TokenStore", "class", 12, 40, 0),
                     OutlineEntry("issue", "method", 15, 20, 1, "TokenStore"),
                     OutlineEntry("expire", "method", 31, 40, 1, "TokenStore"),
                     OutlineEntry("LIMIT", "variable", 11, 11, 0),
                     OutlineEntry("helper", "function", 2, 5, 0)],
    "todo/api.py": [OutlineEntry("login", "function", 3, 9, 0),
                    OutlineEntry("issue", "method", 20, 24, 1, "TokenStore")],
}  # fmt: skip


def outline(path):
    return OutlineResult(path, path if path in OUTLINES else None, entries=OUTLINES.get(path, []))


def test_the_definitions_a_step_may_name_are_those_starting_in_the_lines_shown():
    found = shown_definitions([*SOURCES, Source("gone.py", 1, 9)], outline)
    # auth.py shows lines 10-30: TokenStore and its issue, not expire (31), helper (2) or a
    # variable; the same name in a later source keeps its first place.
    assert found == {
        "TokenStore": ("todo/auth.py", 12, 40),
        "TokenStore.issue": ("todo/auth.py", 15, 20),
        "login": ("todo/api.py", 3, 9),
    }
    assert len(shown_definitions(SOURCES, outline, limit=2)) == 2


def test_a_span_shown_from_inside_a_definition_offers_that_definition():
    # A long method's second chunk (or a search hit in its body) shows its code without its
    # first line: the method it begins in is offered, not the class around it as well; a span
    # beginning in the class between methods shows no method, and offers nothing.
    found = shown_definitions([Source("todo/auth.py", 33, 38, "E1")], outline)
    assert found == {"TokenStore.expire": ("todo/auth.py", 31, 40)}
    assert shown_definitions([Source("todo/auth.py", 25, 26)], outline) == {}


def test_the_definitions_offered_come_likeliest_first_and_reach_past_the_code_shown():
    shown = [
        Source("todo/auth.py", 12, 40, "E1"),  # a class looked up: it points at TokenStore
        Source("todo/api.py", 3, 9),  # retrieval's best chunk
        Source("todo/auth.py", 31, 40),  # its second: inside expire
    ]
    further = [Source("todo/api.py", 20, 24), Source("todo/auth.py", 2, 5)]
    found = list(offered_definitions(shown, further, outline))
    # What the evidence starts with, then by the best chunk's place in retrieval's ranking,
    # the next chunks' too (helper, not shown), and last what no chunk holds (issue, whose
    # other definition in api.py is not taken: the name keeps its first place).
    assert found == ["TokenStore", "login", "TokenStore.expire", "helper", "TokenStore.issue"]
    assert list(offered_definitions(shown, further, outline, limit=2)) == ["TokenStore", "login"]
    # A lookup holding one or two definitions points at each: they come first.
    pointed = [Source("todo/auth.py", 15, 20, "E2"), *shown]
    assert set(list(offered_definitions(pointed, [], outline))[:2]) == {
        "TokenStore.issue",
        "TokenStore",
    }
    # Without any evidence, retrieval's order alone.
    assert list(offered_definitions(shown[1:], further, outline)) == [
        "login",
        "TokenStore.expire",
        "TokenStore.issue",
        "helper",
    ]


def test_a_named_definition_becomes_the_steps_citation_file_and_target():
    definitions = {
        "TokenStore.issue": Definition("todo/auth.py", 15, 20),
        "login": Definition("todo/api.py", 3, 9),
    }
    data = {"steps": [{**step("Make issue() add an expiry."), "symbol": "TokenStore.issue"},
                      {**step("New module.", ["todo/expiry.py"]), "symbol": "none"},
                      {**step("See `todo/auth.py:16`.", ["todo/auth.py"]), "symbol": "TokenStore.issue"},
                      {**step("Unknown."), "symbol": "Nope"},
                      {**step("Store the time.", ["todo/auth.py"]), "symbol": "TokenStore.issue"}]}  # fmt: skip
    steps = cite_symbols(data, definitions)["steps"]
    assert all("symbol" not in s for s in steps)
    assert steps[0]["detail"] == (
        "Make issue() add an expiry. (`TokenStore.issue` at `todo/auth.py:15`)"
    )
    assert steps[0]["files"] == ["todo/auth.py"]
    target = {"kind": "definition", "name": "TokenStore.issue", "path": "todo/auth.py"}
    assert steps[0]["target"] == {**target, "start": 15, "end": 20}  # whose code the plan shows
    assert steps[1] == step("New module.", ["todo/expiry.py"])
    assert steps[2] == {  # cited that file already: the detail stays, the target is kept
        **step("See `todo/auth.py:16`.", ["todo/auth.py"]),
        "target": {**target, "start": 15, "end": 20},
    }
    assert steps[3] == step("Unknown.")
    assert steps[4]["detail"].endswith("(`TokenStore.issue` at `todo/auth.py:15`)")  # its file
    # The citation it writes is one a source holds, so grounding keeps it.
    grounded = ground_steps({"steps": steps[:1], "files": []}, SOURCES, PATHS)
    assert grounded["steps"][0]["detail"] == steps[0]["detail"]


def test_a_step_adding_a_definition_to_an_offered_file_targets_a_new_definition_there():
    data = {"steps": [{**step("Add an expiry helper."), "symbol": f"{NEW_DEFINITION}todo/api.py"},
                      {**step("Add one elsewhere."), "symbol": f"{NEW_DEFINITION}todo/x.py"}]}  # fmt: skip
    steps = cite_symbols(data, {}, ["todo/api.py", "todo/auth.py"])["steps"]
    assert steps[0]["target"] == {"kind": "new", "path": "todo/api.py"}
    assert steps[0]["files"] == ["todo/api.py"]
    assert steps[1] == step("Add one elsewhere.")  # a file not offered is no target


def test_a_new_definition_step_about_an_existing_one_targets_that_one():
    # requests 2.20 with the 1.5B model: a step chose "new definition in requests/sessions.py"
    # while it cited [E6], exactly `should_strip_auth`, and named no definition of its own.
    here = "requests/sessions.py"
    definitions = {
        "SessionRedirectMixin": Definition(here, 95, 300),
        "SessionRedirectMixin.get_redirect_target": Definition(here, 98, 116),
        "SessionRedirectMixin.should_strip_auth": Definition(here, 118, 132),
    }
    sources = [
        Source(
            here, 118, 132, "E6", "def should_strip_auth(self, old_url, new_url):\n  old_parsed"
        ),
        Source(here, 95, 140, "E2", "class SessionRedirectMixin(object): ..."),
    ]
    new = {"symbol": f"{NEW_DEFINITION}{here}", "files": [here]}
    data = {"steps": [
        {"title": "Treat default ports as equal", "detail": "In [E6] compare `old_parsed` "
         "ports with the scheme's default filled in.", **new},
        {"title": "Fix it", "detail": "Change `should_strip_auth` so a default port is kept.", **new},
        # A name of its own (not in the code shown): a new definition it is.
        {"title": "Add `_default_port()`", "detail": "Used by [E6].", **new},
        # Evidence holding a whole class and its methods names no single definition.
        {"title": "Fix it", "detail": "See [E2].", **new},
    ]}  # fmt: skip
    steps = cite_symbols(data, definitions, [here], sources)["steps"]
    strip = {"kind": "definition", "name": "SessionRedirectMixin.should_strip_auth",
             "path": here, "start": 118, "end": 132}  # fmt: skip
    assert steps[0]["target"] == strip
    assert steps[1]["target"] == strip
    assert steps[2]["target"] == {"kind": "new", "path": here}
    assert steps[3]["target"] == {"kind": "new", "path": here}
    # Without the evidence it cites, the first one is a new definition as chosen.
    assert cite_symbols(data, definitions, [here])["steps"][0]["target"]["kind"] == "new"


def test_a_new_definition_named_as_one_defined_once_elsewhere_changes_that_one():
    # pylint-4604 on local-1.5b: "Add a check to `_redefines_import`" chose a new definition in
    # pylint/checkers/imports.py; `_redefines_import` is defined once, in base.py, not offered.
    imports, base = "pylint/checkers/imports.py", "pylint/checkers/base.py"
    codebase = {
        "_redefines_import": [("_redefines_import", Definition(base, 277, 303))],
        "visit_import": [
            ("ImportsChecker.visit_import", Definition(imports, 500, 530)),
            ("VariablesChecker.visit_import", Definition("pylint/checkers/variables.py", 9, 20)),
        ],
    }

    def elsewhere(name):
        return codebase.get(name, [])

    new = {"symbol": f"{NEW_DEFINITION}{imports}", "files": [imports]}
    data = {"steps": [
        {"title": "Skip imports used in type comments",
         "detail": "Add a check to `_redefines_import` for type comments.", **new},
        # A name defined nowhere is the new definition's own, whatever else it names.
        {"title": "Add `_type_comment_names()`",
         "detail": "Called from `_redefines_import`.", **new},
        # A name defined twice says nothing about which.
        {"title": "Fix it", "detail": "Change `visit_import`.", **new},
    ]}  # fmt: skip
    steps = cite_symbols(data, {}, [imports], (), elsewhere)["steps"]
    assert steps[0]["target"] == {
        "kind": "definition",
        "name": "_redefines_import",
        "path": base,
        "start": 277,
        "end": 303,
    }
    assert steps[0]["files"] == [base]
    assert steps[1]["target"] == {"kind": "new", "path": imports}
    assert steps[2]["target"] == {"kind": "new", "path": imports}
    # Without the codebase's names, the choice stands.
    assert cite_symbols(data, {}, [imports])["steps"][0]["target"]["kind"] == "new"


def test_a_step_that_writes_another_offered_definition_by_its_qualified_name_changes_that_one():
    # seaborn-2848 on local-1.5b: "Update `HueMapping._lookup_single` in seaborn/_oldcore.py"
    # chose `SemanticMapping._lookup_single`, the first of four namesakes offered.
    core = "seaborn/_oldcore.py"
    definitions = {
        "SemanticMapping._lookup_single": Definition(core, 82, 84),
        "HueMapping._lookup_single": Definition(core, 170, 196),
    }
    title = "Update `HueMapping._lookup_single` in `seaborn/_oldcore.py`"
    data = {"steps": [
        {"title": title, "symbol": "SemanticMapping._lookup_single", "files": [core],
         "detail": "[E2]"},
        # Writing its own choice as well: the choice stands.
        {"title": title, "symbol": "SemanticMapping._lookup_single", "files": [core],
         "detail": "Like `SemanticMapping._lookup_single`."},
    ]}  # fmt: skip
    steps = cite_symbols(data, definitions, [core])["steps"]
    assert steps[0]["target"]["name"] == "HueMapping._lookup_single"
    assert steps[0]["target"]["start"] == 170
    assert steps[1]["target"]["name"] == "SemanticMapping._lookup_single"


def test_a_step_citing_a_line_inside_a_definition_changes_that_definition():
    # seaborn-2848 with the 1.5B model: a step listed its file as `seaborn/_oldcore.py:82-84`,
    # the first lines of `SemanticMapping._lookup_single`, and chose a new definition there;
    # the next listed `seaborn/_core/plot.py:472`, where `Plot.pair` starts, and chose none.
    core, plot = "seaborn/_oldcore.py", "seaborn/_core/plot.py"
    definitions = {
        "SemanticMapping": Definition(core, 30, 100),
        "SemanticMapping._lookup_single": Definition(core, 82, 84),
        "HueMapping._lookup_single": Definition(core, 170, 200),
        "Plot.pair": Definition(plot, 472, 530),
    }
    data = {"steps": [
        {"title": "Update the mapping", "symbol": f"{NEW_DEFINITION}{core}",
         "files": [f"{core}:82-84"], "detail": "Map categorical hue values."},
        {"title": "Handle NaN", "symbol": "none", "files": [f"{plot}:472"],
         "detail": "Skip NaN values."},
        # A line of the file that no definition holds: nothing to take.
        {"title": "Import it", "symbol": "none", "files": [f"{core}:3"], "detail": "Import."},
    ]}  # fmt: skip
    steps = cite_symbols(data, definitions, [core, plot])["steps"]
    assert steps[0]["target"]["name"] == "SemanticMapping._lookup_single"  # the innermost
    assert steps[1]["target"]["name"] == "Plot.pair"
    assert "target" not in steps[2]
    # The files are the files, without the lines a model wrote after them.
    assert [s["files"] for s in steps] == [[core], [plot], [core]]


def test_a_step_choosing_none_that_cites_one_definition_of_its_one_file_changes_it():
    # xarray-2905 with the 1.5B model: the step chose "none" while it said to add a check in
    # variable.py and cited [E4], which held exactly `Variable.__setitem__`.
    here, tests = "xarray/core/variable.py", "xarray/tests/test_variable.py"
    definitions = {
        "Variable.__setitem__": Definition(here, 860, 889),
        "IndexVariable": Definition(here, 2498, 2700),
    }
    sources = [Source(here, 860, 889, "E4", "def __setitem__(self, key, value):")]
    data = {"steps": [
        {"title": "Modify the Code", "symbol": "none", "files": [here],
         "detail": "Add a check for objects with a `.values` property in `" + here + "` [E4]."},
        # The test step cites the same evidence, but its files are the test's and the code's.
        {"title": "Add a Test", "symbol": "none", "files": [tests, here],
         "detail": "Add a test to fail before the fix in `" + tests + "` [E4]."},
        {"title": "Add a Test", "symbol": "none", "files": [tests],
         "detail": "Add a test in `" + tests + "` [E4]."},
        # A name of its own: perhaps a new helper, not the shown definition.
        {"title": "Guard", "symbol": "none", "files": [here],
         "detail": "Call a new `_keep_objects()` from [E4]."},
    ]}  # fmt: skip
    steps = cite_symbols(data, definitions, [here, tests], sources)["steps"]
    assert steps[0]["target"] == {"kind": "definition", "name": "Variable.__setitem__",
                                  "path": here, "start": 860, "end": 889}  # fmt: skip
    assert [("target" in s) for s in steps[1:]] == [False, False, False]
    # Without the evidence it cites, "none" stays none.
    assert "target" not in cite_symbols(data, definitions, [here, tests])["steps"][0]


def test_a_definition_the_rest_of_the_step_says_nothing_about_is_dropped():
    # pylint-4551: the 0.5B model named the same unrelated method for every step.
    definitions = {"Python3Checker.__init__": Definition("pylint/checkers/python3.py", 921, 930)}
    data = {"steps": [{**step("Read the annotations in __init__.", ["pylint/pyreverse/main.py"]),
                       "symbol": "Python3Checker.__init__"}]}  # fmt: skip
    assert cite_symbols(data, definitions)["steps"] == [
        step("Read the annotations in __init__.", ["pylint/pyreverse/main.py"])
    ]


def test_a_line_number_no_source_holds_is_dropped_and_the_path_kept():
    data = {"steps": [step("Change `todo/auth.py:999` here.", ["todo/auth.py"])], "files": []}
    detail = ground_steps(data, SOURCES, PATHS)["steps"][0]["detail"]
    assert ":999" not in detail
    assert detail.startswith("Change `todo/auth.py` here.")
    assert "`todo/auth.py:10-30` [E2]" in detail  # then cited from its source


def test_a_citation_a_source_holds_is_kept_as_written():
    data = {"steps": [step("Change `todo/auth.py:12` here.", ["todo/auth.py"])], "files": []}
    assert ground_steps(data, SOURCES, PATHS)["steps"][0]["detail"] == (
        "Change `todo/auth.py:12` here."
    )


def test_a_step_naming_no_file_is_cited_from_the_plans_files():
    data = {
        "steps": [step("Write the expiry check.")],
        "files": [{"path": "todo/api.py", "action": "modify", "reason": "r"}],
    }
    grounded = ground_steps(data, SOURCES, PATHS)["steps"][0]
    assert grounded["detail"] == "Write the expiry check. (see `todo/api.py:1-40`)"
    assert grounded["files"] == ["todo/api.py"]


def test_the_literal_placeholder_becomes_a_citation_of_the_steps_file():
    data = {"steps": [step("Add a test at `path:line`.", ["todo/auth.py"])], "files": []}
    detail = ground_steps(data, SOURCES, PATHS)["steps"][0]["detail"]
    assert detail == "Add a test at `todo/auth.py:10-30` [E2]."


def test_a_citation_cut_off_by_the_length_limit_is_cited_afresh():
    # pylint-4551: finalize copied the grounded proposal step and hit the 400-character limit.
    cut = "Add the hints to `visit_attribute` (see `todo/auth.py"
    detail = ground_steps({"steps": [step(cut, ["todo/auth.py"])]}, SOURCES, PATHS)["steps"][0]
    assert detail["detail"] == "Add the hints to `visit_attribute` (see `todo/auth.py:10-30` [E2])"


def test_a_long_field_opening_with_the_instructions_words_is_a_copy():
    request = "testing: the concrete tests to add or run. risks: the concrete failure cases."
    padded = (
        "The concrete tests to add or run are not provided in the proposal. However, the "
        "function checks if the attribute is an access to a class member and registers it."
    )
    assert is_copied(padded, request)
    assert not is_copied(
        "Run the pyreverse tests with a class whose attribute defaults to None and check the "
        "diagram shows its annotated type.",
        request,
    )


def test_a_step_repeated_word_for_word_is_dropped():
    same = step("Add type hints to the diagram.", ["todo/api.py"])
    data = {"steps": [same, dict(same), step("Test it.")], "files": []}
    assert [s["detail"] for s in without_repeated_steps(data)["steps"]] == [
        "Add type hints to the diagram.",
        "Test it.",
    ]


def test_steps_that_say_nothing_more_about_the_same_definition_go_with_their_borrowed_files():
    # astropy-13977 on local-1.5b: one step per file, each "Modify `Quantity.__array_ufunc__()`
    # in <file>", all changing the one method in quantity.py; Files gave each file step 1's words.
    said = "Return `NotImplemented` from `Quantity.__array_ufunc__()` when inputs are incompatible."
    title = "Modify `Quantity.__array_ufunc__()` in `{}`"
    first = {
        "title": title.format("astropy/units/quantity.py"),
        "symbol": "Quantity.__array_ufunc__",
        "detail": said + " [E1] astropy/units/quantity.py:612-635",
        "files": ["astropy/units/quantity.py"],
    }
    echoes = [
        {
            "title": title.format(path),
            "symbol": "Quantity.__array_ufunc__",
            "detail": "(see `astropy/units/quantity.py:612-651` [E1])",
            "files": [path, "astropy/units/quantity.py"],
        }
        for path in ("astropy/coordinates/angles.py", "astropy/modeling/core.py")
    ]
    test = {
        "title": "Test the new return",
        "symbol": "Quantity.__array_ufunc__",
        "detail": "Add a test that a duck array's `__radd__` is called.",
        "files": ["astropy/units/tests/test_quantity.py"],
    }
    files = [
        {"path": p, "action": "modify", "reason": said}
        for p in ("astropy/units/quantity.py", "astropy/coordinates/angles.py",
                  "astropy/modeling/core.py")
    ] + [{"path": "astropy/units/core.py", "action": "modify", "reason": "Its units."}]  # fmt: skip
    kept = without_repeated_steps({"steps": [first, *echoes, test], "files": files})
    assert kept["steps"] == [first, test]
    assert [f["path"] for f in kept["files"]] == [
        "astropy/units/quantity.py",
        "astropy/units/core.py",
    ]


def test_steps_on_other_definitions_or_saying_more_are_kept():
    a = step("Change the parser to accept None.", ["todo/api.py"])
    b = {**step("Change the parser to accept None.", ["todo/cli.py"]), "symbol": "cli_main"}
    c = step("Change the parser to accept None and empty strings.", ["todo/api.py"])
    data = {"steps": [{**a, "symbol": "parse"}, b, {**c, "symbol": "parse"}], "files": []}
    assert without_repeated_steps(data) is data


def plan_draft(path):
    return {
        "summary": "Expire tokens after a day.",
        "decisions": ["Store the issue time with each token."],
        "steps": [
            {
                "title": "Store the time",
                "symbol": "none",
                "detail": f"At `{path}:9999`.",
                "files": [path],
            },
            {
                "title": "Test it",
                "symbol": "none",
                "detail": "Add a test at path:line.",
                "files": [],
            },
        ],
        "files": [{"path": path, "action": "modify", "reason": "tokens live here"}],
        "testing": ["A token older than a day is refused."],
        "risks": ["Clock skew between workers."],
        "effort": {"size": "S", "estimate": "1 day"},
    }


def proposal(path):
    return {
        "summary": "Expire tokens after a day.",
        "steps": [
            {"title": "Expire", "symbol": "none", "detail": f"At `{path}:9999`.", "files": [path]}
        ],
        "files": [{"path": path, "action": "modify", "reason": "tokens live here"}],
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_every_step_of_the_final_plan_cites_a_line_it_was_shown(start, user):  # noqa: F811
    session = await start(task="Make the token store drop tokens older than a day")
    hits = await database_sync_to_async(retrieve_for)(session)
    path = hits[0].path
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,
        "Tokens live in the store.",
        proposal(path),
        "Looks right.",
        "Looks right.",
    )
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    FakeProvider.script("fake", plan_draft(path))
    await client.send({"type": "control", "action": "approve"})
    await client.until_state("completed")
    await client.close()

    plan = await database_sync_to_async(Plan.objects.get)(session=session)
    evidence = await database_sync_to_async(load_evidence)(session.pk, "investigate")
    shown = [(h.path, h.start_line, h.end_line) for h in hits]
    shown += [(e.path, e.start, e.end) for e in evidence if e.found and e.start]
    for planned in plan.structured["steps"]:
        cited = await database_sync_to_async(extract_citations)(session.codebase, planned["detail"])
        assert cited and all(c.exists for c in cited), planned
        assert all(any(p == c.path and s <= c.start <= e for p, s, e in shown) for c in cited), (
            planned
        )
    assert ":9999" not in plan.markdown
    assert all(find_citations(s["detail"]) for s in plan.structured["steps"])


def test_a_step_is_cited_from_the_source_that_names_the_code_it_talks_about():
    sources = [
        Source("todo/auth.py", 1, 9, text="def check_password(user, password):\n    ..."),
        Source("todo/auth.py", 10, 30, text="class TokenStore:\n    def expire(self): ..."),
        Source("todo/api.py", 1, 40, text="def login(request):\n    store = TokenStore()"),
    ]
    files = [{"path": "todo/auth.py"}, {"path": "todo/api.py"}]
    data = {
        "steps": [
            step("Make `TokenStore.expire` drop old tokens.", ["todo/auth.py"]),
            step("Refuse the login in `login` when the store is full.", ["todo/auth.py"]),
            step("Tidy up the module."),  # names no code: the first source of the first file
        ],
        "files": files,
    }
    grounded = ground_steps(data, sources, PATHS)["steps"]
    assert grounded[0]["detail"].endswith("(see `todo/auth.py:10-30`)")
    # `login` lives in api.py: a source there beats the step's own (wrong) file, which joins.
    assert grounded[1]["detail"].endswith("(see `todo/api.py:1-40`)")
    assert grounded[1]["files"] == ["todo/auth.py", "todo/api.py"]
    assert grounded[2]["detail"].endswith("(see `todo/auth.py:1-9`)")


def test_every_existing_file_a_step_touches_is_in_the_files_table():
    from agents.plan import with_step_files

    data = {
        "steps": [
            {"title": "Count", "detail": "…", "files": ["todo/auth.py"]},
            {"title": "Refuse", "detail": "…", "files": ["TODO/API.py", "todo/nowhere.py"]},
        ],
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "the counter"}],
    }
    files = with_step_files(data, PATHS)["files"]
    assert files == [
        {"path": "todo/auth.py", "action": "modify", "reason": "the counter"},
        {"path": "todo/api.py", "action": "modify", "reason": "Step 2: Refuse"},
    ]  # a file that does not exist is the path check's to judge, not this one's to add
    assert with_step_files({"steps": [], "files": []}, PATHS) == {"steps": [], "files": []}


def test_a_step_that_writes_a_shown_definition_as_code_targets_it_when_its_choice_is_none():
    # requests #3829 with the 1.5B model: the plan copied the proposal's step, "Modify
    # `Session.merge_environment_settings`", and chose "none", so it showed no code and no sketch.
    definitions = {
        "Session": Definition("src/requests/sessions.py", 356, 816),
        "Session.merge_environment_settings": Definition("src/requests/sessions.py", 750, 779),
        "merge_setting": Definition("src/requests/sessions.py", 61, 88),
    }
    data = {"steps": [
        {**step("[E3] Check the session's verify first."),
         "title": "Modify `Session.merge_environment_settings`", "symbol": "none"},
        {**step("Call `merge_setting()` with the session's value."), "symbol": "Nope"},
        # A class named in passing, or two definitions at once, name no single target.
        {**step("(`Session` at `src/requests/sessions.py:356`)"), "symbol": "none"},
        {**step("`merge_setting()` and `Session.merge_environment_settings`"), "symbol": "none"},
    ]}  # fmt: skip
    steps = cite_symbols(data, definitions)["steps"]
    assert steps[0]["target"] == {
        "kind": "definition", "name": "Session.merge_environment_settings",
        "path": "src/requests/sessions.py", "start": 750, "end": 779,
    }  # fmt: skip
    assert steps[1]["target"]["name"] == "merge_setting"
    assert "target" not in steps[2]
    assert "target" not in steps[3]


def test_a_step_naming_a_shown_method_by_its_bare_name_in_its_file_targets_it():
    # seaborn-2848 with the 1.5B model: "Modify the `map` function to pass `hue`…" in
    # seaborn/axisgrid.py, whose `PairGrid.map` the evidence showed; its choice was "none".
    definitions = {
        "PairGrid.map": Definition("seaborn/axisgrid.py", 1172, 1211),
        "PairGrid": Definition("seaborn/axisgrid.py", 1100, 1700),
        "scatterplot": Definition("seaborn/relational.py", 700, 790),
    }
    in_grid = {"files": ["seaborn/axisgrid.py"], "symbol": "none"}
    data = {"steps": [
        {"title": "Modify the `map` function", "detail": "Pass `hue` on.", **in_grid},
        # The same words in a file where no shown method has that name: no target.
        {"title": "Modify the `map` function", "detail": "Pass `hue` on.",
         "files": ["seaborn/regression.py"], "symbol": "none"},
        # A class by its bare name is said in passing; two methods fit: no single target.
        {"title": "Change `PairGrid`", "detail": "Keep it.", **in_grid},
    ]}  # fmt: skip
    steps = cite_symbols(data, definitions)["steps"]
    assert steps[0]["target"] == {
        "kind": "definition", "name": "PairGrid.map",
        "path": "seaborn/axisgrid.py", "start": 1172, "end": 1211,
    }  # fmt: skip
    assert "target" not in steps[1] and "target" not in steps[2]

    both = {**definitions, "FacetGrid.map": Definition("seaborn/axisgrid.py", 700, 760)}
    assert "target" not in cite_symbols({"steps": [data["steps"][0]]}, both)["steps"][0]


def test_the_title_says_which_method_a_step_changes_and_its_class_written_apart_finds_it():
    # xarray-2905 on local-1.5b: "Modify `__setitem__` in `DataArray`", whose detail said
    # "objects with a `values` property", showed the code of `DataArray.values`; the class's
    # `__setitem__` was not offered.
    array = "xarray/core/dataarray.py"
    definitions = {"DataArray.values": Definition(array, 631, 634)}
    codebase = {"DataArray.__setitem__": [("DataArray.__setitem__", Definition(array, 700, 716))]}

    def elsewhere(name):
        return codebase.get(name, [])

    detail = "Only coerce objects that have a `values` property."
    data = {"steps": [
        {"title": "Modify `__setitem__` in `DataArray`", "detail": detail,
         "files": [array, "xarray/core/dataset.py"], "symbol": "none"},
        # A title writing no code leaves the detail's words to say it.
        {"title": "Coerce less", "detail": detail, "files": [array], "symbol": "none"},
    ]}  # fmt: skip
    steps = cite_symbols(data, definitions, [array], (), elsewhere)["steps"]
    assert steps[0]["target"] == {
        "kind": "definition", "name": "DataArray.__setitem__",
        "path": array, "start": 700, "end": 716,
    }  # fmt: skip
    assert steps[1]["target"]["name"] == "DataArray.values"
    # Without the codebase's names, the title's `__setitem__` fits nothing shown: no target,
    # rather than the detail's `values`.
    assert "target" not in cite_symbols(data, definitions, [array])["steps"][0]
