"""Filters for session pages."""

from __future__ import annotations

from django import template

register = template.Library()

HEADLINE_CHARS = 80
"""A heading longer than this is cut (at a word boundary, with an ellipsis)."""


@register.filter
def headline(text: str, limit: int = HEADLINE_CHARS) -> str:
    """The first line of `text`, cut before `limit` characters at the last word boundary with
    "…" when it is longer: a title cut mid-word ("add rate limi…") reads as a typo."""
    lines = str(text).strip().splitlines()
    line = lines[0].strip() if lines else ""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    # One very long word (a URL, a path) has no boundary worth keeping to: cut it where it is.
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—(") + "…"


@register.filter
def says_more_than_its_headline(text: str) -> bool:
    """Whether the whole of `text` says more than `headline` shows: only then is it worth a
    second place on the page."""
    return headline(text) != str(text).strip()
