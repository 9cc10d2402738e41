"""One folder of a codebase's file tree at a time, for the codebase page.

The page shows the top level and fetches a folder's entries when it is opened, so its cost is
the size of one level, not of the repository (50k files took 103 s rendered whole). Nothing
here recurses: a path 70 folders deep is one string split, not 70 stack frames.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse

FileRow = tuple[str, int, str, str]
"""(path, line_count, role, withheld_reason) of one file, as `values_list` gives it."""


@dataclass
class Entry:
    name: str
    path: str
    """A folder's path ends with "/"; a file's is its path in the codebase."""
    is_dir: bool
    files: int = 0
    """For a folder: how many files it holds, at any depth."""
    line_count: int = 0
    role: str = ""
    withheld_reason: str = ""
    url: str = ""
    """For a file: its page ("" when the path cannot be linked)."""

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": self.path,
            "dir": self.is_dir,
            "files": self.files,
            "lines": self.line_count,
            "role": self.role,
            "withheld": self.withheld_reason,
            "url": self.url,
        }


def normalize_folder(folder: str) -> str:
    """A folder as the tree names it: no leading slash, one trailing slash ("" is the top).
    NUL is dropped: no stored path holds one (parsers refuse them) and PostgreSQL refuses it
    in a query."""
    folder = folder.replace("\x00", "").strip("/")
    return f"{folder}/" if folder else ""


def folder_entries(codebase_id: int, rows: Iterable[FileRow], folder: str) -> list[Entry]:
    """The entries directly inside `folder` (folders first, then files, each by name);
    `rows` may hold any files, those outside `folder` are ignored."""
    folders: dict[str, Entry] = {}
    files: list[Entry] = []
    for path, line_count, role, withheld in rows:
        if not path.startswith(folder):
            continue
        rest = path[len(folder) :]
        name, slash, _ = rest.partition("/")
        if slash:
            entry = folders.get(name)
            if entry is None:
                entry = folders[name] = Entry(name, f"{folder}{name}/", is_dir=True)
            entry.files += 1
        elif name:
            url = _file_url(codebase_id, path)
            files.append(Entry(name, path, False, 0, line_count, role, withheld, url))
    ordered = sorted(folders.values(), key=lambda e: e.name.lower())
    return ordered + sorted(files, key=lambda e: e.name.lower())


def _file_url(codebase_id: int, path: str) -> str:
    try:
        return reverse("rag:file", args=[codebase_id, path])
    except NoReverseMatch:  # a path no URL can carry (stored before paths were checked)
        return ""
