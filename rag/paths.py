"""Paths and citations: how the codebase spells a path, which paths are usable at all, what a
`path:line` citation says, and which real file a model-written path means.

Plain functions over strings, no Django. Parsers, plan rendering, citation checks and the file
view all go through here, so "does this file exist?" has one answer everywhere. The citation
pattern runs on RE2, whose matching time is linear in the text whatever the text is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import re2

MAX_PATH_CHARS = 1000
"""CodeFile.path holds this many characters."""
SHOW_CHARS = 120
"""How much of an unusable path a message shows."""

_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


class InvalidPath(ValueError):
    """A path no file can have here: the message says which path (escaped) and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{escape(path)} {reason}")
        self.path = path
        self.reason = reason


def tidy(path: str) -> str:
    """`path` spelled the codebase's way: forward slashes, no surrounding spaces, no leading
    "./" or "/", no empty or "." segments. Dotfiles keep their dot (`.github/ci.yml`).

    Spelling only: whether the path is usable is problem()'s question.
    """
    parts = path.strip().replace("\\", "/").split("/")
    return "/".join(part for part in parts if part not in ("", "."))


def problem(path: str) -> str:
    """Why `path` cannot be a file's path in a codebase, or "" when it can.

    A line break in a stored path broke every page that showed it, so those, NUL and every
    other invisible character (controls, bidi overrides) are refused, and so is "..".
    """
    if not path:
        return "is empty"
    if "\x00" in path:
        return "holds a NUL byte"
    if not _LINE_BREAKS.isdisjoint(path):
        return "holds a line break"
    if not path.isprintable():
        return "holds an invisible or control character"
    if len(path) > MAX_PATH_CHARS:
        return f"is longer than {MAX_PATH_CHARS} characters"
    if ".." in path.split("/"):
        return "climbs out of its folder (..)"
    return ""


def normalize(path: str) -> str:
    """tidy(path), or InvalidPath saying why no file can have it."""
    tidied = tidy(path)
    reason = problem(tidied)
    if reason:
        raise InvalidPath(tidied, reason)
    return tidied


def escape(path: str) -> str:
    """`path` for a message: every invisible character written as an escape, and shortened."""
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in path)
    return shown if len(shown) <= SHOW_CHARS else shown[: SHOW_CHARS - 1] + "…"


# Citations. RE2 has no lookaround: the character before a path is matched (start of text, or
# anything that cannot be part of a path, nor ":" so URLs are not read as paths), and `\b`
# after the line number keeps `a.py:12abc` out. A path must hold a "/" or end in an
# extension, so `localhost:8000` and "step 2:3" are not citations.
_PATH_CHAR = r"[\p{L}\p{N}_.+@~/\\-]"
_PATH = rf"{_PATH_CHAR}*/{_PATH_CHAR}*|{_PATH_CHAR}*\.[\p{{L}}\p{{N}}]+"
_LINES = r"(?::([0-9]{1,9})(?:-([0-9]{1,9}))?|#L([0-9]{1,9})(?:-L?([0-9]{1,9}))?)"
CITATION = re2.compile(rf"(?:^|[^\p{{L}}\p{{N}}_.+@~/\\:-])({_PATH}){_LINES}\b")
"""`path:12`, `path:12-20`, `path#L12`, `path#L12-L20`, bare or in backticks."""
_ONE_CITATION = re2.compile(rf"({_PATH}){_LINES}")
_LINE_SUFFIX = re2.compile(rf"{_LINES}$")
_WRAPPERS = {"`": "`", "'": "'", '"': '"', "<": ">", "(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Citation:
    path: str
    """As written, tidied (not checked against any codebase)."""
    start: int
    end: int
    """The last line cited; `start` when one line is."""


def _citation(path: str, groups: tuple[str | None, ...]) -> Citation | None:
    start, end, anchor_start, anchor_end = groups
    first = int(start or anchor_start or 0)
    last = int(end or anchor_end or 0) or first
    tidied = tidy(path)
    if first < 1 or problem(tidied):
        return None
    return Citation(tidied, min(first, last), max(first, last))


def find_citations(text: str) -> list[Citation]:
    """Every citation in `text`, in order (repeats included)."""
    found = []
    for match in CITATION.finditer(text):
        citation = _citation(match.group(1), match.groups()[1:])
        if citation is not None:
            found.append(citation)
    return found


def parse_citation(text: str) -> Citation | None:
    """`text` read as one citation (in backticks or not), or None when it is not one."""
    text = text.strip()
    if len(text) > 2 and text[0] == text[-1] == "`":
        text = text[1:-1]
    match = _ONE_CITATION.fullmatch(text)
    return None if match is None else _citation(match.group(1), match.groups()[1:])


def clean(written: str) -> str:
    """A path as a model or a person wrote it, the way the codebase would spell it: quotes,
    brackets and trailing punctuation around it and a `:12` / `#L3-L9` suffix dropped, then
    normalize()d. InvalidPath when no file can have it."""
    text = written.strip()
    if len(text) > 2 * MAX_PATH_CHARS:
        raise InvalidPath(text, f"is longer than {MAX_PATH_CHARS} characters")
    while True:
        before = text
        text = text.rstrip(",;").strip()
        if text.endswith(".") and not text.endswith(".."):  # the end of a sentence
            text = text[:-1]
        if len(text) >= 2 and _WRAPPERS.get(text[0]) == text[-1]:
            text = text[1:-1].strip()
        if text == before:
            break
    suffix = _LINE_SUFFIX.search(text)
    if suffix is not None:
        text = text[: suffix.start()]
    return normalize(text)


@dataclass(frozen=True)
class Resolved:
    """Which file of a codebase a written path means, and how that was decided."""

    path: str | None
    """The codebase's own spelling of the file, or None when no one file is meant."""
    how: str
    """exact, case (only the letter case differs) or suffix (leading folders left out) when
    found; missing, ambiguous (several files fit) or invalid (no file can have it) when not."""
    written: str
    """The written path cleaned (escaped when invalid): what to show when nothing was found."""
    candidates: tuple[str, ...] = ()
    """The files an ambiguous path could mean (at most a few)."""
    reason: str = ""
    """Why no file can have an invalid path ("holds a line break", …)."""

    @property
    def found(self) -> bool:
        return self.path is not None


class FileSet:
    """A codebase's file paths, to tell which file a model-written path means.

    Lookups are memoised: the live rendering of a plan asks about the same paths many times.
    """

    MEMO = 1024

    def __init__(self, paths: Iterable[str] = (), *, line_note: str = "") -> None:
        self._paths = frozenset(paths)
        self.line_note = line_note
        """What a reader of line numbers cited from these files should know ("" when they
        are the repository's own lines)."""
        self._folded: dict[str, list[str]] | None = None
        self._memo: dict[str, Resolved] = {}

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def resolve(self, written: str) -> Resolved:
        """Exact match, else the one file differing only in letter case, else the one file
        whose path ends with the written one at a folder boundary."""
        known = self._memo.get(written)
        if known is None:
            if len(self._memo) >= self.MEMO:
                self._memo.clear()
            known = self._memo[written] = self._resolve(written)
        return known

    def _resolve(self, written: str) -> Resolved:
        try:
            path = clean(written)
        except InvalidPath as exc:
            return Resolved(None, "invalid", escape(exc.path), reason=exc.reason)
        if path in self._paths:
            return Resolved(path, "exact", path)
        if self._folded is None:
            self._folded = {}
            for real in sorted(self._paths):
                self._folded.setdefault(real.casefold(), []).append(real)
        folded = path.casefold()
        same = self._folded.get(folded, [])
        if len(same) == 1:
            return Resolved(same[0], "case", path)
        if len(same) > 1:
            return Resolved(None, "ambiguous", path, tuple(same[:5]))
        tail = "/" + folded
        ends = [real for key, reals in self._folded.items() if key.endswith(tail) for real in reals]
        if len(ends) == 1:
            return Resolved(ends[0], "suffix", path)
        if ends:
            return Resolved(None, "ambiguous", path, tuple(ends[:5]))
        return Resolved(None, "missing", path)
