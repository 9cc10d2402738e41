"""Cut a file into chunks that fit MiniLM's 256-token window and follow definitions.

Python and JavaScript-like files are cut where top-level definitions start; Markdown where
headings start; anything else, and any section still too large, in windows of lines with a
small overlap. Line numbers are the file's real ones, 1-based and inclusive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_CHARS = 1000
"""About 256 MiniLM tokens of code; longer text would be truncated by the encoder."""
MAX_LINES = 40
TARGET_CHARS = 700
"""Small neighbouring sections (imports, short functions) are merged up to this size."""
OVERLAP_LINES = 3


@dataclass(frozen=True)
class TextChunk:
    start_line: int
    end_line: int
    text: str
    symbols: list[str] = field(default_factory=list)
    context: str = ""
    """The definition or heading the chunk sits in, when that is not obvious from its text."""


def split_lines(content: str) -> list[str]:
    """The file's lines as an editor numbers them (only \\n, \\r\\n and \\r end a line)."""
    lines = re.split(r"\r\n|\r|\n", content)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


_PY_TOP = re.compile(r"^(?:@|(?:async\s+)?def\s|class\s)")
_PY_SYMBOL = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")
_JS_TOP = re.compile(
    r"^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?"
    r"(?:(?:async\s+)?function\b|class\s|interface\s|enum\s|type\s+\w+\s*=|"
    r"(?:const|let|var)\s+\w+\s*=\s*(?:async\s+)?(?:function\b|\(|\w+\s*=>))"
)
_JS_SYMBOL = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:"
    r"(?:async\s+)?function\s*\*?\s*(\w+)|class\s+(\w+)|interface\s+(\w+)|enum\s+(\w+)|"
    r"type\s+(\w+)\s*=|(?:const|let|var)\s+(\w+)\s*=\s*(?:async\s+)?(?:function\b|\(|\w+\s*=>)|"
    r"(?:static\s+)?(?:async\s+)?(?!if\b|for\b|while\b|switch\b|catch\b|return\b)(\w+)\s*\([^)]*\)\s*\{)"
)
_GO_TOP = re.compile(r"^(?:func|type)\s")
_GO_SYMBOL = re.compile(r"^(?:func\s+(?:\([^)]*\)\s*)?(\w+)|type\s+(\w+))")
_RUST_TOP = re.compile(
    r"^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|impl|mod)\b"
)
_RUST_SYMBOL = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|mod)\s+(\w+)"
)
_MD_HEADING = re.compile(r"^#{1,6}\s+(.*)")

_RULES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "python": (_PY_TOP, _PY_SYMBOL),
    "javascript": (_JS_TOP, _JS_SYMBOL),
    "typescript": (_JS_TOP, _JS_SYMBOL),
    "go": (_GO_TOP, _GO_SYMBOL),
    "rust": (_RUST_TOP, _RUST_SYMBOL),
}


def chunk_file(content: str, language: str = "") -> list[TextChunk]:
    """Chunks of `content`; blank lines at a chunk's edges are left out, empty chunks dropped."""
    lines = split_lines(content)
    if not lines:
        return []
    sections = _sections(lines, language)
    chunks: list[TextChunk] = []
    for start, end, context in _merge(lines, sections):
        for w_start, w_end in _windows(lines, start, end):
            chunk = _make_chunk(lines, w_start, w_end, language, context)
            if chunk is not None:
                chunks.append(chunk)
    return chunks


def embedding_text(path: str, chunk: TextChunk) -> str:
    """What gets embedded: the path, the enclosing symbol, then the chunk's text."""
    label = chunk.context or (chunk.symbols[0] if chunk.symbols else "")
    return f"{path} ({label})\n{chunk.text}" if label else f"{path}\n{chunk.text}"


def _sections(lines: list[str], language: str) -> list[tuple[int, int, str]]:
    """(start, end exclusive, context) spans, 0-based, split at top-level definitions."""
    starts = [0]
    contexts = [""]
    if language in _RULES:
        top, symbol = _RULES[language]
        in_decorator = False
        for i, line in enumerate(lines):
            if not top.match(line):
                in_decorator = False
                continue
            if not in_decorator and i > 0:
                starts.append(i)
                contexts.append("")
            in_decorator = line.startswith("@")
            match = symbol.match(line)
            if match and not contexts[-1]:
                contexts[-1] = next(g for g in match.groups() if g)
    elif language == "markdown":
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
    return list(zip(starts, ends, contexts, strict=True))


def _merge(lines: list[str], sections: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    merged: list[tuple[int, int, str]] = []
    for start, end, context in sections:
        if merged:
            m_start, m_end, m_context = merged[-1]
            size = _size(lines, m_start, end)
            if size <= TARGET_CHARS and end - m_start <= MAX_LINES:
                merged[-1] = (m_start, end, m_context or context)
                continue
        merged.append((start, end, context))
    return merged


def _windows(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Split [start, end) into windows of at most MAX_LINES lines and about MAX_CHARS chars."""
    if _size(lines, start, end) <= MAX_CHARS and end - start <= MAX_LINES:
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
    lines: list[str], start: int, end: int, language: str, context: str
) -> TextChunk | None:
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if start >= end:
        return None
    body = lines[start:end]
    symbols: list[str] = []
    if language in _RULES:
        for line in body:
            match = _RULES[language][1].match(line)
            if match:
                name = next(g for g in match.groups() if g)
                if name not in symbols:
                    symbols.append(name)
    elif language == "markdown":
        symbols = [m.group(1).strip() for line in body if (m := _MD_HEADING.match(line))][:5]
    if context and symbols and symbols[0] == context:
        context = ""  # the chunk starts with its own definition; no need to repeat it
    return TextChunk(start + 1, end, "\n".join(body), symbols, context)


def _size(lines: list[str], start: int, end: int) -> int:
    return sum(len(line) + 1 for line in lines[start:end])
