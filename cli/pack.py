"""Pack a directory into a zip in memory, the way Repomix would pack it: what git would commit
(its `.gitignore` files honoured, version-control folders left out), text only, no file over
the upload pipeline's per-file cap, and no file that looks like it holds a secret.

The rules are the upload pipeline's own (rag.parsers.archive for ignores, sizes and what counts
as text; rag.secrets for secrets), applied here so that what the server would drop never leaves
the machine: a withheld file is not in the zip at all, and the command lists it.
"""

from __future__ import annotations

import io
import os
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

from rag.parsers.archive import (
    MAX_FILE_BYTES,
    MAX_IGNORE_FILE_BYTES,
    MAX_MEMBERS,
    VCS_FOLDERS,
    IgnoreRules,
    _ignored,
    _text,
)
from rag.secrets import secret_reason

STATE_FILE = ".planagents.json"
"""Where `planagents plan` keeps the codebase's id: the CLI's own, never packed."""


PACK_DATE = (1980, 1, 1, 0, 0, 0)
"""Every member's date: zip's earliest, so the bytes depend on the files and nothing else."""


class PackError(Exception):
    """The directory cannot be packed; the message says why."""


@dataclass
class Pack:
    """A packed directory: the zip's bytes and what was left out of it, and why."""

    data: bytes
    files: list[str] = field(default_factory=list)
    """Paths in the zip, in the order they were added."""
    text_bytes: int = 0
    """Bytes of the files packed, before compression."""
    withheld: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) of each file left out because it looks like it holds a secret."""
    skipped: list[str] = field(default_factory=list)
    """Paths left out as binary or too large, with why."""
    ignored: int = 0
    """Files and folders left out because .gitignore names them or they belong to git."""
    seconds: float = 0.0


def _read_rules(folder: Path, prefix: str, rules: IgnoreRules) -> IgnoreRules:
    ignore = folder / ".gitignore"
    if not ignore.is_file() or ignore.stat().st_size > MAX_IGNORE_FILE_BYTES:
        return rules
    text = _text(ignore.read_bytes())
    if text is None:
        return rules
    spec = GitIgnoreSpec.from_lines(text.splitlines(), backend="re2")
    return [*rules, (prefix, spec)]


def pack_directory(root: Path) -> Pack:
    """The directory `root` as a zip of its text files (paths relative to it)."""
    started = time.perf_counter()
    if not root.is_dir():
        raise PackError(f"No such directory: {root}")
    buffer = io.BytesIO()
    pack = Pack(data=b"")
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        # Rules per folder, deepest last: a folder's .gitignore speaks for what is under it.
        rules_of: dict[str, IgnoreRules] = {"": _read_rules(root, "", [])}
        for folder, dirs, names in os.walk(root, followlinks=False):
            prefix = Path(folder).relative_to(root).as_posix()
            prefix = "" if prefix == "." else prefix + "/"
            rules = rules_of[prefix]
            dirs.sort()
            kept_dirs = []
            for name in dirs:
                path = prefix + name
                if name in VCS_FOLDERS or _ignored(path + "/", rules):
                    pack.ignored += 1
                    continue
                if (Path(folder) / name).is_symlink():
                    continue
                rules_of[path + "/"] = _read_rules(Path(folder) / name, path + "/", rules)
                kept_dirs.append(name)
            dirs[:] = kept_dirs
            for name in sorted(names):
                path = prefix + name
                full = Path(folder) / name
                if path == STATE_FILE:
                    continue
                if _ignored(path, rules):
                    pack.ignored += 1
                    continue
                if full.is_symlink() or not full.is_file():
                    continue
                _add(archive, pack, path, full)
                if len(pack.files) > MAX_MEMBERS:
                    raise PackError(
                        f"{root} holds more than {MAX_MEMBERS} files to pack, the upload's "
                        "limit; add what is not source (dependencies, build output) to "
                        ".gitignore."
                    )
    if not pack.files:
        raise PackError(f"{root} holds no text files to pack (after .gitignore and secrets).")
    pack.data = buffer.getvalue()
    pack.seconds = time.perf_counter() - started
    return pack


def _add(archive: zipfile.ZipFile, pack: Pack, path: str, full: Path) -> None:
    try:
        size = full.stat().st_size
        if size > MAX_FILE_BYTES:
            pack.skipped.append(f"{path} (larger than {MAX_FILE_BYTES // 1024} KB)")
            return
        raw = full.read_bytes()
    except OSError as exc:
        pack.skipped.append(f"{path} (unreadable: {exc.strerror})")
        return
    text = _text(raw)
    if text is None:
        pack.skipped.append(f"{path} (binary)")
        return
    reason = secret_reason(path, text)
    if reason:
        pack.withheld.append((path, reason))
        return
    # A fixed date makes the zip a function of the files alone: packing an unchanged directory
    # twice gives the same bytes, which the server recognises as "nothing changed".
    member = zipfile.ZipInfo(path, date_time=PACK_DATE)
    member.compress_type = zipfile.ZIP_DEFLATED
    member.external_attr = 0o644 << 16
    archive.writestr(member, raw)
    pack.files.append(path)
    pack.text_bytes += len(raw)
