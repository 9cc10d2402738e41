"""Hostile upload inputs, shared by the fuzz tests (Hypothesis draws them) and bench/fuzz (a
seeded random.Random draws them): real Repomix packs and zips, mutated byte by byte and with
the markers the parsers split on, plus zips built from hostile member names.
"""

from __future__ import annotations

import io
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path

from rag.parsers import PackError, ParseResult, check_upload, parse_upload

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PACKS = sorted((FIXTURES / "repomix").glob("sample.*"))
SEEDS: list[bytes] = [p.read_bytes() for p in PACKS]
SEEDS.append((FIXTURES / "zips" / "sample_project.zip").read_bytes())

TOKENS: list[bytes] = [
    b'<file path="',
    b'<file path="a.py">\n',
    b"</file>\n",
    b"<files>\n",
    b"</files>",
    b"<directory_structure>\n",
    b"</directory_structure>",
    b"<repomix>",
    b"<!ENTITY x 'y'>",
    b"## File: ",
    b"```",
    b"````\n",
    b"=" * 16 + b"\nFile: ",
    b"=" * 64 + b"\nEnd of Codebase\n",
    b'{"files": {',
    b'"directoryStructure": "',
    b"[" * 3000,
    b"\x00",
    b"\n",
    b"\r\n",
    b"\xff\xfe",
    b"\xe2\x80\xa8",  # U+2028, a line separator in JavaScript
    b"../",
    b".git/",
    b".env",
    b"  " * 40,
    b"a/" * 80,
    b"-----BEGIN RSA PRIVATE KEY-----",
    b"AKIAIOSFODNN7EXAMPLE",
    b"\xe2\x8b\xae----\n",  # Repomix's --compress delimiter
    b" 1: ",
    b"PK\x03\x04",
]

Mutation = tuple[int, float, float, int]
"""(operation, where in the input 0..1, how much 0..1, which token)."""
OPERATIONS = 6


def mutate(data: bytes, mutations: Sequence[Mutation]) -> bytes:
    """Apply each mutation in turn: truncate, delete, duplicate, insert or repeat a token,
    overwrite bytes. Deterministic in its arguments, so a failure can be replayed."""
    out = bytearray(data)
    for operation, where, amount, token_index in mutations:
        at = int(where * len(out))
        span = int(amount * min(len(out) - at, 4096))
        token = TOKENS[token_index % len(TOKENS)]
        if operation == 0:
            del out[at:]
        elif operation == 1:
            del out[at : at + span]
        elif operation == 2:
            out[at:at] = out[at : at + span]
        elif operation == 3:
            out[at:at] = token
        elif operation == 4:
            out[at:at] = token * (1 + int(amount * 200))
        else:
            out[at : at + len(token)] = token
    return bytes(out)


MEMBER_NAMES = [
    "a.py",
    "src/app.py",
    "repo/src/app.py",
    "../evil.py",
    "/abs.py",
    "C:/win.py",
    "a\\b.py",
    ".git/HEAD",
    "repo/.git/config",
    ".gitignore",
    "repo/.gitignore",
    ".env",
    "dir/",
    "new\nline.py",
    "tab\tname.py",
    "ü/ñ.py",
    "x" * 300 + ".py",
    "/".join(["d"] * 80) + "/deep.py",
]


def build_zip(members: Sequence[tuple[int, bytes]], stored: bool) -> bytes:
    """A zip of (index into MEMBER_NAMES, content) members."""
    buffer = io.BytesIO()
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", method) as archive:
        warnings.simplefilter("ignore")  # duplicate member names are part of the point
        for index, content in members:
            archive.writestr(MEMBER_NAMES[index % len(MEMBER_NAMES)], content)
    return buffer.getvalue()


def check(parts: list[tuple[str, bytes]]) -> ParseResult | PackError:
    """Parse `parts` as the indexing job does; a PackError with a usable message is a fine
    answer, any other exception propagates (that is a crash). Checks what a result promises."""
    try:
        check_upload(parts)
        result = parse_upload(parts)
    except PackError as exc:
        assert exc.message and exc.message == str(exc)
        assert "Traceback" not in exc.message and "RecursionError" not in exc.message
        return exc
    seen = set()
    for parsed in result.files:
        assert parsed.path and parsed.path.isprintable() and len(parsed.path) <= 1000
        assert not parsed.path.startswith("/") and ".git" not in parsed.path.split("/")
        assert parsed.path not in seen
        seen.add(parsed.path)
        assert isinstance(parsed.content, str)
    assert result.files and result.style
    assert all(isinstance(w, str) and w for w in result.warnings)
    return result
