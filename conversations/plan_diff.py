"""Compare two versions of a plan: which sections were added, removed or changed, and inside a
section which paragraph, step or table row changed and which of its words.

Knows nothing of HTTP or the database: it takes two markdown documents. What it shows is the
text a reader sees (markdown syntax parsed away: no `**`, backticks or table pipes), each
paragraph, list item (a step) and table row a row of its own, so the two versions can stand
side by side. Every piece of HTML it returns is that text escaped, with only the <ins> and
<del> tags this module writes around it."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Literal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

_HEADING = re.compile(r"^##(?!#)\s*(.*?)\s*#*\s*$")
_TOKEN = re.compile(r"\s+|[^\s]+")
# Past this many tokens (words and the spaces between them) a row is shown replaced whole:
# the word matcher is quadratic, and no paragraph, step or table cell of a plan is this long.
MAX_TOKENS = 8_000
# Rows of a changed stretch are paired by likeness only up to this many candidate pairs.
MAX_PAIRINGS = 400
# How alike two rows must read (difflib's ratio of their first LIKENESS_WORDS words) to be
# shown as one row changed.
ALIKE = 0.5
LIKENESS_WORDS = 200
_EMPTY_CELLS = frozenset({"", "—", "-"})
_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

Status = Literal["added", "removed", "changed", "unchanged"]


@dataclass(frozen=True)
class Section:
    title: str
    """The `## ` heading's text; "" for what comes before the first heading."""
    body: str
    """The section's text under its heading, trimmed."""


@dataclass(frozen=True)
class Part:
    label: str
    """The column's heading for a table cell; "" for any other text."""
    html: SafeString
    """The text, escaped, with <del> (old side) or <ins> (new side) around what changed."""


@dataclass(frozen=True)
class Side:
    present: bool
    """Whether the row is in this version at all (not for an added row's old side)."""
    marker: str
    """A list item's number or bullet in this version ("2.", "•"); "" for other rows."""
    parts: tuple[Part, ...]
    """The row's text: one part, or a table row's non-empty cells."""


@dataclass(frozen=True)
class Row:
    """One paragraph, list item (a step), heading, code block or table row of a section, in
    the older version and in the newer one."""

    status: Status
    kind: str
    """text, item, heading, code or cells (a table row)."""
    old: Side
    new: Side
    inline: SafeString
    """Both versions in one line: removed words in <del>, added ones in <ins>."""


@dataclass(frozen=True)
class SectionDiff:
    title: str
    status: Status
    rows: tuple[Row, ...]

    @property
    def html(self) -> SafeString:
        """The section in one column, a line per row: removed words in <del>, added in <ins>."""
        return mark_safe("\n".join(r.inline for r in self.rows))  # noqa: S308 - rows are escaped


@dataclass(frozen=True)
class _Block:
    kind: str
    marker: str
    cells: tuple[tuple[str, str], ...]
    """(label, text) for each cell of a table row; one ("", text) for anything else."""

    @property
    def text(self) -> str:
        return " · ".join(text for _, text in self.cells)


def sections(markdown: str) -> list[Section]:
    """The document cut at its `## ` headings (the title and anything before them first)."""
    found: list[Section] = []
    title, lines = "", list[str]()
    for line in (markdown or "").splitlines():
        heading = _HEADING.match(line)
        if heading:
            found.append(Section(title, "\n".join(lines).strip()))
            title, lines = heading.group(1), []
        else:
            lines.append(line)
    found.append(Section(title, "\n".join(lines).strip()))
    return [s for s in found if s.title or s.body]


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes, with an unchanged stretch between two changes folded into them
    when it is no longer than either: "the" left standing between two rewritten clauses
    reads as noise, and "a mail" → "an email" reads as one change, not two."""
    if len(a) + len(b) > MAX_TOKENS:
        return [("replace", 0, len(a), 0, len(b))]
    raw = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()

    def size(op: tuple[str, int, int, int, int]) -> int:
        _, i1, i2, j1, j2 = op
        return max(len("".join(a[i1:i2])), len("".join(b[j1:j2])))

    merged: list[tuple[str, int, int, int, int]] = []
    for index, op in enumerate(raw):
        if op[0] == "equal" and 0 < index < len(raw) - 1:
            kept = size(op)
            if kept > size(merged[-1]) or kept > size(raw[index + 1]):
                merged.append(op)
                continue
        elif op[0] == "equal":
            merged.append(op)
            continue
        if merged and merged[-1][0] != "equal":
            merged[-1] = ("replace", merged[-1][1], op[2], merged[-1][3], op[4])
        else:
            merged.append(("replace", *op[1:]))
    return merged


def _diff(old: str, new: str) -> tuple[SafeString, SafeString, SafeString]:
    """`new` against `old`, word by word, everything escaped: the old text with its removed
    words in <del>, the new one with its added words in <ins>, and both in one line."""
    left: list[str] = []
    right: list[str] = []
    both: list[str] = []
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    for op, i1, i2, j1, j2 in _opcodes(a, b):
        removed, added = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if op == "equal":
            left.append(removed)
            right.append(added)
            both.append(added)
            continue
        if removed:
            left.append(f"<del>{removed}</del>")
            both.append(f"<del>{removed}</del>")
        if added:
            right.append(f"<ins>{added}</ins>")
            both.append(f"<ins>{added}</ins>")
    # Every piece of text above is escaped.
    return mark_safe("".join(left)), mark_safe("".join(right)), mark_safe("".join(both))  # noqa: S308


def word_diff(old: str, new: str) -> SafeString:
    """`new` against `old` in one line: removed words in <del>, added words in <ins>, all of
    it escaped. Whitespace is a token of its own, so line breaks survive."""
    return _diff(old, new)[2]


def side_by_side(old: str, new: str) -> tuple[SafeString, SafeString]:
    """The two columns of a changed text: `old` with its removed words in <del>, `new` with
    its added words in <ins>, both escaped."""
    left, right, _ = _diff(old, new)
    return left, right


def _inline_text(token: Token) -> str:
    """What a reader sees of an inline token: its text and code, no emphasis or link syntax
    (a link's target follows its text when it says something else)."""
    out: list[str] = []
    links: list[tuple[int, str]] = []  # where each open link's text starts, and its target
    for child in token.children or []:
        if child.type in ("text", "code_inline", "image"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "link_open":
            links.append((len(out), str(child.attrs.get("href", ""))))
        elif child.type == "link_close" and links:
            start, target = links.pop()
            label = "".join(out[start:])
            if target and target not in (label, f"mailto:{label}"):
                out.append(f" ({target})")
    return "".join(out).strip()


def _closing(tokens: Sequence[Token], start: int) -> int:
    """The index of the token that closes tokens[start]."""
    depth = 0
    for index in range(start, len(tokens)):
        depth += tokens[index].nesting
        if depth == 0:
            return index
    return len(tokens) - 1


def _inlines(tokens: Sequence[Token]) -> str:
    return "\n".join(
        text for text in (_inline_text(t) for t in tokens if t.type == "inline") if text
    )


def _table(tokens: Sequence[Token]) -> Iterator[_Block]:
    """A table's rows, each cell with its column's heading."""
    heads: list[str] = []
    index = 0
    while index < len(tokens):
        if tokens[index].type != "tr_open":
            index += 1
            continue
        end = _closing(tokens, index)
        cells = [_inline_text(t) for t in tokens[index:end] if t.type == "inline"]
        if any(t.type == "th_open" for t in tokens[index:end]):
            heads = cells
        else:
            labels = heads + [""] * (len(cells) - len(heads))
            yield _Block("cells", "", tuple(zip(labels, cells, strict=False)))
        index = end + 1


def _blocks(body: str) -> list[_Block]:
    """A section's body as rows: paragraphs, list items (a nested list stays in its item),
    headings, code blocks and table rows."""
    tokens = _md.parse(body)
    found: list[_Block] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        end = _closing(tokens, index) if token.nesting == 1 else index
        if token.type == "list_item_open":
            marker = f"{token.info}{token.markup}" if token.info else "•"
            found.append(_Block("item", marker, (("", _inlines(tokens[index:end])),)))
        elif token.type == "table_open":
            found.extend(_table(tokens[index:end]))
        elif token.type in ("paragraph_open", "heading_open"):
            kind = "heading" if token.type == "heading_open" else "text"
            found.append(_Block(kind, "", (("", _inlines(tokens[index:end])),)))
        elif token.type in ("fence", "code_block"):
            found.append(_Block("code", "", (("", token.content.rstrip("\n")),)))
        elif token.nesting == 1:  # a list or a quote: look inside it
            end = index
        index = end + 1
    return [b for b in found if b.text.strip()]


def _alike(old: _Block, new: _Block) -> float:
    if old.kind != new.kind:
        return 0.0
    if old.kind == "cells":
        # A table row is the row of its first cell (a file, a decision): alike when that is.
        if old.cells[:1] == new.cells[:1]:
            return 1.0
        a, b = old.cells[0][1].split(), new.cells[0][1].split()
    else:
        a, b = old.text.split(), new.text.split()
    # Their openings are enough to tell two rows apart, and keep the pairing cheap.
    return difflib.SequenceMatcher(None, a[:LIKENESS_WORDS], b[:LIKENESS_WORDS]).ratio()


def _pair(old: list[_Block], new: list[_Block]) -> Iterator[tuple[_Block | None, _Block | None]]:
    """A changed stretch of rows: each old row paired, in order, with the new row most like
    it (a step reworded), the rest removed or added. One row rewritten in place (a section's
    only paragraph) is that row changed, however little of it is left; a table row is another
    row when its first cell (the file, the decision) is another."""
    if len(old) == len(new) == 1 and old[0].kind == new[0].kind != "cells":
        yield old[0], new[0]
        return
    if len(old) * len(new) > MAX_PAIRINGS:
        yield from ((a, None) for a in old)
        yield from ((None, b) for b in new)
        return
    start = 0
    for a in old:
        scores = [(_alike(a, new[k]), k) for k in range(start, len(new))]
        score, best = max(scores, key=lambda s: (s[0], -s[1]), default=(0.0, -1))
        if score < ALIKE:
            yield a, None
            continue
        yield from ((None, b) for b in new[start:best])
        yield a, new[best]
        start = best + 1
    yield from ((None, b) for b in new[start:])


def _align(old: list[_Block], new: list[_Block]) -> Iterator[tuple[_Block | None, _Block | None]]:
    """The rows of both versions in order: the same ones together, changed ones paired."""
    matcher = difflib.SequenceMatcher(
        None, [(b.kind, b.cells) for b in old], [(b.kind, b.cells) for b in new], autojunk=False
    )
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            yield from zip(old[i1:i2], new[j1:j2], strict=True)
        else:
            yield from _pair(old[i1:i2], new[j1:j2])


def _wrap(tag: str, text: str) -> SafeString:
    return mark_safe(f"<{tag}>{escape(text)}</{tag}>" if text else "")  # noqa: S308 - escaped


def _shown(text: str) -> bool:
    return text.strip() not in _EMPTY_CELLS


def _marker(marker: str) -> str:
    return f"{marker} " if marker else ""


def _one_side(block: _Block, tag: str) -> tuple[Side, SafeString]:
    """An added (tag ins) or removed (del) row: all of its text marked."""
    parts = tuple(Part(label, _wrap(tag, text)) for label, text in block.cells if _shown(text))
    return Side(True, block.marker, parts), _wrap(tag, _marker(block.marker) + block.text)


def _row(old: _Block | None, new: _Block | None) -> Row:
    absent = Side(False, "", ())
    if old is None or new is None:
        if new is not None:
            side, inline = _one_side(new, "ins")
            return Row("added", new.kind, absent, side, inline)
        assert old is not None
        side, inline = _one_side(old, "del")
        return Row("removed", old.kind, side, absent, inline)
    left: list[Part] = []
    right: list[Part] = []
    both: list[str] = []
    for (label_a, a), (label_b, b) in zip_longest(old.cells, new.cells, fillvalue=("", "")):
        if _shown(a) or _shown(b):
            html_a, html_b, html = _diff(a, b)
            left.append(Part(label_a or label_b, html_a))
            right.append(Part(label_b or label_a, html_b))
            both.append(html)
    return Row(
        "unchanged" if old.cells == new.cells else "changed",
        new.kind,
        Side(True, old.marker, tuple(left)),
        Side(True, new.marker, tuple(right)),
        # The marker is escaped, and so is every piece of text in the diffs.
        mark_safe(escape(_marker(new.marker)) + " · ".join(both)),  # noqa: S308
    )


def _keyed(doc: list[Section]) -> dict[tuple[str, int], Section]:
    """Sections by (title, how many earlier sections share it): repeated headings pair up
    in order instead of all matching the first."""
    seen: dict[str, int] = {}
    keyed = {}
    for s in doc:
        n = seen.get(s.title, 0)
        seen[s.title] = n + 1
        keyed[(s.title, n)] = s
    return keyed


def diff_plans(old: str, new: str) -> list[SectionDiff]:
    """Every section of either version, in the new version's order (removed sections where
    they stood in the old one), each with its status and its rows side by side. A section
    that reads the same in both (whatever its markdown) is unchanged."""
    before, after = _keyed(sections(old)), _keyed(sections(new))
    order = list(after)
    for index, key in enumerate(before):
        if key not in after:
            # After the section that preceded it in the old version, if it survived.
            previous = [k for k in list(before)[:index] if k in order]
            order.insert(order.index(previous[-1]) + 1 if previous else 0, key)
    result = []
    for key in order:
        a = _blocks(before[key].body) if key in before else []
        b = _blocks(after[key].body) if key in after else []
        rows = tuple(_row(x, y) for x, y in _align(a, b))
        status: Status = (
            "added"
            if key not in before
            else "removed"
            if key not in after
            else "unchanged"
            if all(r.status == "unchanged" for r in rows)
            else "changed"
        )
        result.append(SectionDiff(key[0], status, rows))
    return result
