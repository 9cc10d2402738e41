"""Find `path:line` citations in agent text and check them against the codebase."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from rag.models import Codebase, CodeFile

# A path with at least one dot-extension, then :line or :start-end.
_CITATION = re.compile(r"(?<![\w/.-])([\w./-]+\.[A-Za-z0-9]+):(\d+)(?:-(\d+))?")


@dataclass(frozen=True)
class Citation:
    path: str
    start: int
    end: int
    exists: bool

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def extract_citations(codebase: Codebase, text: str) -> list[Citation]:
    """Every distinct path:line in `text`, marked with whether that file and line exist."""
    found: dict[tuple[str, int, int], None] = {}
    for match in _CITATION.finditer(text):
        path = match.group(1).lstrip("./")
        start = int(match.group(2))
        end = int(match.group(3) or start)
        found[(path, start, max(start, end))] = None
    if not found:
        return []
    line_counts = dict(
        CodeFile.objects.filter(codebase=codebase, path__in={p for p, _, _ in found}).values_list(
            "path", "line_count"
        )
    )
    return [
        Citation(path, start, end, path in line_counts and 1 <= start <= line_counts[path])
        for path, start, end in found
    ]
