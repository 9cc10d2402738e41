"""The project's modules import each other without cycles, counting imports made inside
functions too (a cycle hidden in a function is still a cycle: each side must be read with the
other in mind). The layers: `rag` knows nothing of sessions; `agents` writes sessions through
`conversations.models` and `conversations.store` only; the use cases (`conversations.services`,
`conversations.tasks`) drive the agents; the workflow table (`agents.workflow`) is data."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("planagents", "rag", "agents", "conversations")


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the project modules it imports anywhere in its body (TYPE_CHECKING blocks
    aside: they are never executed)."""

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        skipped = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for node in ast.walk(block)
        }
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                found = owner(target)
                if found and found != name and found != name.rpartition(".")[0]:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_finder_sees_a_cycle_made_inside_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


ALLOWED = [
    # The job seam loads its Celery adapter only when a broker is configured (so the embedded
    # default never imports Celery's app), and the adapter's task runs jobs through the seam.
    ["planagents.celery", "planagents.jobs"],
]


def test_no_project_module_imports_itself_round_a_cycle():
    assert [c for c in cycles(import_graph(project_modules())) if c not in ALLOWED] == []


def test_rag_knows_nothing_of_sessions_or_agents():
    graph = import_graph(project_modules())
    leaks = {
        (name, target)
        for name, targets in graph.items()
        if name.startswith("rag")
        for target in targets
        if target.startswith(("agents", "conversations"))
    }
    assert leaks == set()


def test_agents_reach_conversations_only_through_its_models_and_store():
    graph = import_graph(project_modules())
    allowed = {"conversations.models", "conversations.store", "conversations.progress"}
    reached = {
        (name, target)
        for name, targets in graph.items()
        if name.startswith("agents")
        for target in targets
        if target.startswith("conversations") and target not in allowed
    }
    assert reached == set()
