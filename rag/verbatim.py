"""Where a line of code a person quoted appears in a codebase, word for word.

    verbatim.find("x = str(x)", [(path, text), …])   # [TextHit(path, line, text)]

Only whitespace is ignored (`x=str(x)` is `x = str(x)`); nothing else is fuzzy. No pattern is
built from the quote: each file is read once with `str.find`, so a quote costs no more than
reading the files, and a quote is capped at MAX_QUOTE characters. `needles` gives the words
every file holding the quote must hold, so a caller can narrow the files first (a database's
`LIKE`). Plain functions, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rag.chunking import split_lines

MAX_QUOTE = 300
"""Longer text is not one line anyone quotes; it is not looked for."""
MIN_QUOTE = 5
"""Fewer non-space characters (`x`, `a=b`) would match half a codebase."""
MAX_HITS = 20

_WORD = re.compile(r"\w+")
_STATEMENT_START = ("return ", "raise ", "import ", "from ", "assert ", "yield ", "del ",
                    "await ", "if ", "elif ", "for ", "while ", "with ", "def ", "class ")  # fmt: skip


@dataclass(frozen=True)
class TextHit:
    path: str
    line: int
    text: str
    """The line as the file has it."""
    whole: bool = True
    """The quote is the whole line (else a part of it)."""

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"


def squash(text: str) -> str:
    return "".join(text.split())


def quotable(text: str) -> bool:
    """Whether `text` can be looked for: one line, neither tiny nor long."""
    stripped = text.strip()
    return (
        "\n" not in stripped
        and "\r" not in stripped
        and len(stripped) <= MAX_QUOTE
        and len(squash(stripped)) >= MIN_QUOTE
    )


def statement(text: str) -> bool:
    """Whether a quotable `text` reads as a line of code (`x = str(x)`, `return f(a)`) rather
    than words or a bare name: only those are worth a word-for-word search. A comparison alone
    (`dtype==object`) describes a condition in words' place, it quotes no line: xarray-2905's
    "arrays of `dtype==object`" pinned the one file that writes it, a zarr check."""
    stripped = text.strip()
    if not quotable(stripped):
        return False
    bare = _COMPARISON.sub(" ", stripped)
    return any(c in bare for c in "=(;{") or stripped.startswith(_STATEMENT_START)


_COMPARISON = re.compile(r"[=!<>]=")


def needles(quote: str, n: int = 2) -> list[str]:
    """Up to `n` of the quote's longest words: any file holding the quote holds each."""
    words = sorted(set(_WORD.findall(quote)), key=lambda w: (-len(w), w))
    return words[:n]


def find(quote: str, files: Iterable[tuple[str, str]], limit: int = MAX_HITS) -> list[TextHit]:
    """The lines of `files` ((path, text) pairs) holding `quote`, whitespace aside: lines that
    are the quote first, then lines that hold it, each in file order; at most `limit`."""
    if not quotable(quote):
        return []
    wanted = squash(quote)
    words = needles(quote, 1)
    first = words[0] if words else wanted
    whole: list[TextHit] = []
    part: list[TextHit] = []
    for path, text in files:
        if first not in text:
            continue
        for number, line in enumerate(split_lines(text), start=1):
            if first not in line:
                continue
            squashed = squash(line)
            if squashed == wanted:
                whole.append(TextHit(path, number, line))
            elif _holds(squashed, wanted):
                part.append(TextHit(path, number, line, whole=False))
        if len(whole) >= limit:
            break
    return (whole + part)[:limit]


def _holds(line: str, wanted: str) -> bool:
    """`wanted` in `line` without cutting a word in two (`x=1` is not in `max=10`)."""
    start = line.find(wanted)
    while start >= 0:
        end = start + len(wanted)
        before = start == 0 or not (_word_char(line[start - 1]) and _word_char(wanted[0]))
        after = end == len(line) or not (_word_char(line[end]) and _word_char(wanted[-1]))
        if before and after:
            return True
        start = line.find(wanted, start + 1)
    return False


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"
