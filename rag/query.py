"""What a query says about code, beyond its words: paths, modules and identifiers it names.

Issue-like queries carry strong signals: a stack trace names files (`File ".../core/dataset.py",
line 12`), prose names modules (`astropy.io.fits.Card`) and code names functions and classes
(`to_unstacked_dataset`, `MyClass.method()`). Short questions carry few, and then the dense and
lexical rankings do the work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.lexical import tokenize
from rag.paths import InvalidPath, clean
from rag.vietnamese import bridge

# Every pattern here runs on text a user typed, on a shared server, so each must do linear work:
# possessive quantifiers (`*+`, `++`) never give back what they took, and each token-like match
# starts only where a token starts (a lookbehind), so no position is scanned twice.
MAX_QUERY_CHARS = 100_000
"""Longer tasks are cut (the longest SWE issue in the bench is 25k): analysis stays under ~50 ms."""
_PATH_RUN = re.compile(r"(?<![\w./\\-])[\w./\\-]++")
_PATH_EDGE = "./\\-"
_HAS_EXTENSION = re.compile(r"\w\.\w")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)++")
_WORD = re.compile(r"\b[A-Za-z_]\w{2,}+")
_CODEISH = re.compile(r"_|[a-z][A-Z]|^[A-Z][a-z]++[A-Z]")
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`|^(?: {4}|\t|>>> |\.\.\. )(.*)$", re.M)
_CALL = re.compile(r"\b([A-Za-z_]\w*+)\s*+\(")
_ATTR = re.compile(r"\.([A-Za-z_]\w*)")
_KEYWORDS = frozenset(
    [
        "and",
        "as",
        "assert",
        "async",
        "await",
        "break",
        "class",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "except",
        "finally",
        "for",
        "from",
        "global",
        "if",
        "import",
        "in",
        "is",
        "lambda",
        "nonlocal",
        "not",
        "or",
        "pass",
        "raise",
        "return",
        "try",
        "while",
        "with",
        "yield",
        "None",
        "True",
        "False",
        "self",
        "cls",
        "print",
        "len",
        "str",
        "int",
        "float",
        "list",
        "dict",
        "set",
        "tuple",
        "type",
        "range",
        "object",
    ]
)
_FILE_EXTENSIONS = re.compile(r"\.(?:py|pyi|pyx|js|jsx|ts|tsx|go|rs|java|rb|php|c|h|cc|cpp|md|rst"
                              r"|txt|toml|cfg|ini|yaml|yml|json|html|css)$", re.I)  # fmt: skip


@dataclass
class QueryTerms:
    text: str
    tokens: list[str]
    """Lexical tokens, as the BM25 indexes were built."""
    paths: list[str] = field(default_factory=list)
    """Things that look like file paths or file names, normalised, lower case."""
    modules: list[str] = field(default_factory=list)
    """Dotted names (`pkg.mod.Class.attr`) that may name a module."""
    identifiers: dict[str, float] = field(default_factory=dict)
    """Names that may be defined in the code → how code-like their mention is (0..1]."""
    words: set[str] = field(default_factory=set)
    """Every lower-cased word and token, to match against folder and file names."""
    frames: list[Frame] = field(default_factory=list)
    """Stack-trace frames, kept out of everything above: a frame is evidence only when its file
    is in the codebase (rag.search decides), and then its words join the query's."""


@dataclass
class Frame:
    """One frame of a pasted stack trace: the file it names and the words it holds (the frame
    line and the source line under it)."""

    path: str
    """Normalised, lower case (`usr/lib/site-packages/pkg/mod.py`)."""
    tokens: list[str]
    """Of the function name and source line (the path's own are the codebase file's)."""
    words: set[str]
    identifiers: dict[str, float]
    trace: int = 0
    """Which traceback of the query the frame is in (0, 1, …), outermost call first in each."""


# `File "/x/y.py", line 12, in f` (Python), `x/y.py:12: in f` (pytest), `~/x/y.py in f(a)` and
# `File ~/x/y.py:12, in f(a)` (IPython, followed by numbered source lines), matched per line,
# anchored, with no nested repetition: linear in the line.
_PY_FRAME = re.compile(r'[ \t]*+File "([^"\n]{1,500})", line \d++(?:, in ([\w<>.]++))?')
_PYTEST_FRAME = re.compile(r"([\w./\\-]{1,500}\.py):\d++: in ([\w<>.]++)")
_IPYTHON_FRAME = re.compile(r"([^\s\"'<>]{1,500}\.py) in ([\w<>.]++)\(")
_IPYTHON8_FRAME = re.compile(r"[ \t]*+File ([^\s\"',]{1,500}\.py):\d++, in ([\w<>.]++)")
_IPYTHON_LINE = re.compile(r"[ \t]*+(?:(?:-++>[ \t]*+)?\d++[ \t]|\(\.\.\.\))")


def _frame(line: str) -> re.Match[str] | None:
    return (
        _PY_FRAME.match(line)
        or _PYTEST_FRAME.match(line)
        or _IPYTHON_FRAME.match(line)
        or _IPYTHON8_FRAME.match(line)
    )


def split_frames(query: str) -> tuple[str, list[tuple[str, str, int]]]:
    """The query without its stack-trace frames, and each frame as (path, the frame's text: its
    function name and the source line printed under it, which traceback it is in: a line of
    anything else between two frames starts a new one)."""
    kept: list[str] = []
    frames: list[tuple[str, str, int]] = []
    lines = query.split("\n")
    n = trace = 0
    while n < len(lines):
        line = lines[n]
        match = _frame(line)
        if match is None:
            kept.append(line)
            if line.strip() and frames and frames[-1][2] == trace:
                trace += 1
            n += 1
            continue
        text = match.group(2) or ""
        n += 1
        if match.re is _IPYTHON_FRAME or match.re is _IPYTHON8_FRAME:
            # IPython prints numbered source lines under the frame (`-> 1265 code`).
            while n < len(lines) and _IPYTHON_LINE.match(lines[n]):
                text += "\n" + lines[n]
                n += 1
        else:
            # The source line Python prints under a frame is indented deeper than the frame.
            indent = len(line) - len(line.lstrip())
            below = lines[n] if n < len(lines) else ""
            if below.strip() and len(below) - len(below.lstrip()) > indent and not _frame(below):
                text += "\n" + below
                n += 1
        frames.append((match.group(1), text, trace))
    return "\n".join(kept), frames


_VERSION_LINE = re.compile(
    r"[ \t]*+[-*]?[ \t]*+[\w.\-\[\]]++(?:[ \t]*+[:=]=?[ \t]*+|[ \t]++)v?\d++(?:\.[\w+\-]++)++"
    r"[^\n]{0,30}"
)
_ENV_DUMP = re.compile(r"installed versions|show_versions\(\)|pip freeze|pip list", re.I)


def strip_environment(query: str) -> str:
    """The query without dumps of installed versions (`numpy: 1.24.2`, `pip freeze` output):
    bug reports paste them, and their package names match the wrong files."""
    dump = _ENV_DUMP.search(query)
    if dump:
        line_start = query.rfind("\n", 0, dump.start()) + 1
        if line_start > len(query) // 3:
            query = query[:line_start]
    # Line by line, each line matched from its start only: work is linear in the text.
    return "\n".join(line for line in query.split("\n") if not _VERSION_LINE.fullmatch(line))


def _pathish(query: str) -> list[str]:
    """Runs of path characters that name a folder (`a/b`) or a file with an extension."""
    found = []
    for run in _PATH_RUN.findall(query):
        token = run.strip(_PATH_EDGE)
        if "/" in token or _HAS_EXTENSION.search(token):
            found.append(run.rstrip(_PATH_EDGE))
    return found


def _fenced(query: str) -> list[str]:
    """The bodies of ``` fences, found line by line."""
    bodies: list[str] = []
    body: list[str] | None = None
    for line in query.split("\n"):
        if line.startswith("```"):
            if body is not None:
                bodies.append("\n".join(body) + "\n")
            body = [] if body is None else None
        elif body is not None:
            body.append(line)
    return bodies


def analyze(query: str) -> QueryTerms:
    """What `query` names: its words and tokens, paths, dotted names, identifiers, and (apart)
    the frames of any stack trace it holds."""
    prose, frames = split_frames(strip_environment(query[:MAX_QUERY_CHARS]))
    terms = _analyze_text(prose)
    for path, text, trace in frames:
        cleaned = clean_path(path).lower()
        if cleaned:
            part = _analyze_text(text)
            terms.frames.append(Frame(cleaned, part.tokens, part.words, part.identifiers, trace))
    return terms


def _analyze_text(original: str) -> QueryTerms:
    query = bridge(original)  # Vietnamese → English terms; anything else unchanged
    terms = QueryTerms(text=query, tokens=tokenize(query))
    if query != original:
        terms.tokens += [t for t in tokenize(original) if not t.isascii()]
    terms.words = {w.lower() for w in _WORD.findall(query)} | set(terms.tokens)
    for raw in _pathish(query):
        cleaned = clean_path(raw).lower()
        is_path = "/" in cleaned or _FILE_EXTENSIONS.search(cleaned)
        if cleaned and is_path and cleaned not in terms.paths:
            terms.paths.append(cleaned)
    for dotted in _DOTTED.findall(query):
        if _FILE_EXTENSIONS.search(dotted) and dotted.count(".") == 1:
            continue
        if dotted not in terms.modules:
            terms.modules.append(dotted)

    code = "\n".join(
        [m.group(1) or m.group(2) or "" for m in _CODE_SPAN.finditer(query)] + _fenced(query)
    )
    weights: dict[str, float] = {}

    def add(name: str, weight: float) -> None:
        if name in _KEYWORDS or len(name) < 3 or name.isdigit():
            return
        weights[name] = max(weights.get(name, 0.0), weight)

    for word in _WORD.findall(query):
        add(word, 1.0 if _CODEISH.search(word) else 0.25)
    for word in _WORD.findall(code):
        add(word, 0.6 if not _CODEISH.search(word) else 1.0)
    for name in _CALL.findall(query) + _ATTR.findall(query):
        add(name, 1.0)
    for dotted in terms.modules:
        for part in dotted.split("."):
            add(part, 0.8)
    terms.identifiers = weights
    return terms


def clean_path(path: str) -> str:
    """rag.paths.clean(path), or "" when no file can have that path."""
    try:
        return clean(path)
    except InvalidPath:
        return ""
