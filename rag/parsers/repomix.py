"""Parse Repomix packs (https://repomix.com) in every output style Repomix writes.

The default XML style is not well-formed XML: file contents are pasted in unescaped, so a file
may itself contain `</file>` or `<file path="…">`. We therefore never hand it to an XML parser;
we split it on `<file path="…">` lines that start a real block (the first one, or one that
follows a block ending in `</file>`), and when the pack lists its directory structure we only
accept paths that the listing names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from xml.etree import ElementTree

from rag.parsers.listing import CUT_OFF, left_out, listed_paths, pack_notes, summary_of
from rag.paths import tidy

STYLES = (
    "repomix-xml",
    "repomix-xml-parsable",
    "repomix-json",
    "repomix-markdown",
    "repomix-plain",
)


class PackError(Exception):
    """The upload is not a Repomix pack we can read; the message says what we expected and found."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ParsedFile:
    path: str
    content: str
    withheld_reason: str = ""
    """Why the file must stay out of chunks, vectors and prompts (it holds a secret); "" if not."""


_MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an executable"),
]

_XML_MARK = re.compile(r'^(?:<files>|<file path=")', re.M)
_PARSABLE_MARK = re.compile(r"^<repomix>", re.M)
_MD_MARK = re.compile(r"^## File: ", re.M)
_PLAIN_MARK = re.compile(r"^={16}\nFile: ", re.M)
_JSON_MARK = re.compile(r"^\{")

_PARSABLE_FILE_MARK = re.compile(r"<file path=")
_XML_FILE = re.compile(r'^<file path="([^"\n]*)">\n?', re.M)
_MD_FILE = re.compile(r"^## File: (.+)\n(`{3,})[^\n`]*\n", re.M)
_PLAIN_FILE = re.compile(r"^={16}\nFile: (.+)\n={16}\n", re.M)


def decode(data: bytes) -> str:
    """Decode an upload as UTF-8, naming what it looks like when it is not text."""
    if not data or not data.strip():
        raise PackError("Expected a Repomix pack but found an empty file.")
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise PackError(f"Expected a Repomix pack (a text file) but found {what}.")
    if b"\x00" in data[:8192]:
        raise PackError("Expected a Repomix pack (a text file) but found binary data.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PackError(
            "Expected a Repomix pack encoded as UTF-8 but found bytes that are not valid UTF-8 "
            f"(at byte {exc.start})."
        ) from None


def detect_style(text: str) -> str | None:
    """Which Repomix style `text` is in, judged by which file marker comes first."""
    if _JSON_MARK.match(text.lstrip()):
        return "repomix-json"
    found = []
    for style, mark in (
        ("repomix-xml-parsable", _PARSABLE_MARK),
        ("repomix-xml", _XML_MARK),
        ("repomix-markdown", _MD_MARK),
        ("repomix-plain", _PLAIN_MARK),
    ):
        match = mark.search(text)
        if match:
            found.append((match.start(), style))
    return min(found)[1] if found else None


def sniff(data: bytes) -> str:
    """Return the pack's style, or raise PackError saying what the bytes look like instead."""
    text = decode(data)
    style = detect_style(text)
    if style is None:
        raise PackError(
            "Expected a Repomix pack (XML, JSON, Markdown or plain style) but found "
            f"text with no Repomix file markers, starting {_preview(text)}."
        )
    return style


@dataclass
class Pack:
    """A parsed pack with what it says about itself."""

    style: str
    files: list[ParsedFile]
    listed: list[str] | None = None
    """Files its directory listing names (binaries included) and it should hold, or None when
    it has no listing: the files in `left_out` are not among them."""
    warnings: list[str] = field(default_factory=list)
    """What the uploader should know: cut off, compressed, comments removed, …"""
    summary: str = ""
    """Its summary, lowercased (listing.summary_of): what Repomix says about how it was made."""
    left_out: list[str] = field(default_factory=list)
    """Files its listing names that Repomix chose to leave out of it (listing.left_out): its
    security check's work, or outside its --include patterns. A note in `warnings` names them."""


def parse_repomix(data: bytes | str) -> list[ParsedFile]:
    """Parse a Repomix pack in any style into its files, in pack order, one per path."""
    return parse_pack(data).files


def parse_pack(data: bytes | str) -> Pack:
    """Parse a Repomix pack in any style, with its listing and what it says about itself."""
    text = decode(data) if isinstance(data, bytes) else data
    style = detect_style(text) if text.strip() else None
    if style is None:
        if not text.strip():
            raise PackError("Expected a Repomix pack but found an empty file.")
        raise PackError(
            "Expected a Repomix pack (XML, JSON, Markdown or plain style) but found "
            f"text with no Repomix file markers, starting {_preview(text)}."
        )
    head = _head(text, style)
    if style == "repomix-json":
        pairs, listing = _parse_json(text)
    else:
        pairs, listing = _PARSERS[style](text), head
    # --output-show-line-numbers: every file is numbered, so judge by all of them rather than
    # by the header prose (which changes with options and versions).
    stripped = [strip_line_numbers(content) for _, content in pairs]
    numbered = sum(a != b for (_, a), b in zip(pairs, stripped, strict=True))
    if numbered and numbered >= 0.9 * sum(1 for _, c in pairs if c.strip()):
        pairs = [(path, new) for (path, _), new in zip(pairs, stripped, strict=True)]
    files: dict[str, str] = {}
    for raw_path, content in pairs:
        path = tidy(raw_path)
        if path:
            files.pop(path, None)  # a later duplicate wins, and keeps its own position
            files[path] = content
    if not files:
        raise PackError(f"Expected at least one file in the {style} pack but found none.")
    parsed = [ParsedFile(path, content) for path, content in files.items()]
    listed = listed_paths(listing, style)
    warnings = pack_notes(head, text, style, parsed)
    summary = summary_of(head, text, style)
    if listed is None:
        return Pack(style=style, files=parsed, listed=None, warnings=warnings, summary=summary)
    tidied = [p for p in map(tidy, listed) if p]
    cut_off = any(CUT_OFF in note for note in warnings)
    omitted, note = left_out(summary, tidied, list(files), cut_off=cut_off)
    gone = set(omitted)
    return Pack(
        style=style,
        files=parsed,
        listed=[p for p in tidied if p not in gone],
        warnings=[*warnings, note] if note else warnings,
        summary=summary,
        left_out=omitted,
    )


def _head(text: str, style: str) -> str:
    """The pack's preamble, before its first file: where its summary and listing live."""
    if style == "repomix-json":
        return ""
    mark = {
        "repomix-xml-parsable": _PARSABLE_FILE_MARK,
        "repomix-xml": _XML_MARK,
        "repomix-markdown": _MD_MARK,
        "repomix-plain": _PLAIN_MARK,
    }[style].search(text)
    return text[: mark.start()] if mark else text


_LINE_NUMBER = re.compile(r" *(\d+): ?")


def strip_line_numbers(content: str) -> str:
    """Content of a `--output-show-line-numbers` pack without the ` 12: ` prefixes, when every
    line carries the next number (so real line numbers stay what the file says)."""
    if not content.strip():
        return content
    lines = content.split("\n")
    stripped = []
    for n, line in enumerate(lines, start=1):
        match = _LINE_NUMBER.match(line)
        if match is None or int(match.group(1)) != n:
            return content  # not numbered after all: keep the text exactly as packed
        stripped.append(line[match.end() :])
    return "\n".join(stripped)


def _preview(text: str) -> str:
    head = " ".join(text.strip().split())[:60]
    return repr(head + ("…" if len(text.strip()) > 60 else ""))


def _parse_xml(text: str) -> list[tuple[str, str]]:
    start = _section_start(text)
    end = text.rfind("\n</files>")
    body = text[start : end + 1 if end > start else len(text)]
    listed = _listed_paths(text)
    blocks: list[tuple[str, int, int]] = []  # (path, content start, header start)
    for match in _XML_FILE.finditer(body):
        if listed and tidy(match.group(1)) not in listed:
            continue
        before = body[max(0, match.start() - 1024) : match.start()]
        if blocks and not before.rstrip().endswith("</file>"):
            continue  # a `<file path=` line inside some file's content
        blocks.append((match.group(1), match.end(), match.start()))
    pairs = []
    for i, (path, begin, _) in enumerate(blocks):
        stop = blocks[i + 1][2] if i + 1 < len(blocks) else len(body)
        chunk = body[begin:stop].rstrip()
        chunk = chunk.removesuffix("</file>")
        pairs.append((path, chunk.removesuffix("\n")))
    return pairs


_FILES_SECTION = re.compile(r"^<files>$", re.M)


def _section_start(text: str) -> int:
    structure_end = text.find("</directory_structure>")
    match = _FILES_SECTION.search(text, max(structure_end, 0))
    return match.end() if match else 0


def _listed_paths(text: str) -> set[str]:
    """Paths named in the <directory_structure> listing before the first file."""
    listed = listed_paths(_head(text, "repomix-xml"), "repomix-xml") or []
    return {tidy(path) for path in listed}


def _parse_parsable_xml(text: str) -> list[tuple[str, str]]:
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise PackError("Expected a Repomix XML pack but found one that declares XML entities.")
    try:
        root = ElementTree.fromstring(text[text.find("<repomix>") :].strip())
    except ElementTree.ParseError as exc:
        raise PackError(f"Expected well-formed Repomix XML but found an error: {exc}.") from None
    return [(el.get("path", ""), el.text or "") for el in root.iter("file")]


def _parse_json(text: str) -> tuple[list[tuple[str, str]], str]:
    """The pack's (path, content) pairs and its directory listing ("" when it has none)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PackError(f"Expected a Repomix JSON pack but found invalid JSON: {exc}.") from None
    except RecursionError:
        raise PackError("Expected a Repomix JSON pack but found JSON nested too deeply.") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        raise PackError(
            'Expected a Repomix JSON pack with a "files" object mapping paths to contents '
            f"but found {'no such key' if isinstance(doc, dict) else type(doc).__name__}."
        )
    listing = doc.get("directoryStructure")
    pairs = [(str(path), content) for path, content in files.items() if isinstance(content, str)]
    return pairs, listing if isinstance(listing, str) else ""


def _parse_markdown(text: str) -> list[tuple[str, str]]:
    pairs = []
    pos = 0
    while match := _MD_FILE.search(text, pos):
        fence = match.group(2)
        close = re.compile(rf"^{fence}[ \t]*$", re.M).search(text, match.end())
        stop = close.start() if close else len(text)
        pairs.append((match.group(1).strip(), text[match.end() : stop].removesuffix("\n")))
        pos = close.end() if close else len(text)
    return pairs


def _parse_plain(text: str) -> list[tuple[str, str]]:
    matches = list(_PLAIN_FILE.finditer(text))
    end = re.search(r"^={64}\nEnd of Codebase\n={64}", text, re.M)
    pairs = []
    for i, match in enumerate(matches):
        stop = matches[i + 1].start() if i + 1 < len(matches) else (end.start() if end else None)
        pairs.append((match.group(1).strip(), text[match.end() : stop].rstrip("\n")))
    return pairs


_PARSERS = {
    "repomix-xml": _parse_xml,
    "repomix-xml-parsable": _parse_parsable_xml,
    "repomix-markdown": _parse_markdown,
    "repomix-plain": _parse_plain,
}
