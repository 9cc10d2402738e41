"""Whether an uploaded pack is complete, judged in a child process.

The upload form refuses an incomplete pack before anything is kept, so the request parses the
whole pack (about 1.5 s at the 50 MB cap on two busy cores). The parser's regular expressions
hold the interpreter lock for up to 0.3 s at a time, so in the server's process that parse
stalls every request the server is handling, whichever thread each runs on; a child process
has a lock of its own. This module imports nothing from Django, so the child starts quickly.

    python -m rag.completeness < parts   # each part: its length (8 bytes, big-endian), its bytes
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from rag.parsers.archive import is_zip
from rag.parsers.listing import incomplete
from rag.parsers.repomix import PackError, parse_pack

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_SECONDS = 120
"""Far more than the parse takes at the upload cap; a child still busy then is stuck."""
LENGTH_BYTES = 8


def incompleteness(parts: list[bytes]) -> str:
    """Why the pack in these parts is incomplete (rag.parsers.listing.incomplete); "" when it
    is complete, is a zip (no listing to judge by), or is not a pack the upload's own checks
    accept (they say what is wrong with it)."""
    packs = []
    for data in parts:
        if is_zip(data):
            return ""
        try:
            packs.append(parse_pack(data))
        except PackError:
            return ""
    return incomplete(packs)


def judge_apart(parts: list[bytes]) -> str:
    """`incompleteness(parts)`, worked out in a child process; this thread only waits for it.

    A child that fails or runs out of time is logged and the pack let through, as one the
    parser cannot read is: the indexing job parses it again and says what it finds."""
    if any(is_zip(data) for data in parts):
        return ""  # no listing to judge by: no child needed
    framed = b"".join(len(data).to_bytes(LENGTH_BYTES, "big") + data for data in parts)
    try:
        done = subprocess.run(
            [sys.executable, "-m", __name__],
            input=framed,
            capture_output=True,
            cwd=ROOT,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        log.exception("judging whether an upload is complete failed")
        return ""
    if done.returncode != 0:
        log.error(
            "judging whether an upload is complete failed (exit %s): %s",
            done.returncode,
            done.stderr.decode(errors="replace")[-2000:],
        )
        return ""
    return done.stdout.decode()


def _unframe(framed: bytes) -> list[bytes]:
    parts, at = [], 0
    while at < len(framed):
        size = int.from_bytes(framed[at : at + LENGTH_BYTES], "big")
        at += LENGTH_BYTES
        parts.append(framed[at : at + size])
        at += size
    return parts


if __name__ == "__main__":
    sys.stdout.buffer.write(incompleteness(_unframe(sys.stdin.buffer.read())).encode())
