"""Parsers that turn an uploaded pack into (path, content) pairs.

`parse_upload` is the one entry point for the indexing job: it takes the upload's parts as
stored, tells a zip from a Repomix pack, parses, leaves out what must not be indexed, flags
files that hold secrets and says what the uploader should know. `check_upload` is its cheap
half for the upload request: format and safety only, nothing inflated or split.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rag.parsers.archive import VCS_FOLDERS, inspect_zip, is_zip, read_zip
from rag.parsers.listing import missing_from_listing
from rag.parsers.repomix import PackError, ParsedFile, parse_pack, parse_repomix, sniff
from rag.paths import MAX_PATH_CHARS, escape, problem
from rag.secrets import secret_reason

SHOW_PATHS = 20


@dataclass
class ParseResult:
    style: str
    """How the upload was packed: "zip" or a Repomix style such as "repomix-xml"."""
    files: list[ParsedFile]
    """The files to index, in upload order, one per path (a later part's copy wins).
    Files with a `withheld_reason` hold secrets: keep them out of chunks, vectors and prompts."""
    warnings: list[str] = field(default_factory=list)
    """Things the uploader should know (files the pack's listing names but it lacks, …)."""


def check_upload(parts: list[tuple[str, bytes]]) -> str:
    """The upload's style, after the checks cheap enough for a request (no inflating, no
    splitting); PackError naming the part and what is wrong otherwise."""
    if not parts:
        raise PackError("Choose a Repomix pack (.xml, .json, .md or .txt) or a .zip to upload.")
    style = ""
    for label, data in parts:
        try:
            if is_zip(data):
                if len(parts) > 1:
                    raise PackError("Upload a zip on its own, not together with other files.")
                inspect_zip(data)
                style = "zip"
            else:
                style = style or sniff(data)
        except PackError as exc:
            raise PackError(f"{label}: {exc.message}") from None
    return style


def parse_upload(parts: list[tuple[str, bytes]]) -> ParseResult:
    """Parse an upload: one pack, several parts of one (`repomix --split-output`), or one zip.

    Raises PackError with a message the uploader can act on for anything unreadable.
    """
    check_upload(parts)
    style = ""
    warnings: list[str] = []
    listed: list[str] | None = None
    merged: dict[str, ParsedFile] = {}
    for label, data in parts:
        where = f"{label}: " if len(parts) > 1 else ""
        try:
            if is_zip(data):
                style = "zip"
                contents = read_zip(data)
                files = contents.files
                # Binary members are expected (images, fonts); too-large ones are worth a word.
                large = [s for s in contents.skipped if not s.endswith("(binary)")]
                if large:
                    warnings.append(_left_out("file(s) in the zip", large))
            else:
                pack = parse_pack(data)
                style = style or pack.style
                files = pack.files
                warnings += [where + warning for warning in pack.warnings]
                if pack.listed is not None:
                    listed = [*(listed or []), *pack.listed]
        except PackError as exc:
            raise PackError(where + exc.message) from None
        for parsed in files:
            merged.pop(parsed.path, None)
            merged[parsed.path] = parsed
    files, unsafe = _safe_paths(list(merged.values()))
    if unsafe:
        warnings.append(
            _left_out(
                "file(s) whose path holds a line break, a NUL or another invisible character, "
                f'climbs out of its folder (".."), or is longer than {MAX_PATH_CHARS} characters '
                "(rename them and upload a new version)",
                unsafe,
            )
        )
    if not files:
        raise PackError(
            "Expected at least one file with a usable path in the upload but found none."
        )
    if listed is not None:
        missing = missing_from_listing(listed, [f.path for f in files] + unsafe)
        if missing:
            warnings.append(missing)
    flagged = [replace(f, withheld_reason=secret_reason(f.path, f.content)) for f in files]
    return ParseResult(style=style, files=flagged, warnings=warnings)


def _safe_paths(files: list[ParsedFile]) -> tuple[list[ParsedFile], list[str]]:
    """Files whose path a page, a prompt and the database can hold (rag.paths.problem); the
    others, escaped. A line break in a path broke every page that showed it; VCS folders are
    never source.
    """
    kept, unsafe = [], []
    for parsed in files:
        if VCS_FOLDERS.intersection(parsed.path.split("/")):
            continue
        if problem(parsed.path):
            unsafe.append(escape(parsed.path))
        else:
            kept.append(parsed)
    return kept, unsafe


def _left_out(what: str, paths: list[str]) -> str:
    more = f" and {len(paths) - SHOW_PATHS} more" if len(paths) > SHOW_PATHS else ""
    return f"Left out {len(paths)} {what}: {', '.join(paths[:SHOW_PATHS])}{more}."


__all__ = [
    "PackError",
    "ParseResult",
    "ParsedFile",
    "check_upload",
    "parse_repomix",
    "parse_upload",
    "sniff",
]
