"""Markdown to safe HTML. Model output and uploaded text are data: they are rendered with
markdown-it (raw HTML disabled) and then cleaned by nh3, never marked safe as they come."""

from __future__ import annotations

import re

import nh3
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from rag.paths import parse_citation

_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False})
    .enable("table")
    .enable("strikethrough")
)

_ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a", "span",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "th": {"align"},
    "td": {"align"},
}


def render_markdown(text: str, *, file_url_prefix: str | None = None) -> str:
    """Render markdown to sanitized HTML. With a prefix, `path:line` citations become links."""
    html = _md.render(text or "")
    if file_url_prefix:
        html = _link_citations(html, file_url_prefix)
    # nh3 has removed everything but the allow-listed tags and attributes, so the result is
    # safe to put in a page as it is.
    return mark_safe(  # noqa: S308
        nh3.clean(
            html,
            tags=_ALLOWED_TAGS,
            attributes=_ALLOWED_ATTRIBUTES,
            url_schemes={"http", "https"},
            link_rel="noopener noreferrer",
        )
    )


def _link_citations(html: str, prefix: str) -> str:
    # Only link inside inline code spans, where citations conventionally appear and where the
    # text is already HTML-escaped by markdown-it.
    def replace_code(match: re.Match[str]) -> str:
        inner = match.group(1)
        cite = parse_citation(inner)
        if cite is None:
            return match.group(0)
        href = f"{prefix}{cite.path}?hl={cite.start}-{cite.end}#L{cite.start}"
        return f'<a href="{href}"><code>{inner}</code></a>'

    return re.sub(r"<code>([^<]{3,300})</code>", replace_code, html)
