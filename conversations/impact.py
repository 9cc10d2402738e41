"""The impact map of a plan: the files it touches, coloured by action, with the files that
import them and the files they import, drawn server-side as SVG (no script, no CDN).

    impact.for_plan(plan)             # ImpactMap from the plan and the codebase's import graph
    impact.build(files, related)      # the same from plain data (tests, other callers)
    impact.render_svg(impact_map)     # the picture, every label escaped by the template

Only the neighbourhood is drawn, and it is capped: a file with 2,000 importers shows a few
and a "+N more importers" node, so the picture stays readable on any codebase.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string

from agents.plan import check_file, codebase_paths, unique_files
from conversations.models import Plan
from rag import index
from rag.navigation import Navigator

MAX_PLAN_FILES = 12
"""Plan files drawn; the rest are counted in a "+N more files" node."""
PER_FILE = 5
"""Importers (and imports) drawn per plan file before "+N more"."""
MAX_SIDE = 30
"""Neighbour nodes per side, before the "+N more" nodes."""
ACTIONS = ("modify", "create", "delete")
COLOURS = {
    "modify": "#f59e0b",
    "create": "#22c55e",
    "delete": "#ef4444",
    "neighbour": "#e2e8f0",
    "more": "#f8fafc",
}
LABEL_CHARS = 36
"""Characters of a label that fit a node at 12px monospace; longer paths keep their end."""

NODE_W = 280
NODE_H = 24
ROW = 32
TOP = 44
COLUMN_X = (10, 345, 680)
WIDTH = COLUMN_X[2] + NODE_W + 10
LEGEND_H = 34

Related = Callable[[str], tuple[Sequence[str], Sequence[str]] | None]
"""path → (files it imports, files importing it), or None when the graph does not know it."""


@dataclass(frozen=True)
class PlanFile:
    path: str
    action: str
    status: str = "exists"
    """exists, new, missing or invalid (conversations.exports' words)."""


@dataclass
class Node:
    id: str
    path: str
    kind: str
    """modify, create, delete (plan files), neighbour, or more (a count of what is not drawn)."""
    column: int
    row: int = 0
    label: str = ""
    title: str = ""
    dashed: bool = False

    @property
    def x(self) -> int:
        return COLUMN_X[self.column]

    @property
    def y(self) -> int:
        return TOP + self.row * ROW

    @property
    def fill(self) -> str:
        return COLOURS[self.kind]

    @property
    def text_x(self) -> int:
        return self.x + 8

    @property
    def text_y(self) -> int:
        return self.y + 16

    @property
    def width(self) -> int:
        return NODE_W

    @property
    def height(self) -> int:
        return NODE_H


@dataclass
class Edge:
    source: Node
    target: Node
    """The source imports the target."""

    @property
    def d(self) -> str:
        s, t = self.source, self.target
        sy, ty = s.y + NODE_H // 2, t.y + NODE_H // 2
        if s.column < t.column:
            x1, x2 = s.x + NODE_W, t.x
        elif s.column > t.column:
            x1, x2 = s.x, t.x + NODE_W
        else:  # two plan files: an arc on the right of their column
            x1 = x2 = s.x + NODE_W
            bend = x1 + 30 + 4 * abs(s.row - t.row)
            return f"M{x1},{sy} C{bend},{sy} {bend},{ty} {x2 + 2},{ty}"
        mid = (x1 + x2) // 2
        return f"M{x1},{sy} C{mid},{sy} {mid},{ty} {x2},{ty}"


@dataclass
class ImpactMap:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    graph_available: bool = True
    """False when the codebase has no import graph (indexed before there was one)."""

    @property
    def height(self) -> int:
        rows = max((n.row for n in self.nodes), default=0) + 1
        return TOP + rows * ROW + LEGEND_H

    @property
    def width(self) -> int:
        return WIDTH

    @property
    def legend_y(self) -> int:
        return self.height - LEGEND_H + 12

    @property
    def plan_files(self) -> list[Node]:
        return [n for n in self.nodes if n.kind in ACTIONS]


def _label(path: str) -> str:
    return path if len(path) <= LABEL_CHARS else "…" + path[-(LABEL_CHARS - 1) :]


def build(files: Sequence[PlanFile], related: Related | None) -> ImpactMap:
    """The map of `files`; `related` gives each file's neighbours (None: no graph at all)."""
    result = ImpactMap(graph_available=related is not None)
    columns: list[list[Node]] = [[], [], []]
    by_path: dict[tuple[int, str], Node] = {}

    def add(node: Node) -> Node:
        node.row = len(columns[node.column])
        node.label = node.label or _label(node.path)
        node.title = node.title or node.path
        columns[node.column].append(node)
        result.nodes.append(node)
        if node.kind != "more":
            by_path[(node.column, node.path)] = node
        return node

    drawn = list(files)[:MAX_PLAN_FILES]
    for n, f in enumerate(drawn):
        missing = f.status in ("missing", "invalid")
        note = {"missing": " (not in the codebase)", "invalid": " (invalid path)"}.get(f.status)
        add(
            Node(
                f"f{n}",
                f.path,
                f.action if f.action in ACTIONS else "modify",
                1,
                title=f"{f.action}: {f.path}{note or ''}",
                dashed=missing,
            )
        )
    if len(files) > len(drawn):
        count = len(files) - len(drawn)
        add(Node("f-more", "", "more", 1, label=f"+{count} more file{'s' * (count != 1)}"))
    if related is None:
        return result

    plan_nodes = {n.path: n for n in columns[1] if n.kind in ACTIONS}
    seen_edges: set[tuple[str, str]] = set()

    def link(source: Node, target: Node) -> None:
        if (source.id, target.id) not in seen_edges:
            seen_edges.add((source.id, target.id))
            result.edges.append(Edge(source, target))

    for n, f in enumerate(drawn):
        if f.status != "exists":
            continue
        found = related(f.path)
        if found is None:
            continue
        imports, importers = found
        node = plan_nodes[f.path]
        for side, neighbours, word in ((0, importers, "importer"), (2, imports, "import")):
            shown = 0
            for path in neighbours:
                other = plan_nodes.get(path) or by_path.get((0, path)) or by_path.get((2, path))
                if other is None:
                    room = MAX_SIDE - len(columns[side])
                    if shown >= PER_FILE or room <= 0:
                        continue
                    other = add(Node(f"n{len(result.nodes)}", path, "neighbour", side))
                shown += 1
                link(*((other, node) if side == 0 else (node, other)))
            hidden = len(neighbours) - shown
            if hidden:
                label = f"+{hidden} more {word}{'s' * (hidden != 1)}"
                more = add(
                    Node(
                        f"m{n}-{side}",
                        "",
                        "more",
                        side,
                        label=label,
                        title=f"{label} of {f.path}",
                        dashed=True,
                    )
                )
                link(*((more, node) if side == 0 else (node, more)))
    return result


def plan_files(plan: Plan) -> list[PlanFile]:
    """The files a plan version names, as the codebase spells them, with their action."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    listed = data.get("files")
    entries: list[Any] = listed if isinstance(listed, list) else []
    paths = codebase_paths(plan.session.codebase)
    found: list[PlanFile] = []
    for entry in unique_files(entries):
        action = entry.get("action") if entry.get("action") in ACTIONS else "modify"
        checked = check_file(entry["path"], str(action), paths)
        found.append(PlanFile(checked.path, str(action), checked.status))
    return found


def navigator_related(navigator: Navigator) -> Related | None:
    if not navigator.exists():
        return None

    def related(path: str) -> tuple[Sequence[str], Sequence[str]] | None:
        # No limit here: the map needs the true count for its "+N more" node.
        result = navigator.related(path, limit=1_000_000)
        return (result.imports, result.importers) if result.found else None

    return related


def for_plan(plan: Plan) -> ImpactMap:
    navigator = Navigator(index.index_dir(plan.session.codebase_id))
    return build(plan_files(plan), navigator_related(navigator))


def render_svg(impact_map: ImpactMap) -> str:
    """The map as a standalone SVG document (labels escaped by Django's autoescape)."""
    context: dict[str, Any] = {"map": impact_map, "colours": COLOURS}
    return render_to_string("conversations/_impact.svg", context)
