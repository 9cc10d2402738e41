"""Change sketches: for each plan step that changes a real definition, the definition's current
code (verbatim, with its line numbers) and a short before/after the model writes for that code
alone, checked against it.

A small model asked for a whole plan restates the bug as the fix; asked for one definition's
change, with its code in front of it, it writes the change. So each sketch is one small call
(agents.planning.sketching): the task, the step, and the definition's numbered code. The model
names the first line that changes by its text (the schema offers only the code's own lines)
and how many lines from it change, and writes what they become; the lines replaced are taken
from the code, so they are the code's own lines, consecutive, character for character. The
app checks the rest: a header named but not rewritten keeps its place (the new code goes
under it); an "after" that changes nothing, or writes one line over and over, is no sketch;
and a definition that parses must still parse with the change applied (tree-sitter, and
Python's own parser for Python). Its "after" lines get the code's indentation where the model
flattened it. A sketch that fails the check is asked for once more with the problem shown,
then kept flagged. One that passes is shown as a unified diff hunk with the code's real line
numbers and two lines around it.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, create_model

from rag.chunking import split_lines
from rag.models import CodeFile

EXCERPT_LINES = 60
"""At most this many lines of a definition go to the model (and its enum of lines)."""
SHOWN_LINES = 24
"""A definition longer than this is folded on the page around the lines the sketch changes."""


@dataclass(frozen=True)
class Excerpt:
    """Lines `start`… of `path`, the code of the definition `name` (or a window of it)."""

    path: str
    name: str
    start: int
    lines: tuple[str, ...]
    whole: tuple[int, int]
    """The definition's own first and last line (the excerpt may be a window of it)."""
    language: str = ""
    """The file's language as the index detected it (to parse the code a sketch leaves)."""
    full: tuple[str, ...] = ()
    """All the definition's lines (from `whole[0]`) when `lines` is a window of it, so that a
    sketch is judged on the whole definition, not on a window that need not parse alone."""

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1

    def numbered(self) -> str:
        width = len(str(self.end))
        return "\n".join(f"{n:>{width}}  {line}" for n, line in enumerate(self.lines, self.start))


def fold(line: str) -> str:
    """A line with its white space folded: how "before" lines are compared with the code."""
    return " ".join(line.split())


_HASH = ("python", "ruby", "shell", "perl", "r", "julia", "elixir", "powershell", "toml", "yaml")
_SLASHES = ("javascript", "typescript", "go", "rust", "java", "kotlin", "scala", "php", "csharp",
            "swift", "c", "cpp", "objective-c", "dart", "groovy")  # fmt: skip
_DOCSTRING = re.compile(r"""^[rRbBuU]{0,2}(\"\"\"|''').*\1$""")


def comment(line: str, language: str) -> bool:
    """Whether `line` holds only a comment (or, in Python, a one-line docstring) in the code's
    language; never for a language the index did not name. Such lines are not offered to the
    model as "before" lines, like blank ones: a sketch is about the code that runs, and the
    1.5B model picked the code lines of a span and left its comments and docstring out (the
    requests walk), which read as deleting them."""
    text = line.strip()
    if language in _HASH and text.startswith("#"):
        return True
    if language in _SLASHES and text.startswith(("//", "/*")):
        return True
    return language == "python" and bool(_DOCSTRING.match(text))


def offered(line: str, language: str) -> bool:
    """Whether a line of the code is one the model may name as a "before" line."""
    return bool(line.strip()) and not comment(line, language)


def excerpt(codebase_id: int, target: dict[str, Any], near: int | None = None) -> Excerpt | None:
    """The code of a step's target definition, from the stored file (`window`). None when the
    file or the lines are not there (a withheld file included)."""
    if target.get("kind") != "definition":
        return None
    row = (
        CodeFile.objects.filter(codebase_id=codebase_id, path=target.get("path"))
        .values_list("content", "withheld_reason", "language")
        .first()
    )
    if row is None or row[1]:
        return None
    return window(
        str(target.get("path")),
        str(target.get("name") or ""),
        split_lines(row[0]),
        (int(target.get("start") or 0), int(target.get("end") or 0)),
        row[2] or "",
        near,
    )


def window(
    path: str,
    name: str,
    lines: list[str],
    span: tuple[int, int],
    language: str = "",
    near: int | None = None,
) -> Excerpt | None:
    """The definition at `span` (first and last line) of a file's `lines`: all of it, or for a
    long one the EXCERPT_LINES lines around `near` (a line the step cites), else its first
    lines. None when the span is not in the file."""
    start, end = span
    end = min(max(end, start), len(lines))
    if start < 1 or start > len(lines):
        return None
    first = start
    if end - start + 1 > EXCERPT_LINES:
        if near is not None and start <= near <= end:
            first = max(start, min(near - EXCERPT_LINES // 2, end - EXCERPT_LINES + 1))
        elif language == "python":
            # A docstring that fills half the window leaves the model no code to change but
            # the header, and the sketch then went between the header and the docstring
            # (xarray-3095's `Dataset.copy`, whose 60 lines shown were all docstring): the
            # window starts at the docstring's closing line instead.
            whole = Excerpt(
                path, name, start, tuple(lines[start - 1 : end]), (start, end), language
            )
            closing = start + _header_end(whole, 0)
            if closing - start + 1 > EXCERPT_LINES // 2:
                first = max(start, min(closing, end - EXCERPT_LINES + 1))
        last = first + EXCERPT_LINES - 1
    else:
        last = end
    shown = tuple(lines[first - 1 : last])
    full = tuple(lines[start - 1 : end]) if (first, last) != (start, end) else ()
    return Excerpt(path, name, first, shown, (start, end), language, full)


MAX_SPAN = 8
"""Lines one sketch may replace: a step's change is a few lines a reviewer reads in a minute."""


def sketch_schema(code: Excerpt) -> type[BaseModel]:
    """first: one line of `code`; lines: how many from it (1 to MAX_SPAN); after: free. The
    lines replaced are taken from the code, so they are its own lines, consecutive and verbatim
    by construction, and few by the schema. Two schemas were measured before this one on the
    sketch bench (bench/sketches.py, local-1.5b): offered the code's lines as an enum of
    "before" lines, the model named the def line eight times in 7 of 23 sketches and skipped
    lines in 3 more (12 of 23 passed the check); asked for the first and last line numbers, it
    named the whole definition and copied the line numbers into its code (0 of 6). One line
    named by its text cannot loop, and a count cannot reach past MAX_SPAN.

    The JSON schema (a grammar for the local model, response_format for a remote one) offers
    only the code's own lines (whitespace folded, not blank or comment lines) as `first`;
    validation takes any string and number, so a provider that ignores the schema is caught
    by `check` and asked again with the problem shown, not failed as invalid JSON."""
    choices: list[Any] = list(
        dict.fromkeys(fold(line) for line in code.lines if offered(line, code.language))
    )
    return create_model(
        "ChangeSketch",
        first=(
            str,
            Field(
                description="The first line of the code shown that the step changes, copied "
                "exactly (to add code: the line it goes after).",
                json_schema_extra={"enum": choices},
            ),
        ),
        lines=(
            int,
            Field(
                description=f"How many consecutive lines from it change (1 to {MAX_SPAN}).",
                json_schema_extra={"enum": list(range(1, MAX_SPAN + 1))},
            ),
        ),
        after=(
            list[str],
            Field(
                description="What those lines become, as complete code.",
                max_length=MAX_SPAN + 8,
            ),
        ),
    )


@dataclass(frozen=True)
class Checked:
    before: list[str]
    """The lines the sketch replaces as the code spells them (indentation included)."""
    start: int
    """The line number of the first of them (0 when the sketch named no line of the code)."""
    problems: list[str]
    after: list[str] = field(default_factory=list)
    """What replaces them: the model's "after" lines, with the definition's header kept above
    them when the sketch adds code after it (`check`)."""


def span_lines(code: Excerpt, first: Any, count: Any) -> list[str]:
    """The `count` lines of the code from the line `first` (folded text), or [] when `first`
    is not one of them: what a sketch being written replaces, as far as it has said."""
    at = _line_of(code, first)
    if at is None:
        return []
    try:
        many = max(1, min(int(count or 1), MAX_SPAN))
    except (TypeError, ValueError):
        many = 1
    return list(code.lines[at : at + many])


def _line_of(code: Excerpt, text: Any) -> int | None:
    """The index in the code of its first line reading `text` (white space folded)."""
    want = fold(str(text or ""))
    if not want:
        return None
    return next((n for n, line in enumerate(code.lines) if fold(line) == want), None)


def check(first: str, count: int, after: list[str], code: Excerpt) -> Checked:
    """The sketch's line `first` is a line of the code; the `count` lines from it are what it
    replaces, at most MAX_SPAN; `after` changes them without writing one line over and over.
    The model's count is adjusted where its own "after" lines say otherwise: an "after" that
    begins with the unchanged line above (or ends with an unchanged line below) quotes it, so
    the span takes it in rather than writing it twice; one that ends with a line inside the
    span (a line worth the comparison) ends the span there rather than deleting the lines
    after it."""
    at = _line_of(code, first)
    if at is None:
        problem = f"`{str(first).strip()}` is not a line of `{code.name}`."
        return Checked([], 0, [problem], list(after))
    try:
        many = int(count)
    except (TypeError, ValueError):
        many = 1
    end = min(at + max(1, many), len(code.lines)) - 1
    folded = [fold(a) for a in after if fold(a)]
    header = _headers(code).get(at)
    kept = 0
    if header is not None and not _writes_header(after, code.lines[at], header):
        # A definition's first line named (the definition's own, or a method's in a class),
        # and no after line is its header: the model named the line its new code goes after,
        # as the prompt says to. A sketch that replaced the header would delete the
        # definition (local-1.5b wrote two statements in place of `def __array_ufunc__(…)`
        # and, in a class, the body of `_fit_predict` in place of its `def` line), so the
        # header (and a docstring under it) stays, unchanged and not counted.
        end = _header_end(code, at)
        kept = end - at + 1
        after = [*code.lines[at : end + 1], *_under(code, end, after)]
    elif folded:
        while (
            at > 0 and fold(code.lines[at]) != folded[0] and fold(code.lines[at - 1]) == folded[0]
        ):
            at -= 1
    last = folded[-1] if folded else ""
    if len(last) >= MIN_REPEATED_CHARS and not _rewrites(last, fold(code.lines[end])):
        below = range(end + 1, min(len(code.lines), end + MAX_SPAN + 2))
        beyond = [n for n in below if _rewrites(last, fold(code.lines[n]))]
        within = [n for n in range(at + kept, end) if fold(code.lines[n]) == last]
        end = beyond[0] if beyond else within[-1] if within else end
    before = list(code.lines[at : end + 1])
    problems: list[str] = []
    code_lines = [fold(b) for b in before if offered(b, code.language)]
    changed = [fold(b) for b in before[kept:] if offered(b, code.language)]
    if len(changed) > MAX_SPAN:
        problems.append(
            f"Lines {code.start + at + kept}-{code.start + end} hold {len(changed)} lines of "
            f"code: a sketch replaces at most {MAX_SPAN}. Choose the few lines that change."
        )
    if [fold(a) for a in after if fold(a) and not comment(a, code.language)] == code_lines:
        problems.append(
            f"The after lines are lines {code.start + at}-{code.start + end} as they are: the "
            "sketch changes nothing."
        )
    problems += _repeats(before, after)
    problems += _kept_twice(code, end, before, after)
    return Checked(before, code.start + at, problems, list(after))


def _same_code(line: str) -> str:
    """A line folded and with its quotes made one kind: how a rewritten copy of a code line is
    recognised (the 1.5B model wrote `x = data['x']` for `x = data["x"]`)."""
    return fold(line).replace("'", '"')


def _kept_twice(code: Excerpt, end: int, before: list[str], after: list[str]) -> list[str]:
    """The problem with an "after" that writes again lines the code keeps below the span: the
    definition would hold them twice. seaborn-3010's sketch replaced `x = data["x"]` with the
    whole body of `_fit_predict` and left the body in place under it. Lines the span replaces,
    and short ones (`else:`, `return x`), are not counted; one line alone is not a problem."""
    below: dict[str, int] = {}
    for n in range(end + 1, len(code.lines)):
        line = _same_code(code.lines[n])
        if len(line) >= MIN_REPEATED_CHARS and offered(code.lines[n], code.language):
            below.setdefault(line, n)
    replaced = {_same_code(b) for b in before}
    again = sorted(
        {below[line] for a in after if (line := _same_code(a)) in below and line not in replaced}
    )
    if len(again) < 2:
        return []
    first, last = code.start + again[0], code.start + again[-1]
    return [
        f"The after lines write lines {first}-{last} of the code again, but those lines stay "
        "below the change: count them in the lines it replaces, or leave them out."
    ]


def _under(code: Excerpt, end: int, added: list[str]) -> list[str]:
    """`added` indented as the body below line `end` is (one step deeper than the header when
    nothing follows), keeping the model's own nesting among its lines."""
    body = next(
        (_indent(line) for line in code.lines[end + 1 :] if line.strip()),
        _indent(code.lines[end]) + indent_unit(code),
    )
    base = min((len(_indent(a)) for a in added if a.strip()), default=0)
    return [f"{body}{a[base:]}" if a.strip() else a for a in added]


REWRITE_RATIO = 0.85
"""How alike (difflib's ratio) an "after" line and a code line are when the one is the other
rewritten: a quote changed from ' to ", an argument added. Not a tuned weight: below it a line
is the model's own."""


def _rewrites(line: str, code_line: str) -> bool:
    """Whether the folded `line` is `code_line` (folded), as is or lightly rewritten."""
    if line == code_line:
        return True
    return difflib.SequenceMatcher(None, line, code_line).ratio() >= REWRITE_RATIO


def _headers(code: Excerpt) -> dict[int, str]:
    """The excerpt's lines that begin a definition (index: its name), by the index's own
    parser: the definition itself when its first line is shown, and those inside it."""
    from rag.symbols import extract  # the index's parsers, loaded on first use

    found: dict[int, str] = {}
    if code.start <= code.whole[0] <= code.end:
        found[code.whole[0] - code.start] = code.name
    symbols = extract(code.path, textwrap.dedent("\n".join(code.lines)), code.language)
    for definition in symbols.definitions if symbols is not None else []:
        if definition.kind not in ("variable", "constant"):
            found.setdefault(definition.start_line - 1, definition.name)
    return found


def _writes_header(after: list[str], header: str, name: str) -> bool:
    """Whether an `after` line is the definition's header `header`, kept or changed: it starts
    as the header does, up to and including the definition's name (`def _lookup_single`,
    `class PolyFit`, `function render`). A line that only calls the name is not its header
    (seaborn-2848: `return [self._lookup_single(k) …]` in place of `def _lookup_single`)."""
    folded = fold(header)
    own = re.search(rf"(?<![\w]){re.escape(name.rsplit('.', 1)[-1])}(?![\w])", folded)
    prefix = folded[: own.end()] if own else folded
    return any(fold(line).startswith(prefix) for line in after)


_DOCSTRING_OPEN = re.compile(r"""^[rRbBuU]{0,2}(\"\"\"|''')""")
HEADER_LINES = 12
"""A definition's header (its signature, split over lines) ends within this many lines."""


def _header_end(code: Excerpt, at: int) -> int:
    """The index of the last line of the header starting at `at` (the line that ends with `:`
    or `{`), or of the Python docstring right under it; `at` when no such line is near."""
    lines = code.lines
    ends = [
        n
        for n in range(at, min(len(lines), at + HEADER_LINES))
        if fold(lines[n]).endswith((":", "{"))
    ]
    if not ends:
        return at
    end = ends[0]
    opener = _DOCSTRING_OPEN.match(fold(lines[end + 1])) if end + 1 < len(lines) else None
    if code.language != "python" or opener is None:
        return end
    quote = opener.group(1)
    if quote in fold(lines[end + 1])[opener.end() :]:
        return end + 1  # a one-line docstring
    closing = [n for n in range(end + 2, len(lines)) if quote in lines[n]]
    return closing[0] if closing else end


REPEATS = 3
"""An "after" line written this many times more than the code has it is a model in a loop: the
1.5B model's sketch on seaborn-2848 was `def _lookup_single(self, key):` nine times, each one
nested in the last, which parses."""
MIN_REPEATED_CHARS = 10
"""Shorter lines (`pass`, `)`, `else:`) repeat in real changes."""


def _repeats(before: list[str], after: list[str]) -> list[str]:
    """The problem with an "after" that writes one line of code over and over (more times than
    the `before` lines, the code it replaces, hold it)."""
    had = Counter(fold(b) for b in before)
    wrote = Counter(f for f in (fold(a) for a in after) if len(f) >= MIN_REPEATED_CHARS)
    for line, times in wrote.most_common(1):
        if times - had[line] >= REPEATS - 1 and times >= REPEATS:
            return [f"The after lines write `{line}` {times} times: write each line once."]
    return []


_OPENS = (":", "{", "(", "[")
_CLOSES = (")", "}", "]")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def reindented(after: list[str], before: list[str], unit: str = "    ") -> list[str]:
    """The "after" lines with the code's indentation. The model is offered the code's lines
    folded, so it writes them flat and indents only what it nests under them ("else:" flat,
    its new body 4 spaces in). A line the code already has gets that line's own indentation;
    a new line keeps the model's indentation relative to the line above it, one `unit` deeper
    after a line that opens a block when the model did not indent it, one shallower when it
    closes one."""
    indented = [b for b in before if b.strip()]
    if not after or not indented:
        return list(after)
    by_text: dict[str, list[str]] = {}
    for line in indented:
        by_text.setdefault(fold(line), []).append(_indent(line))
    depths = sorted({len(_indent(a).expandtabs(4)) for a in after if a.strip()})
    steps = [b - a for a, b in zip(depths, depths[1:], strict=False)]
    model_unit = min(steps) if steps else 4
    out: list[str] = []
    previous, previous_model, previous_text = _indent(indented[0]), None, ""
    for line in after:
        text = fold(line)
        if not text:
            out.append("")
            continue
        mine = len(_indent(line).expandtabs(model_unit))
        if by_text.get(text):
            indent = by_text[text].pop(0)
        else:
            levels = 0 if previous_model is None else round((mine - previous_model) / model_unit)
            if levels <= 0 and previous_text.endswith(_OPENS):
                levels = 1
            elif levels == 0 and text.startswith(_CLOSES):
                levels = -1
            indent = (
                previous + unit * levels
                if levels >= 0
                else previous[: max(0, len(previous) - len(unit) * -levels)]
            )
        out.append(f"{indent}{line.strip()}")
        previous, previous_model, previous_text = indent, mine, text
    return out


def indent_unit(code: Excerpt) -> str:
    """The code's own indentation step (its smallest indentation deeper than another's)."""
    depths = sorted({len(_indent(line)) for line in code.lines if line.strip()})
    steps = [b - a for a, b in zip(depths, depths[1:], strict=False) if b > a]
    tab = any(line.startswith("\t") for line in code.lines)
    return "\t" if tab else " " * (min(steps) if steps else 4)


def edited(code: Excerpt, checked: Checked, after: list[str]) -> list[str]:
    """The excerpt's lines with the sketch applied: its "before" span replaced by `after`."""
    at = checked.start - code.start
    return [*code.lines[:at], *after, *code.lines[at + len(checked.before) :]]


HUNK_CONTEXT = 2
"""Unchanged lines shown around a sketch's change, as `diff -U2` would."""


def with_blank_lines(after: list[str], before: list[str], language: str = "") -> list[str]:
    """`after` with the lines of the replaced code the model was never offered (blank lines,
    comments: `offered`) kept where they were, since it cannot have meant to remove them. Each
    run of them goes after the "after" line that repeats the code line above it, else before
    the one that repeats the code line below it; when the model rewrote both, a blank run is
    left out and a comment run stays at the same place among the after lines."""
    out = list(after)
    searched = 0
    n = 0
    while n < len(before):
        if offered(before[n], language) or n == 0:
            n += 1
            continue
        end = n
        while end < len(before) and not offered(before[end], language):
            end += 1
        run = before[n:end]
        blank = not any(line.strip() for line in run)
        above = fold(before[n - 1])
        at = next((i for i in range(searched, len(out)) if fold(out[i]) == above), None)
        if at is not None:
            at += 1
        elif end < len(before):
            below = fold(before[end])
            at = next((i for i in range(searched, len(out)) if fold(out[i]) == below), None)
        if at is None and not blank:
            at = min(len(out), n)
        if at is not None and not (blank and at < len(out) and not out[at].strip()):
            if not any(fold(out[i]) == fold(line) for line in run if line.strip()
                       for i in range(at, min(len(out), at + len(run)))):  # fmt: skip
                out[at:at] = run
            searched = at + len(run)
        n = end
    return out


_HEADER = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def hunk(code: Excerpt, checked: Checked, after: list[str]) -> list[str]:
    """The sketch as unified diff hunks with the code's real line numbers and two unchanged
    lines around each change (difflib, as `diff -U2`): what `git apply` takes, and what a
    reviewer reads. Lines the sketch repeats unchanged are context, not removed and added."""
    lines = list(
        difflib.unified_diff(
            list(code.lines), edited(code, checked, after), lineterm="", n=HUNK_CONTEXT
        )
    )[2:]  # the ---/+++ file header
    offset = code.start - 1
    out: list[str] = []
    for line in lines:
        found = _HEADER.match(line)
        if found:
            old, new = int(found[1]) + offset, int(found[3]) + offset
            line = f"@@ -{old}{found[2] or ''} +{new}{found[4] or ''} @@ {code.name}"
        out.append(line)
    return out


def syntax_problem(code: Excerpt, checked: Checked, after: list[str]) -> str:
    """A problem when the definition parses as it is and no longer does with the sketch
    applied (tree-sitter, the index's own parsers). A long definition shown as a window is
    judged whole (`Excerpt.full`): a window need not parse on its own, and on astropy-13977 a
    sketch that replaced a docstring's opening line with `return NotImplemented` passed because
    only the window was parsed. "" when it parses, or cannot be judged."""
    from rag.symbols import parse_errors  # the index's parsers, loaded on first use

    first, lines = (code.whole[0], list(code.full)) if code.full else (code.start, list(code.lines))
    before = parse_errors(code.path, code.language, lines)
    if before is None or before:
        return ""
    at = checked.start - first
    changed = [*lines[:at], *after, *lines[at + len(checked.before) :]]
    broken = parse_errors(code.path, code.language, changed)
    if not broken:
        return ""
    line = checked.start + max(0, broken[0] - 1 - at)
    return (
        f"With this change `{code.name}` no longer parses (near line {line}): write the after "
        "lines as complete code, with the indentation and brackets of the code around them."
    )


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)  # fmt: skip
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def unbound_problem(code: Excerpt, checked: Checked, after: list[str]) -> str:
    """A problem when the sketch's new lines read a local name of a Python function before the
    function first assigns it (the requests walk: `if old_parsed.hostname == …` put under the
    docstring, above `old_parsed = urlparse(old_url)`). Only the new lines are judged, only
    names the function assigns and does not take as parameters, and not inside a loop that
    assigns them (the next pass reads them) or a nested scope. "" when none, or when the code
    is not a whole Python function that parses."""
    if code.language != "python" or code.start != code.whole[0]:
        return ""
    lines = edited(code, checked, after)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(textwrap.dedent("\n".join(lines)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    function = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return ""
    first = checked.start - code.start + 1  # the new lines, 1-based in `lines`
    new = range(first, first + len(after))
    parameters = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    assigned: dict[str, int] = {}
    reads: list[tuple[str, int, ast.stmt | None]] = []

    def visit(node: ast.AST, loop: ast.stmt | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _SCOPES):
                continue
            if isinstance(child, ast.Name):
                if isinstance(child.ctx, ast.Store):
                    assigned[child.id] = min(assigned.get(child.id, child.lineno), child.lineno)
                elif child.lineno in new:
                    reads.append((child.id, child.lineno, loop))
            visit(child, child if isinstance(child, _LOOPS) else loop)

    for statement in function.body:
        visit(ast.Module(body=[statement], type_ignores=[]), None)
    for name, line, loop in reads:
        at = assigned.get(name)
        if name in parameters or at is None or at <= line:
            continue
        if loop is not None and loop.lineno <= at <= (loop.end_lineno or at):
            continue
        moved = len(after) - len(checked.before) if at >= new.stop else 0
        return (
            f"The new line {code.start + line - 1} reads `{name}` before line "
            f"{code.start + at - 1 - moved} of the code assigns it: put the new lines after it "
            "(name that line as `first`)."
        )
    return ""


# ------------------------------------------------------------------ rendering


def diff_lines(sketch: dict[str, Any]) -> list[str]:
    """The sketch as diff lines: its hunk (real line numbers, context) when it has one, else
    its "before" and "after" lines (a sketch being written, or one stored before hunks)."""
    if sketch.get("hunk"):
        return [str(line) for line in sketch["hunk"]]
    before = [str(b) for b in sketch.get("before") or []]
    after = [str(a) for a in sketch.get("after") or []]
    return [*(f"-{b}" for b in before), *(f"+{a}" for a in after)]


def render_sketch_message(number: int, code: Excerpt, data: dict[str, Any]) -> str:
    """What the session page shows while a sketch is written."""
    head = f"**Change sketch for step {number}:** `{code.name}` at `{code.path}:{code.start}`"
    before = span_lines(code, data.get("first"), data.get("lines"))
    lines = diff_lines({"before": before, "after": data.get("after") or []})
    return head + ("\n\n```diff\n" + "\n".join(lines) + "\n```" if lines else "")


def shown_code(code: dict[str, Any], sketch: dict[str, Any] | None) -> list[str]:
    """The definition's lines as the plan shows them, numbered: all of a short one; of a long
    one, its first lines and the lines around the sketch's, the gaps marked with ⋮."""
    lines = [str(line) for line in code.get("lines") or []]
    start = int(code.get("start") or 1)
    if not lines:
        return []
    keep = set(range(len(lines)))
    if len(lines) > SHOWN_LINES:
        keep = set(range(4))
        at = int((sketch or {}).get("start") or 0) - start
        span = len((sketch or {}).get("before") or [])
        if 0 <= at < len(lines):
            keep |= set(range(max(0, at - 4), min(len(lines), at + span + 4)))
        else:
            keep = set(range(SHOWN_LINES))
    width = len(str(start + len(lines) - 1))
    out: list[str] = []
    previous = -1
    for n in sorted(keep):
        if previous >= 0 and n != previous + 1:
            out.append(f"{'⋮':>{width}}")
        out.append(f"{start + n:>{width}}  {lines[n]}")
        previous = n
    if previous < len(lines) - 1:
        out.append(f"{'⋮':>{width}}  ({len(lines) - 1 - previous} more lines)")
    return out


def fenced(lines: list[str], info: str = "") -> list[str]:
    """A fenced block around `lines` that none of them can close."""
    longest = max((len(line) - len(line.lstrip("`")) for line in lines), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *lines, fence]
