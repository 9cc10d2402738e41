"""Read a zip of a repository as text files, defensively.

A zip is attacker-shaped input: it can claim small sizes and inflate to gigabytes (a bomb),
name members `../../etc/passwd` or `/abs/path`, or hold symlinks. So nothing is ever extracted
to disk: members are read one by one into memory, each with a hard cap on the bytes actually
inflated (the header's sizes are not trusted), and the whole upload has caps on member count,
total size and compression ratio. Binary members are skipped.
"""

from __future__ import annotations

import io
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag.parsers.repomix import PackError, ParsedFile, normalize_path

ZIP_MAGIC = b"PK\x03\x04"
MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 200 * 1024 * 1024
"""Uncompressed text we accept in all; a repository's source is rarely a tenth of this."""
MAX_FILE_BYTES = 2 * 1024 * 1024
"""Bigger members are skipped as data, not code (and counted as skipped)."""
MAX_RATIO = 200
"""Uncompressed / compressed size, per member and overall. Text compresses ~3–10×."""
_READ = 64 * 1024


@dataclass
class ZipContents:
    files: list[ParsedFile]
    skipped: list[str] = field(default_factory=list)
    """Paths left out, with why: binary, too large."""


def is_zip(data: bytes) -> bool:
    return data.startswith(ZIP_MAGIC)


def read_zip(data: bytes) -> ZipContents:
    """The zip's text files; PackError for anything unsafe or unreadable."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise PackError(f"Expected a zip archive but it cannot be read ({exc}).") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise PackError(
                f"The zip holds {len(members)} entries; the limit is {MAX_MEMBERS}. "
                "Zip only the repository's source (no dependencies or build output)."
            )
        for info in members:
            _check_member(info)
        claimed = sum(info.file_size for info in members)
        if claimed > MAX_TOTAL_BYTES:
            raise PackError(
                f"The zip unpacks to {claimed // (1024 * 1024)} MB; the limit is "
                f"{MAX_TOTAL_BYTES // (1024 * 1024)} MB."
            )
        if claimed > MAX_RATIO * max(len(data), 1) and claimed > 1024 * 1024:
            raise PackError(
                "The zip expands far more than source code does "
                f"({claimed // max(len(data), 1)}× its size); it looks like a zip bomb."
            )
        contents = ZipContents(files=[])
        total = 0
        for info in members:
            if info.is_dir():
                continue
            path = normalize_path(info.filename)
            raw = _read_member(archive, info)
            if raw is None:
                contents.skipped.append(f"{path} (larger than {MAX_FILE_BYTES // 1024} KB)")
                continue
            total += len(raw)
            if total > MAX_TOTAL_BYTES:
                raise PackError(
                    f"The zip unpacks to more than {MAX_TOTAL_BYTES // (1024 * 1024)} MB."
                )
            text = _text(raw)
            if text is None:
                contents.skipped.append(f"{path} (binary)")
                continue
            contents.files.append(ParsedFile(path, text))
    contents.files = _strip_common_root(contents.files)
    if not contents.files:
        raise PackError("Expected text files in the zip but found only binary or empty ones.")
    return contents


def _check_member(info: zipfile.ZipInfo) -> None:
    name = info.filename
    if "\x00" in name:
        raise PackError(f"The zip has an entry with a NUL byte in its name ({name!r}).")
    posix = name.replace("\\", "/")
    if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":"):
        raise PackError(f"The zip has an entry with an absolute path ({name!r}); refusing it.")
    if ".." in PurePosixPath(posix).parts:
        raise PackError(f"The zip has an entry that climbs out of its folder ({name!r}).")
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise PackError(f"The zip has a symbolic link ({name!r}); zip the files themselves.")
    if info.flag_bits & 0x1:
        raise PackError(f"The zip has an encrypted entry ({name!r}); upload it unencrypted.")
    if info.compress_size and info.file_size > MAX_RATIO * info.compress_size > 1024 * 1024:
        raise PackError(f"The zip entry {name!r} expands {MAX_RATIO}× or more; refusing it.")


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes | None:
    """The member's bytes, or None when it inflates past MAX_FILE_BYTES (whatever it claims)."""
    if info.file_size > MAX_FILE_BYTES:
        return None
    out = bytearray()
    try:
        with archive.open(info) as handle:
            while block := handle.read(_READ):
                out += block
                if len(out) > MAX_FILE_BYTES:
                    return None
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise PackError(f"The zip entry {info.filename!r} cannot be read ({exc}).") from None
    return bytes(out)


def _text(raw: bytes) -> str | None:
    if b"\x00" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _strip_common_root(files: list[ParsedFile]) -> list[ParsedFile]:
    """GitHub's "Download ZIP" puts everything under `repo-main/`; paths should not say so."""
    tops = {f.path.split("/", 1)[0] for f in files}
    if len(tops) == 1 and all("/" in f.path for f in files):
        return [ParsedFile(f.path.split("/", 1)[1], f.content) for f in files]
    return files
