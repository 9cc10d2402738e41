"""Read a zip of a repository as text files, defensively.

A zip is attacker-shaped input: it can claim small sizes and inflate to gigabytes (a bomb),
name members `../../etc/passwd` or `/abs/path`, or hold symlinks. So nothing is ever extracted
to disk: members are read one by one into memory, each with a hard cap on the bytes actually
inflated (the header's sizes are not trusted), and the whole upload has caps on member count,
total size and compression ratio. Binary members are skipped, and so is what the repository
itself would not commit: version-control folders and whatever its `.gitignore` files name.
"""

from __future__ import annotations

import io
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from pathspec import GitIgnoreSpec

from rag.parsers.repomix import PackError, ParsedFile
from rag.paths import tidy

ZIP_MAGIC = b"PK\x03\x04"
MAX_MEMBERS = 20_000
"""Members we read (after VCS folders and .gitignore'd paths are left out)."""
MAX_TOTAL_BYTES = 100 * 1024 * 1024
"""Uncompressed text we accept in all; a repository's source is rarely a tenth of this."""
MAX_FILE_BYTES = 2 * 1024 * 1024
"""Bigger members are skipped as data, not code (and counted as skipped)."""
MAX_RATIO = 100
"""Inflated / compressed bytes of any one member, measured while inflating. Text: ~3–10×."""
MAX_TOTAL_RATIO = 20
"""Inflated bytes of all members / bytes of the zip. Caught the 209 KB → 38.6 MB upload."""
RATIO_SLACK = 4096
"""Bytes any member may inflate to whatever its ratio: tiny files compress badly either way."""
MAX_IGNORE_FILE_BYTES = 256 * 1024
VCS_FOLDERS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS"})
_READ = 64 * 1024
_BROKEN = (
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    OSError,
    EOFError,
    NotImplementedError,
    ValueError,
    UnicodeDecodeError,
)
"""What the zipfile module raises for damaged or unsupported archives (found by fuzzing)."""


@dataclass
class ZipContents:
    files: list[ParsedFile]
    skipped: list[str] = field(default_factory=list)
    """Paths left out, with why: binary, too large."""
    ignored: int = 0
    """Members left out because they sit in a VCS folder or the repository's .gitignore names them."""
    inflated: int = 0
    """Bytes inflated in all, counting members then skipped: what reading the zip cost."""


def is_zip(data: bytes) -> bool:
    return data.startswith(ZIP_MAGIC)


def inspect_zip(data: bytes) -> list[tuple[str, zipfile.ZipInfo]]:
    """Check the zip's directory without inflating anything: (path, member) pairs to read.

    Cheap enough for the upload request; PackError for anything unsafe or unreadable.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except _BROKEN as exc:
        raise PackError(f"Expected a zip archive but it cannot be read ({exc}).") from None
    with archive:
        members = archive.infolist()
    if len(members) > MAX_MEMBERS * 5:
        raise PackError(
            f"The zip holds {len(members)} entries; the limit is {MAX_MEMBERS}. "
            "Zip only the repository's source (no dependencies or build output)."
        )
    for info in members:
        _check_member(info)
    _check_layout(members, archive.start_dir)
    files = [info for info in members if not info.is_dir()]
    root = _common_root([info.filename.replace("\\", "/") for info in files])
    wanted = []
    for info in files:
        path = tidy(info.filename)[len(root) :]
        if path and not VCS_FOLDERS.intersection(path.split("/")):
            wanted.append((path, info))
    return wanted


def read_zip(data: bytes) -> ZipContents:
    """The zip's text files; PackError for anything unsafe or unreadable."""
    wanted = inspect_zip(data)
    contents = ZipContents(files=[])
    budget = _Budget(len(data))
    # inspect_zip opened this very archive: it opens again.
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        ignore = _ignore_rules(archive, wanted, budget)
        kept = [(path, info) for path, info in wanted if not _ignored(path, ignore)]
        contents.ignored = len(wanted) - len(kept)
        if len(kept) > MAX_MEMBERS:
            raise PackError(
                f"The zip holds {len(kept)} entries; the limit is {MAX_MEMBERS}. "
                "Zip only the repository's source (no dependencies or build output)."
            )
        for path, info in kept:
            raw = _read_member(archive, info, MAX_FILE_BYTES, budget)
            if raw is None:
                contents.skipped.append(f"{path} (larger than {MAX_FILE_BYTES // 1024} KB)")
                continue
            text = _text(raw)
            if text is None:
                contents.skipped.append(f"{path} (binary)")
                continue
            contents.files.append(ParsedFile(path, text))
    if not contents.files:
        raise PackError("Expected text files in the zip but found only binary or empty ones.")
    contents.inflated = budget.spent
    return contents


class _Budget:
    """The bytes all members together may inflate to, spent as they are inflated.

    Every byte counts, also those of members then skipped (too large, binary) and of the
    .gitignore files: inflating is the work a bomb makes us do, whatever we keep of it.
    """

    def __init__(self, archive_bytes: int) -> None:
        self.limit = min(MAX_TOTAL_BYTES, max(MAX_TOTAL_RATIO * archive_bytes, 1024 * 1024))
        self.spent = 0

    def spend(self, n: int) -> None:
        self.spent += n
        if self.spent > self.limit:
            raise PackError(
                f"The zip unpacks to more than {self.limit // (1024 * 1024) or 1} MB "
                f"({MAX_TOTAL_RATIO}× its size at most, {MAX_TOTAL_BYTES // (1024 * 1024)} MB "
                "in all); it looks like a zip bomb. Zip only the repository's source."
            )


def _check_member(info: zipfile.ZipInfo) -> None:
    name = info.filename
    if not name:  # zipfile's own is_dir() fails on it (found by bench/fuzz)
        raise PackError("The zip has an entry with an empty name; it looks damaged.")
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
    if info.file_size > MAX_RATIO * info.compress_size + RATIO_SLACK:
        raise PackError(_bomb_message(name))


def _check_layout(members: list[zipfile.ZipInfo], directory_start: int) -> None:
    """Refuse members whose compressed bytes would run into the next member (or the directory).

    A member's ratio is measured against the compressed size its header claims, so a claim
    that spans its neighbours would buy it room to inflate; and entries that share bytes are
    how the densest zip bombs work. A member takes at least its 30-byte local header plus its
    compressed bytes; real zips never claim more than the space they have.
    """
    ordered = sorted(members, key=lambda info: info.header_offset)
    ends = [info.header_offset for info in ordered[1:]] + [directory_start]
    for info, end in zip(ordered, ends, strict=True):
        if info.header_offset + 30 + info.compress_size > end:
            raise PackError(
                f"The zip entry {info.filename!r} claims more bytes than it takes up in the "
                "archive (its entries overlap); it looks crafted, so the zip is refused."
            )


def _bomb_message(name: str) -> str:
    return (
        f"The zip entry {name!r} expands more than {MAX_RATIO}× (source code compresses "
        "3–10×); it looks like a zip bomb, so the zip is refused."
    )


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, budget: _Budget
) -> bytes | None:
    """The member's bytes, or None when it inflates past `cap` (whatever it claims).

    Inflating goes block by block, and every block is counted against the member's ratio and
    the whole zip's budget before the next is read, so no header can make us inflate more than
    one block past either. (The compressed size the ratio is measured against was checked by
    _check_layout to fit the member's place in the archive.)
    """
    if info.file_size > cap:
        return None
    limit = MAX_RATIO * info.compress_size + RATIO_SLACK
    out = bytearray()
    try:
        with archive.open(info) as handle:
            while block := handle.read(_READ):
                out += block
                budget.spend(len(block))
                if len(out) > limit:
                    raise PackError(_bomb_message(info.filename))
                if len(out) > cap:
                    return None
    except _BROKEN as exc:
        raise PackError(f"The zip entry {info.filename!r} cannot be read ({exc}).") from None
    return bytes(out)


def _text(raw: bytes) -> str | None:
    if b"\x00" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _common_root(names: list[str]) -> str:
    """GitHub's "Download ZIP" puts everything under `repo-main/`; paths should not say so."""
    paths = [tidy(name) for name in names]
    tops = {path.split("/", 1)[0] for path in paths}
    if len(tops) == 1 and all("/" in path for path in paths):
        return f"{tops.pop()}/"
    return ""


IgnoreRules = list[tuple[str, GitIgnoreSpec]]


def _ignore_rules(
    archive: zipfile.ZipFile, wanted: list[tuple[str, zipfile.ZipInfo]], budget: _Budget
) -> IgnoreRules:
    """(folder prefix, rules) of every .gitignore in the zip, shallowest first.

    The re2 backend matches in linear time, so a hostile pattern (`*a*a*a*a*b`) cannot stall us.
    """
    rules: IgnoreRules = []
    for path, info in wanted:
        if path.rsplit("/", 1)[-1] != ".gitignore":
            continue
        raw = _read_member(archive, info, MAX_IGNORE_FILE_BYTES, budget)
        text = _text(raw) if raw is not None else None
        if text is None:
            continue
        folder = path[: -len(".gitignore")]
        rules.append((folder, GitIgnoreSpec.from_lines(text.splitlines(), backend="re2")))
    rules.sort(key=lambda rule: rule[0].count("/"))
    return rules


def _ignored(path: str, rules: IgnoreRules) -> bool:
    """Whether git would leave `path` out: the deepest .gitignore with an opinion decides."""
    ignored = False
    for folder, spec in rules:
        if path.startswith(folder):
            include = spec.check_file(path[len(folder) :]).include
            if include is not None:
                ignored = include
    return ignored
