"""Turn a flat list of paths into a nested tree for the codebase page."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    name: str
    path: str = ""
    file: Any = None
    children: list[Node] = field(default_factory=list)

    @property
    def is_dir(self) -> bool:
        return self.file is None

    @property
    def file_count(self) -> int:
        return sum(1 if c.file is not None else c.file_count for c in self.children)


def build_tree(files: list[Any]) -> list[Node]:
    """Folders first, then files, each alphabetically; `files` need a `.path`."""
    root = Node("")
    folders: dict[str, Node] = {"": root}
    for item in files:
        parts = item.path.split("/")
        parent = root
        for depth in range(1, len(parts)):
            key = "/".join(parts[:depth])
            if key not in folders:
                folders[key] = Node(parts[depth - 1], key)
                parent.children.append(folders[key])
            parent = folders[key]
        parent.children.append(Node(parts[-1], item.path, item))
    _sort(root)
    return root.children


def _sort(node: Node) -> None:
    node.children.sort(key=lambda c: (not c.is_dir, c.name.lower()))
    for child in node.children:
        if child.is_dir:
            _sort(child)
