"""Check an upload in a child process: its style (or what is wrong with it) and whether the pack
is complete, in one pass per upload.

The upload request checks what it is given before anything is kept: the style, sniffed from
the whole pack; a zip's directory (about 0.6 s for 20,000 members); and, so that an incomplete
pack can be refused on the form, the whole pack parsed (about 1.5 s at the 50 MB cap on two
busy cores). The parser's regular expressions hold the interpreter lock for up to 0.3 s at a
time, so in the server's process these checks stall every request the server is handling,
whichever thread each runs on; a child process has a lock of its own. This module imports
nothing from Django, so the child starts quickly.

    python -m rag.completeness < parts   # each part: its name, then its bytes, each framed
                                         # by its length (8 bytes, big-endian); prints JSON
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from rag.parsers import check_upload
from rag.parsers.archive import is_zip
from rag.parsers.listing import incomplete
from rag.parsers.repomix import PackError, parse_pack

ROOT = Path(__file__).resolve().parent.parent
COMMAND = [sys.executable, "-m", __name__]
TIMEOUT_SECONDS = 120
"""Far more than the checks take at the upload cap; a child still busy then is stuck."""
BUG_EXIT = 3
"""The child's exit status when the checks raised something other than PackError (a bug)."""
LENGTH_BYTES = 8


@dataclass(frozen=True)
class Verdict:
    """What the checks found in an upload."""

    style: str
    """How it was packed ("zip", "repomix-xml", …); "" when `error`."""
    error: str
    """What is wrong with it, naming the part (rag.parsers.check_upload's PackError); "" if
    nothing."""
    incomplete: str
    """Why the pack is incomplete (rag.parsers.listing.incomplete); "" when it is complete, is a
    zip (no listing to judge by), or has an `error`."""


class CheckFailed(Exception):
    """The child gave no verdict; `detail` (its traceback, how it ended) is for the log."""

    def __init__(self, detail: str, *, bug: bool) -> None:
        super().__init__(detail)
        self.detail = detail
        self.bug = bug
        """True when the checks themselves raised (rerunning them will not help)."""


def judge(parts: list[tuple[str, bytes]]) -> Verdict:
    """The checks, in this process: what the child runs. Parts are (name, bytes)."""
    try:
        style = check_upload(parts)
    except PackError as exc:
        return Verdict(style="", error=exc.message, incomplete="")
    return Verdict(style=style, error="", incomplete=incompleteness([data for _, data in parts]))


def incompleteness(parts: list[bytes]) -> str:
    """Why the pack in these parts is incomplete (rag.parsers.listing.incomplete); "" when it
    is complete, is a zip (no listing to judge by), or is not a pack the parser reads (the
    indexing job says what is wrong with it)."""
    packs = []
    for data in parts:
        if is_zip(data):
            return ""
        try:
            packs.append(parse_pack(data))
        except PackError:
            return ""
    return incomplete(packs)


def judge_apart(parts: list[tuple[str, bytes]]) -> Verdict:
    """`judge(parts)`, worked out in a child process; this thread only waits for it.

    CheckFailed when the child gives no verdict (it crashed, was killed, ran out of time, or
    the checks raised): the caller refuses the upload rather than keep one nobody checked."""
    framed = b"".join(
        len(chunk).to_bytes(LENGTH_BYTES, "big") + chunk
        for label, data in parts
        for chunk in (label.encode(), data)
    )
    try:
        done = subprocess.run(
            COMMAND,
            input=framed,
            capture_output=True,
            cwd=ROOT,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"no verdict after {TIMEOUT_SECONDS} s", bug=False) from None
    except OSError as exc:
        raise CheckFailed(f"the child did not start ({exc})", bug=False) from None
    stderr = done.stderr.decode(errors="replace")[-4000:]
    if done.returncode != 0:
        raise CheckFailed(
            f"the child exited with status {done.returncode}: {stderr}",
            bug=done.returncode == BUG_EXIT,
        )
    try:
        return Verdict(**json.loads(done.stdout))
    except (ValueError, TypeError) as exc:
        raise CheckFailed(
            f"the child's verdict is unreadable ({exc}): {stderr}", bug=False
        ) from None


def _unframe(framed: bytes) -> list[tuple[str, bytes]]:
    chunks, at = [], 0
    while at < len(framed):
        size = int.from_bytes(framed[at : at + LENGTH_BYTES], "big")
        at += LENGTH_BYTES
        chunks.append(framed[at : at + size])
        at += size
    return [(label.decode(), data) for label, data in zip(chunks[::2], chunks[1::2], strict=True)]


def _main() -> None:
    parts = _unframe(sys.stdin.buffer.read())
    try:
        verdict = judge(parts)
    except Exception:
        traceback.print_exc()
        sys.exit(BUG_EXIT)
    sys.stdout.write(json.dumps(asdict(verdict)))


if __name__ == "__main__":
    _main()
