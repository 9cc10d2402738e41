"""Change sketches: the model names the first line a step changes and how many lines, and the
lines replaced are taken from the definition's code; the plan shows that code with its real line
numbers (folded when long); and a sketch that fails the check is asked for again once, with
the problem shown, and then flagged."""

from types import SimpleNamespace

import pytest

from agents.plan import render_plan
from agents.planning.sketching import Brief, sketch_steps, write_sketch
from agents.providers.fake import FakeProvider
from agents.sketches import (
    MAX_SPAN,
    Checked,
    Excerpt,
    check,
    hunk,
    indent_unit,
    reindented,
    shown_code,
    sketch_schema,
    syntax_problem,
    unbound_problem,
    window,
    with_blank_lines,
)
from agents.turns import agent_for
from rag.paths import FileSet

CODE = Excerpt(
    "todo/auth.py",
    "TokenStore.issue",
    15,
    ("    def issue(self, user):", "        token = str(user)", "        return token"),
    (15, 17),
)


def test_the_lines_replaced_are_the_codes_own_lines_from_the_first_named():
    checked = check("token  =  str(user)", 2, ["token = repr(user)"], CODE)
    assert checked.problems == []
    assert checked.start == 16
    assert checked.before == ["        token = str(user)", "        return token"]


def test_a_first_line_the_code_lacks_is_a_problem_naming_it():
    checked = check("token = make(user)", 1, ["token = 1"], CODE)
    assert checked.problems == ["`token = make(user)` is not a line of `TokenStore.issue`."]
    assert checked.before == [] and checked.start == 0


def test_a_sketch_that_changes_nothing_is_a_problem():
    checked = check("return token", 1, ["return   token"], CODE)
    assert checked.problems == [
        "The after lines are lines 17-17 as they are: the sketch changes nothing."
    ]


def test_more_lines_than_a_sketch_may_replace_are_a_problem():
    # A window inside a long definition (its header is above it, at line 1).
    long = Excerpt("a.py", "f", 2, tuple(f"x{n} = {n}" for n in range(30)), (1, 31), "python")
    checked = check("x0 = 0", MAX_SPAN + 1, ["x = 1"], long)
    assert checked.problems == [
        f"Lines 2-{MAX_SPAN + 2} hold {MAX_SPAN + 1} lines of code: a sketch replaces at most "
        f"{MAX_SPAN}. Choose the few lines that change."
    ]
    assert check("x0 = 0", MAX_SPAN, ["x = 1"], long).problems == []


def test_an_after_quoting_the_unchanged_line_above_or_below_takes_it_in_not_twice():
    # Line 16 named, but the model wrote the def line above it first: it is not new code.
    above = check(
        "token = str(user)", 1, ["def issue(self, user):", "    token = repr(user)"], CODE
    )
    assert above.start == 15 and above.problems == []
    assert above.before == ["    def issue(self, user):", "        token = str(user)"]
    below = check("token = str(user)", 1, ["token = repr(user)", "return token"], CODE)
    assert below.start == 16 and len(below.before) == 2


def test_an_after_ending_on_a_line_inside_the_count_ends_the_span_there():
    # The count said three, but the after lines end with the code's line 16 unchanged: the
    # model changed the def line, not deleted the return below it.
    checked = check(
        "def issue(self, user):", 3, ["def issue(self, user, now):", "token = str(user)"], CODE
    )
    assert checked.before == ["    def issue(self, user):", "        token = str(user)"]


def test_an_after_that_writes_one_line_over_and_over_is_a_problem():
    # local-1.5b on seaborn-2848: the definition's first line nine times, each nested deeper.
    looped = ["def issue(self, user):"] * 9 + ["token = repr(user)"]
    checked = check("def issue(self, user):", 1, looped, CODE)
    assert checked.problems == [
        "The after lines write `def issue(self, user):` 9 times: write each line once."
    ]


def test_short_lines_and_lines_the_code_repeats_may_repeat():
    after = ["token = str(user)", "if token:", "    pass", "if user:", "    pass", "    pass"]
    assert check("token = str(user)", 1, after, CODE).problems == []
    twice = ["token = str(user)", "token = str(user)"]
    assert check("token = str(user)", 1, [*twice, "log(token)"], CODE).problems == []


def test_the_schema_offers_one_line_of_the_code_and_a_count_that_cannot_pass_the_limit():
    schema = sketch_schema(CODE).model_json_schema()
    assert schema["properties"]["first"]["enum"] == [
        "def issue(self, user):",
        "token = str(user)",
        "return token",
    ]
    assert schema["properties"]["lines"]["enum"] == list(range(1, MAX_SPAN + 1))
    assert schema["required"] == ["first", "lines", "after"]


def test_after_lines_written_without_indentation_get_the_codes():
    assert reindented(["token = repr(user)"], ["        token = str(user)"]) == [
        "        token = repr(user)"
    ]
    # The model's indentation is read relative to the code's: its first line is at the code's.
    assert reindented(["  x = 1", "      y = 3"], ["        y = 2"]) == [
        "        x = 1",
        "            y = 3",
    ]


# seaborn-3010's PolyFit.__call__, and the 1.5B model's sketch of it: folded lines, as offered.
CALL = Excerpt(
    "seaborn/_stats/regression.py",
    "PolyFit.__call__",
    39,
    (
        "    def __call__(self, data, groupby, orient, scales):",
        "",
        "        return groupby.apply(data, self._fit_predict)",
        "",
    ),
    (39, 42),
    "python",
)
FIX = [
    "def __call__(self, data, groupby, orient, scales):",
    "return (",
    "groupby",
    ".apply(data.dropna(subset=['x', 'y']), self._fit_predict)",
    ")",
]


def test_after_lines_get_each_line_its_own_indentation_back():
    checked = check(FIX[0], 3, FIX, CALL)
    assert reindented(FIX, checked.before, indent_unit(CALL)) == [
        "    def __call__(self, data, groupby, orient, scales):",
        "        return (",
        "            groupby",
        "            .apply(data.dropna(subset=['x', 'y']), self._fit_predict)",
        "        )",
    ]


def test_a_sketch_is_one_hunk_with_real_line_numbers_and_unchanged_lines_as_context():
    checked = check(FIX[0], 3, FIX, CALL)
    after = with_blank_lines(reindented(FIX, checked.before, indent_unit(CALL)), checked.before)
    assert hunk(CALL, checked, after) == [
        "@@ -39,4 +39,7 @@ PolyFit.__call__",
        "     def __call__(self, data, groupby, orient, scales):",
        " ",
        "-        return groupby.apply(data, self._fit_predict)",
        "+        return (",
        "+            groupby",
        "+            .apply(data.dropna(subset=['x', 'y']), self._fit_predict)",
        "+        )",
        " ",
    ]
    assert syntax_problem(CALL, checked, after) == ""


# The 1.5B model's sketch of seaborn-3010's PolyFit._fit_predict, verbatim: the code's own
# lines flat, as offered, and the lines it nests under them 4 spaces in.
FIT = Excerpt(
    "seaborn/_stats/regression.py",
    "PolyFit._fit_predict",
    22,
    (
        "    def _fit_predict(self, data):",
        "",
        '        x = data["x"]',
        '        y = data["y"]',
        "        if x.nunique() <= self.order:",
        "            # TODO warn?",
        "            xx = yy = []",
        "        else:",
        "            p = np.polyfit(x, y, self.order)",
        "            xx = np.linspace(x.min(), x.max(), self.gridsize)",
        "            yy = np.polyval(p, xx)",
        "",
        "        return pd.DataFrame(dict(x=xx, y=yy))",
    ),
    (22, 34),
    "python",
)
FIT_AFTER = [
    "def _fit_predict(self, data):",
    'x = data["x"]',
    'y = data["y"]',
    "if x.nunique() <= self.order:",
    "    # TODO warn?",
    "    xx = yy = []",
    "else:",
    "    # Handle missing values by filling them with the mean of the x values",
    "    x = x.fillna(x.mean())",
    "    y = y.fillna(y.mean())",
    "    p = np.polyfit(x, y, self.order)",
]


def test_the_models_flat_and_nested_lines_become_the_few_lines_it_changes():
    checked = check(FIT_AFTER[0], 8, FIT_AFTER, FIT)
    after = with_blank_lines(
        reindented(FIT_AFTER, checked.before, indent_unit(FIT)), checked.before
    )
    assert checked.problems == [] and syntax_problem(FIT, checked, after) == ""
    assert hunk(FIT, checked, after) == [
        "@@ -28,4 +28,7 @@ PolyFit._fit_predict",
        "             xx = yy = []",
        "         else:",
        "+            # Handle missing values by filling them with the mean of the x values",
        "+            x = x.fillna(x.mean())",
        "+            y = y.fillna(y.mean())",
        "             p = np.polyfit(x, y, self.order)",
        "             xx = np.linspace(x.min(), x.max(), self.gridsize)",
    ]


def test_a_sketch_that_leaves_the_definition_unparsable_is_a_problem():
    after = ["        return groupby.apply(data.dropna(, self._fit_predict)"]
    checked = check("return groupby.apply(data, self._fit_predict)", 1, after, CALL)
    assert checked.problems == []
    assert syntax_problem(CALL, checked, after).startswith(
        "With this change `PolyFit.__call__` no longer parses (near line 41)"
    )


def test_a_method_whose_header_a_sketch_would_replace_no_longer_parses_in_python():
    # tree-sitter recovers from the unexpected indent without an error node; Python does not.
    body = ["        x = 1", "        return x"]
    code = Excerpt("a.py", "A.f", 5, ("    def f(self, node):", *body), (5, 7), "python")
    checked = Checked(["    def f(self, node):"], 5, [])
    assert syntax_problem(code, checked, ["    node.t = 1"]).startswith(
        "With this change `A.f` no longer parses"
    )


# astropy 5.3's Quantity.__array_ufunc__, shortened: its header spans lines and a docstring
# follows, as in the sketch bench's case where local-1.5b named the def line and wrote two
# statements, which replaced the header.
UFUNC = Excerpt(
    "astropy/units/quantity.py",
    "Quantity.__array_ufunc__",
    612,
    (
        "    def __array_ufunc__(",
        "        self, function, method, *inputs, **kwargs",
        "    ):",
        '        """Wrap numpy ufuncs, taking care of units.',
        "",
        '        """',
        "        converters, unit = converters_and_unit(function, method, *inputs)",
        "        return result",
    ),
    (612, 619),
    "python",
)


POLY = Excerpt(
    "seaborn/_stats/regression.py",
    "PolyFit",
    19,
    (
        "class PolyFit(Stat):",
        "    order: int = 2",
        "",
        "    def _fit_predict(self, data):",
        '        x = data["x"]',
        "        return x",
    ),
    (19, 24),
    "python",
)


def test_new_lines_after_a_named_header_go_under_the_header_and_its_docstring():
    added = ["if unit is not None:", "    unit = Unit(unit)"]
    checked = check("def __array_ufunc__(", 1, added, UFUNC)
    assert checked.problems == [] and checked.start == 612
    assert checked.before == list(UFUNC.lines[:6])
    after = reindented(checked.after, checked.before, indent_unit(UFUNC))
    assert hunk(UFUNC, checked, after)[-5:] == [
        '         """',
        "+        if unit is not None:",
        "+            unit = Unit(unit)",
        "         converters, unit = converters_and_unit(function, method, *inputs)",
        "         return result",
    ]


def test_new_lines_after_a_methods_header_in_a_class_go_under_it():
    # seaborn-3010 on the sketch bench: the class PolyFit shown, `def _fit_predict` named, and
    # the method's body written in its place, which parsed and deleted the method.
    checked = check("def _fit_predict(self, data):", 1, ["x = data.dropna()"], POLY)
    assert checked.start == 22 and checked.before == ["    def _fit_predict(self, data):"]
    assert checked.after == ["    def _fit_predict(self, data):", "        x = data.dropna()"]


def test_an_after_ending_on_a_lightly_rewritten_line_below_takes_it_in():
    # pylint-5859: the def line named with a count of 1 and the body rewritten below it, its
    # last line with other quotes: the lines it rewrote are replaced, not left to run twice.
    after = ["def issue(self, user):", "token = str(user)", "return tokens"]
    checked = check("def issue(self, user):", 1, after, CODE)
    assert len(checked.before) == 3


# pylint 2.9.0's TypingChecker._msg_postponed_eval_hint, and local-1.5b's sketch of it on the
# grounding bench (pylint-4551): the def line named, the body written again below it with
# other quotes, one string's quotes unbalanced.
HINT = Excerpt(
    "pylint/extensions/typing.py",
    "TypingChecker._msg_postponed_eval_hint",
    179,
    (
        "    def _msg_postponed_eval_hint(self, node) -> str:",
        '        """Message hint if postponed evaluation isn\'t enabled."""',
        '        if self._py310_plus() or "annotations" in node.root().future_imports:',
        '            return ""',
        "        return \". Add 'from __future__ import annotations' as well\"",
    ),
    (179, 183),
    "python",
)
HINT_AFTER = [
    "      if self._py310_plus() or 'annotations' in node.root().future_imports:",
    "          return ''",
    "      return '. Add 'from __future__ import annotations' as well'",
]


def test_a_body_written_again_under_a_named_header_replaces_the_lines_it_rewrote():
    checked = check(HINT.lines[0], 1, HINT_AFTER, HINT)
    assert checked.start == 179 and len(checked.before) == 5  # through the rewritten return
    assert checked.after[:2] == list(HINT.lines[:2])


def test_unbalanced_quotes_that_tree_sitter_flags_without_an_error_node_do_not_parse():
    checked = check(HINT.lines[0], 1, HINT_AFTER, HINT)
    after = reindented(checked.after, checked.before, indent_unit(HINT))
    assert syntax_problem(HINT, checked, after).startswith("With this change")


def test_a_line_that_only_calls_the_definition_is_not_its_header():
    # seaborn-2848: `def _lookup_single(self, key):` named, and a call of it written in its
    # place: the header stays and the lines go under it.
    after = ["if isinstance(key, list):", "    return [self.issue(k) for k in key]"]
    checked = check("def issue(self, user):", 1, after, CODE)
    assert checked.after[0] == "    def issue(self, user):"
    assert checked.before == ["    def issue(self, user):"]


def test_a_sketch_that_rewrites_the_header_replaces_it():
    changed = ["def __array_ufunc__(self, function, method, *inputs, out=None, **kwargs):"]
    checked = check("def __array_ufunc__(", 3, changed, UFUNC)
    assert checked.before == list(UFUNC.lines[:3]) and checked.after == changed


def test_a_window_that_does_not_parse_on_its_own_is_not_judged():
    window = Excerpt("a.py", "f", 10, ("        x = (", "            1,"), (1, 40), "python")
    checked = check("1,", 1, ["2,,,("], window)
    assert syntax_problem(window, checked, ["            2,,,("]) == ""


def test_a_window_of_a_long_definition_is_judged_on_the_whole_definition():
    # astropy-13977: the cited line was past the window's docstring opener, so the window did
    # not parse alone; a sketch that replaced the docstring's closing quotes with a statement
    # left the method unparsable and passed.
    lines = [
        "    def f(self, x):",
        '        """Doc.',
        *["        text line"] * 38,
        '        """',
        *["        x = x + 1"] * 38,
        "        return x",
    ]
    code = window("a.py", "A.f", lines, (1, len(lines)), "python", near=45)
    assert code is not None and code.start > 2 and len(code.full) == len(lines)
    checked = check('"""', 1, ["        return NotImplemented"], code)
    assert checked.problems == [] and checked.start == 41
    assert syntax_problem(code, checked, checked.after).startswith(
        "With this change `A.f` no longer parses"
    )
    fine = check("x = x + 1", 1, ["        x = x + 2"], code)
    assert syntax_problem(code, fine, fine.after) == ""


def test_a_long_definition_is_folded_around_the_sketched_lines_with_real_numbers():
    lines = [f"    line_{n}" for n in range(100, 160)]
    shown = shown_code(
        {"path": "a.py", "start": 100, "lines": lines}, {"start": 130, "before": ["x"]}
    )
    assert shown[0] == "100      line_100"
    assert "⋮" in shown[4]
    assert "130      line_130" in shown
    assert shown[-1].endswith("(25 more lines)")
    assert len(shown) < 20


def test_the_plan_shows_the_current_code_and_the_checked_sketch_under_the_step():
    step = {
        "title": "Expire",
        "detail": "Make tokens expire.",
        "files": ["todo/auth.py"],
        "target": {"kind": "definition", "name": "TokenStore.issue", "path": "todo/auth.py"},
        "code": {"path": "todo/auth.py", "start": 15, "lines": list(CODE.lines)},
        "sketch": {
            "before": ["        token = str(user)"],
            "after": ["        token = (str(user), now())"],
            "start": 16,
            "checked": True,
        },
    }
    markdown = render_plan({"steps": [step]}, FileSet(["todo/auth.py"]))
    assert "   Current code of `TokenStore.issue`, `todo/auth.py:15-17`:" in markdown
    assert "   16          token = str(user)" in markdown
    assert "   Change sketch (its lines match the code above):" in markdown
    assert "   -        token = str(user)\n   +        token = (str(user), now())" in markdown


@pytest.mark.django_db
def test_a_sketch_that_does_not_match_is_asked_again_with_the_mismatch_then_flagged(
    session_on_codebase,
):
    session, path = session_on_codebase
    FakeProvider.script(
        "fake",
        {"first": "token = make(user)", "lines": 1, "after": ["token = 1"]},
        {"first": "return token", "lines": 1, "after": ["return   token"]},
    )
    data = {"steps": [_targeting(path)]}
    step = sketch_steps(session, agent_for(session, "A"), data, key="sketch:1")["steps"][0]
    prompts = FakeProvider.prompts(schema="ChangeSketch")
    assert len(prompts) == 2
    assert "`token = make(user)` is not a line of `issue`." in prompts[-1]
    assert step["sketch"]["checked"] is False
    assert "the sketch changes nothing" in step["sketch"]["problem"]
    assert step["code"]["lines"][0].startswith("def issue")


@pytest.mark.django_db
def test_a_matching_sketch_is_asked_for_once_with_the_definitions_numbered_code(
    session_on_codebase,
):
    session, path = session_on_codebase
    FakeProvider.script(
        "fake", {"first": "return token", "lines": 1, "after": ["return token or None"]}
    )
    data = {"steps": [_targeting(path)]}
    step = sketch_steps(session, agent_for(session, "A"), data, key="sketch:1")["steps"][0]
    prompt = FakeProvider.prompts(schema="ChangeSketch")[-1]
    assert len(FakeProvider.prompts(schema="ChangeSketch")) == 1
    assert "1  def issue(user):" in prompt  # its real line numbers
    assert session.task in prompt and "Step 1 of the plan: Expire" in prompt
    assert step["sketch"] == {
        "before": ["    return token"],
        "after": ["    return token or None"],
        "start": 3,
        "checked": True,
        "hunk": [
            "@@ -1,3 +1,3 @@ issue",
            " def issue(user):",
            "     token = str(user)",
            "-    return token",
            "+    return token or None",
        ],
    }


def _targeting(path):
    return {
        "title": "Expire",
        "detail": "Tokens expire.",
        "files": [path],
        "target": {"kind": "definition", "name": "issue", "path": path, "start": 1, "end": 3},
    }


@pytest.fixture
def session_on_codebase(user, db):
    from conversations.models import PlanningSession, PlanningState
    from rag.models import Codebase, CodeFile

    FakeProvider.reset()
    codebase = Codebase.objects.create(owner=user, name="todo", status="ready")
    content = "def issue(user):\n    token = str(user)\n    return token\n"
    CodeFile.objects.create(
        codebase=codebase, path="todo/auth.py", content=content, line_count=3, size=len(content)
    )
    session = PlanningSession.objects.create(
        owner=user,
        codebase=codebase,
        task="Make tokens expire",
        agent_a_profile="fake",
        agent_b_profile="fake",
        status="running",
    )
    PlanningState.objects.create(session=session)
    return session, "todo/auth.py"


# requests 2.20.0, the walk of issue 18 (local-1.5b).
STRIP = Excerpt(
    "requests/sessions.py",
    "SessionRedirectMixin.should_strip_auth",
    118,
    (
        "    def should_strip_auth(self, old_url, new_url):",
        '        """Decide whether Authorization header should be removed when redirecting"""',
        "        old_parsed = urlparse(old_url)",
        "        new_parsed = urlparse(new_url)",
        "        if old_parsed.hostname != new_parsed.hostname:",
        "            return True",
        "        # Special case: allow http -> https redirect when using the standard",
        "        # ports.",
        "        if (old_parsed.scheme == 'http' and old_parsed.port in (80, None)",
        "                and new_parsed.scheme == 'https' and new_parsed.port in (443, None)):",
        "            return False",
        "        # Standard case: root URI must match",
        "        return old_parsed.port != new_parsed.port or old_parsed.scheme != new_parsed.scheme",
    ),
    (118, 130),
    "python",
)


def test_comment_and_docstring_lines_are_not_offered_as_a_sketchs_first_or_last():
    offered = sketch_schema(STRIP).model_json_schema()["properties"]["first"]["enum"]
    assert not [c for c in offered if c.startswith(("#", '"""'))]
    # The walk's first sketch: the def line to the hostname check, its docstring inside.
    after = [
        "def should_strip_auth(self, old_url, new_url):",
        "old_parsed = urlparse(old_url)",
        "new_parsed = urlparse(new_url)",
        "if old_parsed.hostname != new_parsed.hostname:",
        "return old_parsed.port != new_parsed.port",
    ]
    checked = check(after[0], 6, after, STRIP)
    assert checked.problems == []
    assert checked.start == 118 and len(checked.before) == 6


def test_comment_lines_in_the_replaced_span_stay_where_they_were():
    after = [
        "if old_parsed.hostname != new_parsed.hostname:",
        "    return True",
        "if old_parsed.scheme == 'http':",
    ]
    checked = check(after[0], 5, after, STRIP)
    assert checked.problems == []
    kept = with_blank_lines(
        reindented(after, checked.before, indent_unit(STRIP)), checked.before, "python"
    )
    assert kept == [
        "        if old_parsed.hostname != new_parsed.hostname:",
        "            return True",
        "        # Special case: allow http -> https redirect when using the standard",
        "        # ports.",
        "        if old_parsed.scheme == 'http':",
    ]
    diff = hunk(STRIP, checked, kept)
    assert "-        # ports." not in diff and "         # ports." in diff


def test_a_comment_is_code_in_a_language_whose_comments_look_otherwise():
    c_code = Excerpt("x.c", "f", 1, ("#define N 3", "int f() {", "  return N;", "}"), (1, 4), "c")
    assert "#define N 3" in sketch_schema(c_code).model_json_schema()["properties"]["first"]["enum"]


# requests 2.20.0, `requests/sessions.py:118-132`, as the walk's plan showed it.
REDIRECT = Excerpt(
    "requests/sessions.py",
    "SessionRedirectMixin.should_strip_auth",
    118,
    (
        "    def should_strip_auth(self, old_url, new_url):",
        '        """Decide whether Authorization header should be removed when redirecting"""',
        "        old_parsed = urlparse(old_url)",
        "        new_parsed = urlparse(new_url)",
        "        if old_parsed.hostname != new_parsed.hostname:",
        "            return True",
        "        # Special case: allow http -> https redirect when using the standard",
        "        # ports. This isn't specified by RFC 7235, but is kept to avoid",
        "        # breaking backwards compatibility with older versions of requests",
        "        # that allowed any redirects on the same host.",
        "        if (old_parsed.scheme == 'http' and old_parsed.port in (80, None)",
        "                and new_parsed.scheme == 'https' and new_parsed.port in (443, None)):",
        "            return False",
        "        # Standard case: root URI must match",
        "        return old_parsed.port != new_parsed.port or old_parsed.scheme != new_parsed.scheme",
    ),
    (118, 132),
    "python",
)
LOOP = Excerpt(
    "a.py",
    "first_repeat",
    1,
    (
        "def first_repeat(items):",
        "    for item in items:",
        "        if item == 0:",
        "            continue",
        "        last = item",
        "    return None",
    ),
    (1, 6),
    "python",
)


def test_new_lines_reading_a_local_before_the_code_assigns_it_are_a_problem():
    # The walk's sketch named the def line; its new lines went under the docstring, above
    # the two lines assigning the names they read.
    after = [
        "if old_parsed.hostname == new_parsed.hostname and old_parsed.port == new_parsed.port:",
        "    return False",
    ]
    checked = check("def should_strip_auth(self, old_url, new_url):", 1, after, REDIRECT)
    assert checked.problems == [] and syntax_problem(REDIRECT, checked, checked.after) == ""
    assert unbound_problem(REDIRECT, checked, checked.after) == (
        "The new line 120 reads `old_parsed` before line 120 of the code assigns it: put the "
        "new lines after it (name that line as `first`)."
    )
    # The same lines after the assignments read what is there, and so do parameters and
    # names the code never assigns (globals).
    below = check("new_parsed = urlparse(new_url)", 1, ["new_parsed = urlparse(new_url)", *after],
                  REDIRECT)  # fmt: skip
    assert below.problems == [] and unbound_problem(REDIRECT, below, below.after) == ""
    params = check("old_parsed = urlparse(old_url)", 1, ["old_parsed = parse(old_url, DEFAULT)"],
                   REDIRECT)  # fmt: skip
    assert unbound_problem(REDIRECT, params, params.after) == ""


def test_a_name_a_loop_assigns_for_its_next_pass_is_not_a_problem():
    checked = check("continue", 1, ["if item == last:", "    return item"], LOOP)
    assert checked.problems == [] and unbound_problem(LOOP, checked, checked.after) == ""
    # Outside the loop, before it, the same read is one.
    before = check("for item in items:", 1, ["    seen = last", "    for item in items:"], LOOP)
    assert unbound_problem(LOOP, before, before.after).startswith("The new line 2 reads `last`")


@pytest.mark.django_db
def test_a_second_step_on_the_same_definition_points_at_the_first_and_is_not_sketched_again(
    session_on_codebase,
):
    # The requests walk: "Add a new test for the check" targeted the function under test, and
    # its sketch deleted two of the lines the first step's sketch kept.
    session, path = session_on_codebase
    FakeProvider.script(
        "fake", {"first": "return token", "lines": 1, "after": ["return token or None"]}
    )
    test_step = {**_targeting(path), "title": "Add a test for the expiry"}
    data = {"steps": [_targeting(path), test_step]}
    first, second = sketch_steps(session, agent_for(session, "A"), data, key="sketch:1")["steps"]
    assert len(FakeProvider.prompts(schema="ChangeSketch")) == 1
    assert first["sketch"]["checked"] and first["code"]["start"] == 1
    assert "code" not in second and "sketch" not in second
    assert second["same_code_as"] == 1
    markdown = render_plan({"steps": [first, second]}, FileSet([path]))
    assert markdown.count("Current code of `issue`") == 1
    assert "   Changes `issue`, whose code and sketch are under step 1." in markdown


def test_a_sketch_that_writes_again_the_lines_it_keeps_below_is_a_problem():
    # seaborn-3010 on local-1.5b: `x = data["x"]` replaced by the whole body, quotes changed,
    # and the body left below it.
    after = [
        "        x = data['x']",
        "        y = data['y']",
        "        if x.nunique() <= self.order:",
        "            # TODO warn?",
        "            xx = yy = []",
        "        else:",
        "            p = np.polyfit(x, y, self.order)",
        "            xx = np.linspace(x.min(), x.max(), self.gridsize)",
        "            yy = np.polyval(p, xx)",
        "            return pd.DataFrame(dict(x=xx, y=yy))",
    ]
    checked = check('x = data["x"]', 1, after, FIT)
    assert checked.before == ['        x = data["x"]']
    assert checked.problems == [
        "The after lines write lines 25-34 of the code again, but those lines stay below the "
        "change: count them in the lines it replaces, or leave them out."
    ]
    one = check('x = data["x"]', 1, ["        x = data['x'].dropna()"], FIT)
    assert one.problems == []


def test_a_long_definition_whose_docstring_fills_half_the_window_is_shown_from_its_end():
    # xarray-3095: the 60 lines shown of `Dataset.copy` were all docstring, and the sketch put
    # its new lines between the header and the docstring.
    doc = ['        """Returns a copy.', *["        Some words."] * 40, '        """']
    lines = [
        "    def copy(self, deep=False):",
        *doc,
        *["        x = x + 1"] * 80,
        "        return x",
    ]
    code = window("a.py", "Dataset.copy", lines, (1, len(lines)), "python")
    assert code is not None and code.start == 43 and code.lines[0] == '        """'
    checked = check('"""', 1, ["        if deep:", "            x = 2"], code)
    assert checked.problems == [] and checked.start == 43
    short = ['        """Returns a copy."""', *["        x = x + 1"] * 80]
    kept = window("a.py", "f", ["    def f(self):", *short], (1, 82), "python")
    assert kept is not None and kept.start == 1


SKY = Excerpt(
    "astropy/coordinates/sky_coordinate.py",
    "SkyCoord.__getattr__",
    869,
    (
        "    def __getattr__(self, attr):",
        "        if '_sky_coord_frame' in self.__dict__:",
        "            return getattr(self._sky_coord_frame, attr)",
        "        raise AttributeError(attr)",
    ),
    (869, 872),
    "python",
)
SKY_TASK = (
    "Subclassed SkyCoord gives misleading attribute access message\n```python\n"
    "class custom_coord(coord.SkyCoord):\n    @property\n    def prop(self):\n"
    "        return self.random_attr\n```"
)


def test_a_sketch_that_pastes_the_tasks_example_into_the_code_is_asked_again_then_flagged():
    # astropy-14096 on local-1.5b: the sketch added the issue's `def prop` to SkyCoord.
    pasted = SimpleNamespace(
        first="raise AttributeError(attr)",
        lines=1,
        after=[
            "        raise AttributeError(attr)",
            "    @property",
            "    def prop(self):",
            "        return self.random_attr",
        ],  # fmt: skip
    )
    asked = []

    def ask(attempt, messages, schema):
        asked.append(messages[-1].content)
        return pasted

    sketch = write_sketch(Brief(SKY_TASK, {"title": "Fix"}, 1), SKY, ask)
    assert len(asked) == 2 and "`prop`, which is the task's own example code" in asked[1]
    assert sketch["checked"] is False and "task's own example code" in sketch["problem"]
    fixed = SimpleNamespace(
        first="raise AttributeError(attr)",
        lines=1,
        after=["        raise AttributeError(f'{type(self).__name__} has no {attr!r}')"],
    )
    assert write_sketch(Brief(SKY_TASK, {"title": "Fix"}, 1), SKY, lambda *a: fixed)["checked"]
