"""Pinned context of a codebase: files (or some of their lines), snippets and notes ("we use
pytest, not unittest") that every new session's agents are shown, labelled [P1], [P2], … so a
plan can say which it used. Bounded: a pinned file is a few hundred characters in a prompt."""

from __future__ import annotations

from dataclasses import dataclass

from rag.chunking import split_lines
from rag.models import Codebase, CodeFile, Pin

PIN_TEXT_CHARS = 4000
"""Longest snippet or note a user may pin."""
PINS_CHARS = 900
"""The whole pinned-context section of a prompt (about 250 tokens)."""
ITEM_CHARS = 400
"""One pin's text in a prompt."""
PAGE_CHARS = 3000
"""One pinned file's text on a page."""


@dataclass(frozen=True)
class PinnedItem:
    """A pin as the agents (and the session page) see it."""

    number: int
    pin_id: int
    kind: str
    title: str
    text: str
    found: bool = True
    truncated: bool = False

    @property
    def label(self) -> str:
        return f"P{self.number}"

    def as_dict(self) -> dict[str, object]:
        return {
            "number": self.number,
            "pin_id": self.pin_id,
            "kind": self.kind,
            "title": self.title,
            "text": self.text,
            "found": self.found,
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> PinnedItem:
        return cls(
            number=int(str(data["number"])),
            pin_id=int(str(data["pin_id"])),
            kind=str(data["kind"]),
            title=str(data["title"]),
            text=str(data["text"]),
            found=bool(data.get("found", True)),
            truncated=bool(data.get("truncated", False)),
        )

    def prompt_block(self) -> str:
        if self.kind == Pin.Kind.NOTE:
            return f"[{self.label}] note: {self.text}"
        if not self.found:
            return f"[{self.label}] {self.title}: unresolved ({self.text})"
        fence = "```"
        while fence in self.text:
            fence += "`"
        more = "\n…" if self.truncated else ""
        return f"[{self.label}] {self.title} (untrusted):\n{fence}\n{self.text}{more}\n{fence}"


def title(pin: Pin) -> str:
    if pin.kind == Pin.Kind.FILE:
        if pin.start_line or pin.end_line:
            return f"{pin.path}:{pin.start_line or 1}-{pin.end_line or ''}".rstrip("-")
        return pin.path
    if pin.kind == Pin.Kind.SNIPPET:
        return f"snippet from {pin.path}" if pin.path else "snippet"
    return "note"


def resolve(pin: Pin, limit: int = ITEM_CHARS, number: int = 0) -> PinnedItem:
    """The pin's text now: a file pin reads its lines from the codebase (a file gone from a new
    version, or withheld, is unresolved, not an error)."""
    if pin.kind != Pin.Kind.FILE:
        text = pin.text.strip()
        return PinnedItem(
            number, pin.pk, pin.kind, title(pin), text[:limit], True, len(text) > limit
        )
    row = (
        CodeFile.objects.filter(codebase_id=pin.codebase_id, path=pin.path)
        .values_list("content", "withheld_reason")
        .first()
    )
    if row is None:
        return PinnedItem(number, pin.pk, pin.kind, title(pin), "no such file now", False)
    if row[1]:
        return PinnedItem(
            number, pin.pk, pin.kind, title(pin), "withheld: may hold a secret", False
        )
    lines = split_lines(row[0])
    start = max(1, pin.start_line or 1)
    end = min(len(lines), pin.end_line or len(lines))
    text = "\n".join(lines[start - 1 : end])
    return PinnedItem(number, pin.pk, pin.kind, title(pin), text[:limit], True, len(text) > limit)


def pinned_items(codebase: Codebase, limit: int = PINS_CHARS) -> list[PinnedItem]:
    """The pins that fit in a prompt's budget, numbered in the order they were pinned."""
    items: list[PinnedItem] = []
    used = 0
    for pin in codebase.pins.all():
        item = resolve(pin, number=len(items) + 1)
        size = len(item.prompt_block()) + 2
        if used + size > limit:
            continue
        items.append(item)
        used += size
    return items


def prompt_section(items: list[PinnedItem]) -> str:
    if not items:
        return ""
    head = "Pinned context (the user pinned it for every session; follow its notes):"
    return "\n".join([head, *(i.prompt_block() for i in items)])
