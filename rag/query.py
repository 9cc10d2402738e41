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
from rag.parsers.repomix import normalize_path
from rag.vietnamese import bridge

_PATHISH = re.compile(r"[\w./\\-]*\w\.\w+|[\w.-]+(?:/[\w.-]+)+")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_WORD = re.compile(r"\b[A-Za-z_]\w{2,}\b")
_CODEISH = re.compile(r"_|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]")
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`|^(?: {4}|\t|>>> |\.\.\. )(.*)$", re.M)
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
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


_VERSION_LINE = re.compile(
    r"^\s*[-*]?\s*[\w.\-\[\]]+\s*(?:[:=]=?|\s)\s*v?\d+(?:\.[\w+\-]+)+[^\n]{0,30}$", re.M
)
_ENV_DUMP = re.compile(r"(?im)^.*(?:installed versions|show_versions\(\)|pip freeze|pip list).*$")


def strip_environment(query: str) -> str:
    """The query without dumps of installed versions (`numpy: 1.24.2`, `pip freeze` output):
    bug reports paste them, and their package names match the wrong files."""
    dump = _ENV_DUMP.search(query)
    if dump and dump.start() > len(query) // 3:
        query = query[: dump.start()]
    return _VERSION_LINE.sub("", query)


def analyze(query: str) -> QueryTerms:
    original = strip_environment(query)
    query = bridge(original)  # Vietnamese → English terms; anything else unchanged
    terms = QueryTerms(text=query, tokens=tokenize(query))
    if query != original:
        terms.tokens += [t for t in tokenize(original) if not t.isascii()]
    terms.words = {w.lower() for w in _WORD.findall(query)} | set(terms.tokens)
    for raw in _PATHISH.findall(query):
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
        [m.group(1) or m.group(2) or "" for m in _CODE_SPAN.finditer(query)] + _FENCE.findall(query)
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
    path = path.strip().strip("`'\"<>()[]{},;")
    path = re.sub(r"(#L\d+(-L?\d+)?|:\d+(-\d+)?)$", "", path)
    return normalize_path(path)
