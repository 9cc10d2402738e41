"""Cut a file into chunks that fit MiniLM's 256-token window and follow definitions.

Source files are cut where the definitions tree-sitter found (rag.symbols) start and end: each
top-level definition, with the comments directly above it, is a section, and one too large
for a chunk is cut at the definitions inside it (the methods of a big class) before it falls
back to windows of lines with a small overlap. Markdown is cut where headings start. Files with
no definitions given (no grammar, too large to parse) are cut in windows. Small neighbouring
sections are merged. Line numbers are the file's real ones, 1-based and inclusive.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag.symbols import Definition

MAX_CHARS = 1000
"""About 256 MiniLM tokens of code; longer text would be truncated by the encoder."""
MAX_LINES = 40
TARGET_CHARS = 700
"""Small neighbouring sections (imports, short functions) are merged up to this size."""
OVERLAP_LINES = 3
DATA_KINDS = frozenset({"variable", "constant"})
"""Definitions that start sections but are not listed as a chunk's symbols: the symbols are
the code a chunk defines (classes, functions, methods, types)."""


@dataclass(frozen=True)
class TextChunk:
    start_line: int
    end_line: int
    text: str
    symbols: list[str] = field(default_factory=list)
    context: str = ""
    """Where the chunk sits (`Cart`, `Cart.total`, a heading), when its text does not start
    with that definition itself."""


def split_lines(content: str) -> list[str]:
    """The file's lines as an editor numbers them (only \\n, \\r\\n and \\r end a line)."""
    lines = re.split(r"\r\n|\r|\n", content)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


_MD_HEADING = re.compile(r"^#{1,6}\s+(.*)")
_WORD = re.compile(r"\w")
_COMMENTS: dict[str, tuple[str, ...]] = {"python": ("#",)}
"""How a comment line starts, by language; C-like comments for the others."""
_C_COMMENTS = ("//", "/*", "*")

Section = tuple[int, int, str, str]
"""(start, end exclusive, context, scope), 0-based line indices; the scope is the definition
the section was cut from ("" for the file), and only sections of one scope are merged."""


@dataclass
class _Node:
    """A definition and the definitions directly inside it."""

    definition: Definition
    children: list[_Node] = field(default_factory=list)


def chunk_file(
    content: str, language: str = "", definitions: Sequence[Definition] | None = None
) -> list[TextChunk]:
    """Chunks of `content`; blank lines at a chunk's edges are left out, empty chunks dropped.

    `definitions` are the file's, as `rag.symbols.extract` found them; without them a source
    file is cut in plain windows (a Markdown file still at its headings).
    """
    lines = split_lines(content)
    if not lines:
        return []
    ordered = sorted(definitions or [], key=lambda d: (d.start_line, -d.end_line))
    if ordered:
        sections = _cut(lines, 0, len(lines), _tree(ordered), "", _COMMENTS.get(language))
    elif language == "markdown":
        sections = _headings(lines)
    else:
        sections = [(0, len(lines), "", "")]
    starts = [d.start_line for d in ordered]
    chunks: list[TextChunk] = []
    for start, end, context, _ in _merge(lines, sections):
        for w_start, w_end in _windows(lines, start, end):
            chunk = _make_chunk(lines, w_start, w_end, language, context, ordered, starts)
            if chunk is not None:
                chunks.append(chunk)
    return chunks


def embedding_text(path: str, chunk: TextChunk) -> str:
    """What gets embedded: the path, the enclosing symbol, then the chunk's text."""
    label = chunk.context or (chunk.symbols[0] if chunk.symbols else "")
    return f"{path} ({label})\n{chunk.text}" if label else f"{path}\n{chunk.text}"


def _tree(definitions: list[Definition]) -> list[_Node]:
    """The definitions nested by their lines, top-level ones first; `definitions` sorted by
    start, longest first. One with the very lines of another is left out (it adds no cut)."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    for definition in definitions:
        while stack and stack[-1].definition.end_line < definition.start_line:
            stack.pop()
        node = _Node(definition)
        if stack:
            parent = stack[-1].definition
            if (parent.start_line, parent.end_line) == (definition.start_line, definition.end_line):
                continue
            if definition.end_line <= parent.end_line:
                stack[-1].children.append(node)
                stack.append(node)
                continue
            stack.pop()  # overlaps without nesting (odd syntax): a sibling of its parent
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _cut(
    lines: list[str],
    lo: int,
    hi: int,
    nodes: list[_Node],
    context: str,
    comments: tuple[str, ...] | None,
) -> list[Section]:
    """Sections of lines [lo, hi): one per definition in `nodes` (split further when too
    large) and one for the code between them, which sits in `context`, their scope."""
    sections: list[Section] = []
    cursor = lo
    for node in nodes:
        start = _with_comments(lines, node.definition.start_line - 1, cursor, comments)
        end = min(node.definition.end_line, hi)
        if start >= end:
            continue
        _gap(lines, cursor, start, context, sections)
        label = node.definition.qualified_name
        if node.children and not _fits(lines, start, end):
            sections += _cut(lines, start, end, node.children, label, comments)
        else:
            sections.append((start, end, label, context))
        cursor = end
    _gap(lines, cursor, hi, context, sections)
    return sections


def _gap(lines: list[str], start: int, end: int, context: str, sections: list[Section]) -> None:
    """Add the code between two definitions: its own section, sitting in `context`, unless it
    is blank or only closes what came before (`}`, `});`), which then ends that section."""
    body = lines[start:end]
    if not any(line.strip() for line in body):
        return
    if sections and not any(_WORD.search(line) for line in body):
        s_start, _, s_context, s_scope = sections[-1]
        sections[-1] = (s_start, end, s_context, s_scope)
        return
    sections.append((start, end, context, context))


def _with_comments(
    lines: list[str], start: int, floor: int, comments: tuple[str, ...] | None
) -> int:
    """`start` moved up over the comment lines directly above it, not past `floor`."""
    start = max(start, floor)
    prefixes = comments or _C_COMMENTS
    while start > floor and lines[start - 1].lstrip().startswith(prefixes):
        start -= 1
    return start


def _headings(lines: list[str]) -> list[Section]:
    starts = [0]
    contexts = [""]
    fence = ""
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker and (not fence or stripped.startswith(fence)):
            fence = "" if fence else marker.group(1)
            continue
        heading = _MD_HEADING.match(line)
        if heading and not fence:
            if i > 0:
                starts.append(i)
                contexts.append("")
            contexts[-1] = heading.group(1).strip()
    ends = starts[1:] + [len(lines)]
    return [(s, e, c, "") for s, e, c in zip(starts, ends, contexts, strict=True)]


def _merge(lines: list[str], sections: list[Section]) -> list[Section]:
    merged: list[Section] = []
    for start, end, context, scope in sections:
        if merged:
            m_start, _, m_context, m_scope = merged[-1]
            if (
                scope == m_scope
                and _size(lines, m_start, end) <= TARGET_CHARS
                and end - m_start <= MAX_LINES
            ):
                merged[-1] = (m_start, end, _shared(m_context, context), scope)
                continue
        merged.append((start, end, context, scope))
    return merged


def _shared(first: str, second: str) -> str:
    """The context of two merged sections: what both sit in (`Cart.add` and `Cart.total` sit
    in `Cart`; two top-level functions in nothing)."""
    common = []
    for a, b in zip(first.split("."), second.split("."), strict=False):
        if a != b or not a:
            break
        common.append(a)
    return ".".join(common)


def _windows(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Split [start, end) into windows of at most MAX_LINES lines and about MAX_CHARS chars."""
    if _fits(lines, start, end):
        return [(start, end)]
    windows = []
    i = start
    while i < end:
        j, size = i, 0
        while j < end and j - i < MAX_LINES and (j == i or size + len(lines[j]) + 1 <= MAX_CHARS):
            size += len(lines[j]) + 1
            j += 1
        windows.append((i, j))
        if j >= end:
            break
        i = max(j - OVERLAP_LINES, i + 1)
    return windows


def _make_chunk(
    lines: list[str],
    start: int,
    end: int,
    language: str,
    context: str,
    definitions: list[Definition],
    starts: list[int],
) -> TextChunk | None:
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if start >= end:
        return None
    body = lines[start:end]
    symbols: list[str] = []
    if definitions:
        for d in definitions[bisect_left(starts, start + 1) : bisect_right(starts, end)]:
            if d.kind not in DATA_KINDS and d.name not in symbols:
                symbols.append(d.name)
    elif language == "markdown":
        symbols = [m.group(1).strip() for line in body if (m := _MD_HEADING.match(line))][:5]
    if context and symbols and symbols[0] == context:
        context = ""  # the chunk starts with its own definition; no need to repeat it
    return TextChunk(start + 1, end, "\n".join(body), symbols, context)


def _fits(lines: list[str], start: int, end: int) -> bool:
    return _size(lines, start, end) <= MAX_CHARS and end - start <= MAX_LINES


def _size(lines: list[str], start: int, end: int) -> int:
    return sum(len(line) + 1 for line in lines[start:end])
