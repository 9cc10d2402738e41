"""What a task names, looked up by the app before any model plans: the files it names, the
definitions it writes as code (`Class.method`, `pkg.module.func`, `name()`, a backticked
name, `pkg/mod.py::Class.method`) and the lines of code it quotes, found word for word.

    named = named_in_task(task, workspace.files, workspace.navigator)  # [Named], best first
    named_files(task, workspace.files, workspace.navigator)            # [(path, why)]

The issue's own words decide first: an issue that named a file and quoted the line to change
got a plan that left that file out. What a reproduction script only uses (`iris` in
`iris = sns.load_dataset("iris")`) and names defined only in examples, docs, vendored or
generated files are not taken for the project's code.

No model, no Django: plain text handling over the navigator (the symbol table, and the file
texts for quoted lines when the navigator has them). Every pattern here is linear (character
classes, no nested repetition) and the task is capped at MAX_TASK characters.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from rag import verbatim
from rag.navigation import Navigator, SymbolHit
from rag.paths import FileSet
from rag.verbatim import TextHit

MAX_TASK = 20_000
MAX_PATHS = 8
MAX_NAMES = 12
MAX_LINES = 6
"""Lookups of each kind at most: each quoted line is one pass of the database over the
files holding its longest word."""
MAX_NAME = 100
MAX_ARGUMENT = 160
"""An evidence step's argument holds this much (EvidenceStep.argument)."""
GENERIC = 5
"""A name whose qualifier fits nothing is taken only when at most this many things define it."""

KINDS = ("line", "path", "name")
"""What a Named is, in the order their lookups come: a quoted line pins a file and a line, a
path a file, a name a definition."""

_ASIDE_ROLES = frozenset({"docs", "vendored", "generated", "data"})
_ASIDE_DIRS = frozenset({"example", "examples", "sample", "samples", "demo", "demos", "doc",
                         "docs", "documentation", "tutorial", "tutorials", "gallery"})  # fmt: skip
"""Files that show or ship code but are not the project's own (rag.roles calls examples
source, so their folders are checked here)."""
_DATA_KINDS = frozenset({"variable", "constant"})
_CLASS_KINDS = frozenset({"class", "struct", "interface", "trait"})
_BUILTINS = frozenset(dir(builtins)) | {"self", "cls", "this"}
_FILE_SUFFIXES = frozenset({"py", "pyi", "pyx", "js", "jsx", "mjs", "cjs", "ts", "tsx", "go",
                            "java", "kt", "rs", "rb", "php", "c", "h", "cc", "cpp", "hpp", "cs",
                            "swift", "scala", "sh", "cfg", "toml", "ini", "yaml", "yml", "json",
                            "md", "rst", "txt", "html", "css", "scss", "sql", "xml", "vue",
                            "svelte", "lock", "in"})  # fmt: skip

_FENCE = re.compile(r"\s*(`{3,}|~{3,})\s*([\w+-]*)")
_INLINE = re.compile(r"`([^`\n]{1,300})`")
_SPLIT = re.compile(r"[\s()\[\]{}<>\"',;`|*!?]+")
_NAME = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::|#)[A-Za-z_]\w*)*")
_ASSIGNED = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]")
_IMPORT = re.compile(r"\s*(?:import\s|from\s+[\w.]+\s+import\s|#\s*include\s|use\s)")
"""An import says what the reporter's code uses, not where a change goes: seaborn-2848's
`import seaborn as sns` was found in one project file, a CI script, which the plan then
listed to modify. What the task calls or names is looked up as names instead."""
IMPORT_NOTE = "an import: it says what the code uses, not where to change it"
_DOCTEST = re.compile(r"\s*(?:>>>|\.\.\.)\s")
"""A docstring's example line (`>>> iris = sns.load_dataset("iris")`): documentation, not the
code to change. seaborn-2848's snippet line was found in `clustermap`'s docstring, and the plan
listed seaborn/matrix.py for it."""
TEST_DEFINITION_NOTE = "a definition's first line found only in tests: not the code to change"
"""A task's `def unit(self):` (astropy-13977: the reporter's example class) was found in one
test file, which a quoted statement would pin as the file to change. A quoted line that says
what to change runs in the project's source; a test defining the same header is a namesake."""
_FRAME_LINE = re.compile(r"\s*(?:-+>\s*)?\d+\s+")
"""IPython's `----> 12     code` and `   1263   code`: the code is what follows."""
_FAILING_LINE = re.compile(r"\s*-+>\s*\d+\s+\S")
"""IPython's arrow: the line of a frame that was running when the error was raised."""
_TRACEBACK = ("Traceback (", 'File "', "File '")
_HEADER = "Traceback (most recent call last)"
"""Also in IPython's `KeyError        Traceback (most recent call last)`: not code."""


@dataclass(frozen=True)
class Named:
    """One thing the task names, and what it is in this codebase."""

    written: str
    """As the task writes it."""
    kind: str
    """line (a quoted line of code), path or name."""
    path: str = ""
    """Where it is: the file, or the file holding the line or the definition; "" when it was
    not found."""
    line: int = 0
    """The quoted line's number, the line a path:line cites, or the definition's first."""
    end_line: int = 0
    qualified_name: str = ""
    """A name's definition (`Session.request`, or `ClosingMixin.close` for an inherited
    method)."""
    definition_kind: str = ""
    """A name's definition is a function, method, class, variable…"""
    note: str = ""
    """How it resolved, or why it did not."""
    tool: str = ""
    argument: str = ""
    """The read-only lookup that shows it as evidence ("" when there is none)."""

    @property
    def found(self) -> bool:
        return bool(self.path)

    @property
    def reason(self) -> str:
        """Why the file belongs in a plan, in one line."""
        if self.kind == "line" and not verbatim.statement(self.written):
            return (
                f"The task names `{self.written}`, which the code does not define; it is "
                f"written at line {self.line} of `{self.path}`"
            )
        if self.kind == "line":
            return f"The task quotes line {self.line} of `{self.path}`: `{self.written}`"
        if self.kind == "path":
            return f"The task names `{self.written}`"
        return f"The task names `{self.written}`, defined here"

    @property
    def why(self) -> str:
        """The evidence step's `why` (at most 60 characters)."""
        text = {
            "line": f"the task quotes line {self.line}",
            "path": "the file the task names",
        }.get(self.kind, f"where {self.written} is defined")
        return text[:60]


def named_in_task(
    task: str, paths: FileSet, navigator: Navigator, *, limit: int = 12
) -> list[Named]:
    """What `task` names, each resolved against the codebase or said not found: quoted lines
    (inline code that is a statement, statements in its code blocks; found word for word,
    whitespace aside, in the project's own files — needs `navigator.texts`), file paths
    (`paths.resolve`: exact, case, unique suffix; a `path:12` keeps its line) and names
    written as code (`Class.method`, dotted, `name()`, backticked, `path::Class.method`;
    through `navigator.find_symbol`, so an inherited method resolves to its mixin). Found
    items come first, in KINDS order and then as the task writes them; at most `limit`."""
    text = task[:MAX_TASK]
    prose, blocks, failing = _split_code(text)
    spans = _INLINE.findall(prose)
    assigned = {m[1] for line in blocks if (m := _ASSIGNED.match(line))}
    roles = navigator.roles()
    scopes = {part.lower() for p in paths for part in PurePosixPath(p).with_suffix("").parts}
    found = [
        *_lines(spans, blocks, navigator, roles, failing),
        *_paths(prose, spans, paths, navigator),
        *_names(prose, spans, assigned, scopes, navigator, roles),
    ]
    unique: dict[tuple[str, str], Named] = {}
    for item in found:
        unique.setdefault((item.kind, item.written), item)
    ordered = sorted(unique.values(), key=lambda n: (not n.found, KINDS.index(n.kind)))
    return ordered[:limit]


def named_files(task: str, paths: FileSet, navigator: Navigator) -> list[tuple[str, str]]:
    """The files the task itself points at, each once, with a one-line reason, for the plan's
    Files (`fill_files` keeps them):

    - (path, "The task names `pkg/x.py`") for a path the task writes (exact, case or unique
      suffix; `x.py:12` too);
    - (path, "The task quotes line 12 of `pkg/x.py`: `x = str(x)`") for a line of code the
      task quotes that appears word for word in one of the project's files (needs a
      navigator with file texts: `Workspace.of(codebase).navigator`; a bare
      `Navigator(folder)` skips quoted lines);
    - (path, "The task names `Class.method`, defined here") for a definition the task writes
      as code, resolved as find_symbol resolves it (inherited methods to the base defining
      them).

    Paths are the codebase's own spelling; a file named several ways keeps its first reason,
    in that order. Definitions only in examples, docs, vendored or generated files, and names
    the task's own snippets assign, give no file. Nothing found: an empty list."""
    chosen: dict[str, str] = {}
    for item in named_in_task(task, paths, navigator, limit=MAX_PATHS + MAX_NAMES + MAX_LINES):
        if item.found:
            chosen.setdefault(item.path, item.reason)
    return list(chosen.items())


_DEFINES = re.compile(
    r"\s*(?:async\s+)?(class|def|function|fn|func)\s+([A-Za-z_]\w*)(?:\s*\(([^()]*)\))?"
)
_PARAMETER = re.compile(r"\s*\**([A-Za-z_]\w*)")


def defined_name(line: str) -> str:
    """The name a line of code declares as a class or function (`def unit(self):` → unit),
    or ""."""
    found = _DEFINES.match(line)
    return found[2] if found else ""


_MARKUP = re.compile(r"!?\[[^\]\n]{0,200}\]\([^)\s]{0,2000}\)|<?https?://[^\s)>]{1,2000}>?")
"""A markdown image or link (`![alt](url)`, `[text](url)`) or a bare address: a screenshot's
file name or a URL's words are not the code's names."""


def without_markup(task: str) -> str:
    """The task without markdown images, links and bare addresses (each becomes a space)."""
    return _MARKUP.sub(" ", task[:MAX_TASK])


def example_names(task: str) -> set[str]:
    """What the task's own code snippets define: the classes and functions they declare, those
    functions' parameters and the names they assign (`class C`, `def __init__(self, a)`,
    `iris = …`). The reporter's example, not the codebase's: looking them up in the codebase
    finds nothing, or something else of the same name."""
    _prose, blocks, _failing = _split_code(task[:MAX_TASK])
    names: set[str] = set()
    for line in blocks:
        defined = _DEFINES.match(line)
        if defined:
            names.add(defined[2])
            # A function's parameters; a class's parentheses hold its bases, which are used.
            parameters = "" if defined[1] == "class" else defined[3] or ""
            for parameter in parameters.split(","):
                found = _PARAMETER.match(parameter)
                if found:
                    names.add(found[1])
        assigned = _ASSIGNED.match(line)
        if assigned:
            names.add(assigned[1])
    return names - {"self", "cls", "this"}


# Reading the task -------------------------------------------------------------------------


def _split_code(text: str) -> tuple[str, list[str], list[str]]:
    """(the prose, the code lines of its fenced and indented blocks, the lines tracebacks
    show failing). Diff markers, IPython's frame arrows and traceback headers are taken off the
    code lines. The failing lines are each frame's running line (under `File "…", line 9, in
    f`, or at IPython's `---->` arrow), innermost first: the last frame of the last traceback
    is where the error was raised."""
    prose: list[str] = []
    code: list[str] = []
    failing: list[str] = []
    fence = ""
    diff = False
    indented = False
    previous = ""
    for line in text.splitlines():
        opening = _FENCE.match(line)
        if opening and (not fence or opening[1].startswith(fence[0])):
            fence = "" if fence else opening[1]
            diff = bool(fence) and opening[2].lower() in ("diff", "patch")
            continue
        # An indented block after a blank line, and the source line under a traceback's
        # `File "…", line 9, in f` (a pasted traceback is often not fenced).
        frame_source = previous.strip().startswith(_TRACEBACK[1:])
        if fence:
            code.append(_code_line(line, diff))
        elif frame_source or (
            line.startswith(("    ", "\t")) and (indented or not previous.strip())
        ):
            code.append(_code_line(line, False))
            indented = not frame_source
        else:
            prose.append(line)
            indented = indented and not line.strip()
        if (frame_source or _FAILING_LINE.match(line)) and code and code[-1]:
            failing.append(code[-1])
        previous = line
    return "\n".join(prose), [c for c in code if c], failing[::-1]


def _code_line(line: str, diff: bool) -> str:
    stripped = line.strip()
    if diff and stripped[:1] in ("+", "-") and stripped[:3] not in ("+++", "---"):
        stripped = stripped[1:].strip()
    if stripped.startswith(_TRACEBACK) or _HEADER in stripped:
        return ""
    frame = _FRAME_LINE.match(line)
    if frame and frame.end() < len(line):
        stripped = line[frame.end() :].strip()
    return stripped


# Quoted lines -----------------------------------------------------------------------------


def _lines(
    spans: list[str],
    blocks: list[str],
    navigator: Navigator,
    roles: dict[str, str],
    failing: list[str],
) -> Iterator[Named]:
    """The quoted lines looked up, at most MAX_LINES: the lines a traceback shows failing
    first (innermost first), then the prose's inline code, then the code blocks'. seaborn-2848's
    reproduction snippet and IPython's header took all six lookups, and the line its traceback
    fails at (`if np.isnan(key):`, in the one method that holds it) was never looked up."""
    quoted = [line for line in failing if verbatim.statement(line)]
    quoted += [s.strip() for s in spans if verbatim.statement(s)]
    quoted += [line for line in blocks if verbatim.statement(line)]
    for written in list(dict.fromkeys(quoted))[:MAX_LINES]:
        if _IMPORT.match(written):
            yield Named(written, "line", note=IMPORT_NOTE)
            continue
        result = navigator.find_text(written)
        if not result.searched:
            continue
        yield _placed(written, result.hits, result.message, roles, navigator)


def _placed(
    written: str, hits: list[TextHit], message: str, roles: dict[str, str], navigator: Navigator
) -> Named:
    """Where text the task quotes says the change goes: the one file of the project's own
    source (else of its tests) that holds it, and the definition around its line, which the
    evidence shows whole (so the plan can target it). Text held by several such files
    (`import os`, `import requests` from a reproduction snippet) says nothing about where, so
    it pins no file; text found only in examples, docs or vendored files pins none either."""
    own = [
        h for h in hits if not _aside(h.path, roles.get(h.path, "")) and not _DOCTEST.match(h.text)
    ]
    if not own:
        return Named(written, "line", note="only in examples, docs or vendored files" if hits
                     else message)  # fmt: skip
    source = [h for h in own if roles.get(h.path, "") != "test"]
    if not source and _DEFINES.match(written):
        return Named(written, "line", note=TEST_DEFINITION_NOTE)
    files = list(dict.fromkeys(h.path for h in source or own))
    if len(files) > 1:
        shown = ", ".join(f"`{f}`" for f in files[:3])
        more = f" and {len(files) - 3} more" if len(files) > 3 else ""
        return Named(
            written, "line",
            note=f"in {len(files)} files ({shown}{more}), so it does not say which to change",
        )  # fmt: skip
    hit = (source or own)[0]
    # A line the file holds in two definitions (`p.plot(ax, kwargs)` closes both lineplot and
    # scatterplot) says which file, not which definition.
    enclosing = {_enclosing(navigator, h.path, h.line) for h in source or own}
    around = enclosing.pop() if len(enclosing) == 1 else ""
    if around:
        return Named(
            written, "line", hit.path, hit.line, hit.line, around, note=message,
            tool="find_symbol", argument=f"{hit.path}::{around}"[:MAX_ARGUMENT],
        )  # fmt: skip
    return Named(
        written, "line", hit.path, hit.line, hit.line, note=message,
        tool="read_file", argument=f"{hit.path}:{max(1, hit.line - 5)}-{hit.line + 15}",
    )  # fmt: skip


def _enclosing(navigator: Navigator, path: str, line: int) -> str:
    """The qualified name of the innermost function or class of `path` around `line`; ""
    at module level (or without a symbol table)."""
    entries = [
        e
        for e in navigator.outline(path).entries
        if e.start_line <= line <= e.end_line and e.kind not in _DATA_KINDS
    ]
    if not entries:
        return ""
    inner = min(entries, key=lambda e: e.end_line - e.start_line)
    return f"{inner.container}.{inner.name}" if inner.container else inner.name


# Paths ------------------------------------------------------------------------------------


def _paths(prose: str, spans: list[str], paths: FileSet, navigator: Navigator) -> Iterator[Named]:
    seen: set[str] = set()
    found = 0
    for token in [*_SPLIT.split(prose), *spans]:
        written = token.strip().strip(".:").split("::", 1)[0]
        if written in seen or not _looks_like_path(written):
            continue
        seen.add(written)
        if len(seen) > MAX_PATHS * 4 or found >= MAX_PATHS:
            break
        resolved = paths.resolve(written)
        if not resolved.found or resolved.path is None:
            continue  # prose is full of dotted words; only real files are worth a lookup
        real = resolved.path
        found += 1
        line = _cited_line(written)
        if line:
            tool, argument = "read_file", f"{real}:{max(1, line - 5)}-{line + 30}"
        elif navigator.outline(real).entries:
            tool, argument = "outline", real
        else:
            tool, argument = "read_file", real
        yield Named(
            written, "path", real, line, note=f"{resolved.how} match", tool=tool,
            argument=argument,
        )  # fmt: skip


def _looks_like_path(written: str) -> bool:
    if not written or len(written) > 300 or "://" in written or written.startswith("//"):
        return False
    bare = written.split(":", 1)[0].split("#", 1)[0]
    if "/" in bare.strip("/"):
        return True
    suffix = PurePosixPath(bare).suffix.lower().lstrip(".")
    return suffix in _FILE_SUFFIXES and len(PurePosixPath(bare).stem) > 1


def _cited_line(written: str) -> int:
    """12 of `x.py:12`, `x.py:12-20` or `x.py#L12`; 0 when no line is cited."""
    for separator in (":", "#L"):
        if separator in written:
            tail = written.rsplit(separator, 1)[1].split("-", 1)[0].lstrip("L")
            if tail.isdigit():
                return int(tail)
    return 0


# Names ------------------------------------------------------------------------------------


def _names(
    prose: str,
    spans: list[str],
    assigned: set[str],
    scopes: set[str],
    navigator: Navigator,
    roles: dict[str, str],
) -> Iterator[Named]:
    written: dict[str, bool] = {}
    """Name → whether it is written as code (backticks, `()`, `::`)."""
    for span in spans:
        name = _as_name(span)
        if name:
            written.setdefault(name, True)
    for called in _called(prose):
        written.setdefault(called, True)
    for token in _SPLIT.split(prose):
        token = token.strip(".:")
        if "." in token and _NAME.fullmatch(token) and _codeish(token):
            written.setdefault(token, False)
    done = 0
    for name, as_code in written.items():
        last = re.split(r"\.|::|#", name)[-1]
        if keyword.iskeyword(last) or name in _BUILTINS or not 2 <= len(name) <= MAX_NAME:
            continue
        if _looks_like_path(name) and "::" not in name:
            continue  # `setup.py`: a path, looked up as one
        done += 1
        if done > MAX_NAMES:
            break
        yield _resolve_name(name, as_code, assigned, scopes, navigator, roles)


def _called(prose: str) -> Iterator[str]:
    """`name` and `Class.method` of each `name()` / `Class.method()` in the prose (read back
    from each `()`, so the work stays linear)."""
    start = prose.find("()")
    while start >= 0:
        begin = start
        while begin > 0 and (prose[begin - 1].isalnum() or prose[begin - 1] in "_."):
            begin -= 1
        name = prose[begin:start].strip(".")
        if name and _NAME.fullmatch(name):
            yield name
        start = prose.find("()", start + 2)


def _as_name(span: str) -> str:
    """The name a backticked span writes (`Session.request(x)` → `Session.request`), or ""."""
    text = span.strip()
    head, _, rest = text.partition("::")
    if rest and _looks_like_path(head):
        tail = _NAME.match(rest)
        return f"{head}::{tail[0]}" if tail and tail.end() == len(rest) else ""
    match = _NAME.match(text)
    if match is None:
        return ""
    after = text[match.end() :].strip()
    if after and not (after.startswith("(") and after.endswith(")")):
        return ""
    return match[0]


def _codeish(token: str) -> bool:
    """A dotted word of prose that reads as code: a part in CamelCase or with `_`
    (`Session.request`, `utils.to_text`), not `e.g` or `i.e`."""
    parts = token.split(".")
    return all(len(p) > 1 for p in parts) and any(
        "_" in p or (p[:1].isupper() and not p.isupper()) or any(c.isupper() for c in p[1:])
        for p in parts
    )


def _resolve_name(
    name: str,
    as_code: bool,
    assigned: set[str],
    scopes: set[str],
    navigator: Navigator,
    roles: dict[str, str],
) -> Named:
    result = navigator.find_symbol(name)
    own = [h for h in result.hits if not _aside(h.path, h.role)]
    if not result.found:
        if as_code and _NAME.fullmatch(name) and "." not in name:
            # Not defined here, but maybe written here: `REQUESTS_CA_BUNDLE`, a setting's key
            # or an error's text the task quotes. Its one place in the source is where to look.
            text = navigator.find_text(name)
            if text.searched and text.hits:
                placed = _placed(name, text.hits, text.message, roles, navigator)
                if placed.found:
                    return placed
        return Named(name, "name", note=result.message)
    if not own:
        return Named(name, "name", note="defined only in examples, docs or vendored files")
    if name in assigned and all(h.kind in _DATA_KINDS for h in own):
        return Named(name, "name", note="a name the task's own snippet assigns")
    if result.match == "name" and not (
        as_code and result.total <= GENERIC and _known_scope(name, scopes, navigator)
    ):
        # `os.path.join`, `np.array`: another library's name; this codebase's `join` is not it.
        return Named(name, "name", note=result.message)
    hit: SymbolHit = own[0]
    # The lookup the card shows: the name as written, unless what it finds first is not the
    # project's own definition (an example's comes before it), then the definition itself.
    first = result.hits[0]
    argument = name if first == hit else f"{hit.path}::{hit.qualified_name}"
    return Named(
        name, "name", hit.path, hit.start_line, hit.end_line, hit.qualified_name,
        definition_kind=hit.kind, note=result.message, tool="find_symbol",
        argument=argument[:MAX_ARGUMENT],
    )  # fmt: skip


def _known_scope(name: str, scopes: set[str], navigator: Navigator) -> bool:
    """Whether a qualified name starts with something of this codebase: a file path, a
    folder or module (`requests` in `requests.Session.send`), or a class it defines."""
    if "::" in name:
        return True
    first = re.split(r"\.|#", name)[0]
    if first.lower() in scopes:
        return True
    return any(
        h.name == first and h.kind in _CLASS_KINDS for h in navigator.find_symbol(first).hits
    )


def _aside(path: str, role: str) -> bool:
    """Whether `path` is not the project's own code: docs, vendored, generated or data, or in
    an examples or docs folder."""
    folders = {part.lower() for part in PurePosixPath(path).parts[:-1]}
    return role in _ASIDE_ROLES or bool(folders & _ASIDE_DIRS)
