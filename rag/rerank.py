"""Re-rank the files a first-stage ranking put on top, with what investigation finds (no LLM).

    facts = CodeFacts.load(index_folder)          # symbols.sqlite: definitions, imports
    order = rerank(task_text, first_stage_paths, facts)

The first stage (rag.search) scores files by how much their text looks like the task, and
already counts the symbols the task names, the files its stack-trace frames point into and
the paths it names. On issue-like tasks the right file is then usually near the top but not
first, and the commonest reason is layering: the task names the method a user called
(`ds.copy(deep=True)`, `da.quantile(...)`), the file defining the user-facing method ranks
first, and the method there hands the work down to a method of the same name in a module it
imports (`Dataset.copy` → `Variable.copy` → `PandasIndexAdapter.copy`), where the bug is.

What a person investigating does next, this does with the symbol table and the import graph:
for each method the task calls, in the order the first stage's best file defines them, read
that file's definition; when its body calls the same name (it hands the work down) and exactly
one other top file defining it is imported by it and does not import it back, follow the call
there, and again from there (MAX_HOPS). The chain's last link moves up to the first place. The
way down must be plain: two modules importing each other (one inside a function) are one
layer, and two candidate callees are a guess; either stops the walk and leaves the order
alone. There are no weights to fit.

Measured on swe-dev with a lexical first stage (acc@1 52.4, bench/retrieval/rerank_replay.py):
fusing the first stage with symbol and import-centrality rankings fell to 21.4; following
imports that go both ways to 45.2, one-way imports with several ways down to 47.6; putting
first the one file that defines a class the task names, to 35.7 (the class a user names is the
API, seldom the fix). This strict form moved nothing there (52.4 → 52.4): the first stage's
best file is usually right, and what investigation adds must be unambiguous to beat it.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from rag import index
from rag.navigation import SYMBOLS_FILE
from rag.query import QueryTerms

DEPTH = 10
"""How many first-stage files are looked at; below that the first stage's order stands."""
MAX_TASK_CHARS = 100_000
MAX_HOPS = 3
"""How far a call is followed down (`Dataset.copy` → `Variable.copy` → …)."""
CALLABLE_KINDS = frozenset({"function", "method", "constructor"})
_ATTR_OR_CALL = re.compile(r"\.([A-Za-z_]\w*+)|\b([A-Za-z_]\w*+)\s*+\(")


@dataclass
class CodeFacts:
    """What the re-ranking reads of a codebase: its files' roles, where names are defined and
    who imports whom (the symbol table and import graph written at indexing)."""

    roles: dict[str, str] = field(default_factory=dict)
    """Path → role."""
    definitions: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    """Defined name → [(path, container, kind)] of its definitions."""
    imports: dict[str, set[str]] = field(default_factory=dict)
    """Path → the codebase files it imports."""
    importers: dict[str, set[str]] = field(default_factory=dict)
    """Path → the codebase files importing it."""
    database: Path | None = None
    """The symbols.sqlite they came from, for the lookups not worth loading whole (refs)."""

    @classmethod
    def load(cls, folder: str | Path) -> CodeFacts | None:
        """The facts of an index folder (cached with the index, until symbols.sqlite changes);
        None when the folder has none (an index built before profiles)."""
        return index.cached(folder, SYMBOLS_FILE, _read_facts, kind="facts")

    def hands_down(self, path: str, name: str) -> bool:
        """Whether a definition of `name` in `path` calls `name` in its body (the method that
        delegates to the same method of the object it wraps: `v.copy(deep)` in `copy`)."""
        if self.database is None:
            return False
        uri = f"{self.database.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            found = db.execute(
                "SELECT 1 FROM defs d JOIN files f ON f.id = d.file JOIN refs r ON r.file = d.file "
                "AND r.name = d.name AND r.line > d.start AND r.line <= d.end "
                "WHERE f.path = ? AND d.name = ? AND d.kind IN ('function', 'method') LIMIT 1",
                (path, name),
            ).fetchone()
        return found is not None

    @classmethod
    def read(cls, path: Path) -> CodeFacts:
        facts = cls(database=path)
        uri = f"{path.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            paths = dict(db.execute("SELECT id, path FROM files"))
            facts.roles = {p: r for p, r in db.execute("SELECT path, role FROM files")}
            definitions: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
            rows = db.execute("SELECT name, file, container, kind FROM defs")
            for name, file, container, kind in rows:
                definitions[name].append((paths[file], container or "", kind))
            facts.definitions = dict(definitions)
            imports: dict[str, set[str]] = defaultdict(set)
            importers: dict[str, set[str]] = defaultdict(set)
            for src, dst in db.execute("SELECT src, dst FROM imports"):
                imports[paths[src]].add(paths[dst])
                importers[paths[dst]].add(paths[src])
            facts.imports, facts.importers = dict(imports), dict(importers)
        return facts


def _read_facts(path: Path) -> tuple[CodeFacts, int]:
    # In memory they take about what symbols.sqlite takes on disk (0.7-1.2 times, measured).
    return CodeFacts.read(path), path.stat().st_size


@dataclass(frozen=True)
class Reranked:
    path: str
    first_rank: int
    """Its rank in the first stage, from 1."""
    reason: str = ""
    """Why it moved, when it did (the method and the import chain)."""


def rerank(
    task: str | QueryTerms,
    ranked: Sequence[str],
    facts: CodeFacts | None,
    depth: int = DEPTH,
) -> list[Reranked]:
    """`ranked` (first-stage paths, best first) with at most one file moved up: the end of
    the import chain of a method the task calls (see the module's docstring)."""
    order = list(dict.fromkeys(ranked))
    first = {p: n for n, p in enumerate(order, start=1)}
    move = None if facts is None else delegation(task, order[:depth], facts)
    if move is None:
        return [Reranked(p, first[p]) for p in order]
    target, place, reason = move
    order.remove(target)
    order.insert(order.index(place), target)
    return [Reranked(p, first[p], reason if p == target else "") for p in order]


def delegation(
    task: str | QueryTerms, head: Sequence[str], facts: CodeFacts
) -> tuple[str, str, str] | None:
    """(file to move up, the file whose place it takes, why) or None."""
    text = task if isinstance(task, str) else task.text
    called = called_names(text)
    if not called:
        return None
    source = [p for p in head if facts.roles.get(p, "source") == "source"]
    for name in _by_first_definer(called, source, facts):
        definers = [
            p
            for p in source
            if any(d[0] == p and d[2] in CALLABLE_KINDS for d in facts.definitions.get(name, []))
        ]
        if len(definers) < 2:
            continue
        top = definers[0]
        if top != source[0]:
            continue  # only what the best file hands down: the file the plan looks at first
        chain = [top]
        while len(chain) <= MAX_HOPS:
            here = chain[-1]
            if not facts.hands_down(here, name):
                break
            # Down only, and only where the way down is plain: the one definer `here`
            # imports, which does not import it back. Two modules that import each other
            # (one inside a function) are one layer; two ways down are a guess.
            imported = [
                p for p in definers if p in facts.imports.get(here, set()) and p not in chain
            ]
            nxt = [p for p in imported if here not in facts.imports.get(p, set())]
            if len(imported) != 1 or len(nxt) != 1:
                break
            chain.append(nxt[0])
        if len(chain) > 1:
            end = chain[-1]
            how = " → ".join(f"{p.rsplit('/', 1)[-1]}" for p in chain)
            return end, top, f"`{name}` is handed down through the imports: {how}"
    return None


def called_names(text: str) -> list[str]:
    """Names the task calls or reaches as attributes (`ds.copy`, `quantile(`), in order;
    dunders and keywords aside."""
    names = []
    for match in _ATTR_OR_CALL.finditer(text[:MAX_TASK_CHARS]):
        name = match.group(1) or match.group(2)
        if len(name) > 2 and not name.startswith("__") and name not in _NOT_CALLS:
            names.append(name)
    return list(dict.fromkeys(names))


_NOT_CALLS = frozenset({"print", "len", "str", "int", "float", "list", "dict", "set", "tuple",
                        "type", "range", "isinstance", "self", "cls", "import", "from"})  # fmt: skip


def _by_first_definer(names: list[str], head: list[str], facts: CodeFacts) -> list[str]:
    """`names` ordered by the best rank of a head file defining them (the method the top
    file defines first)."""
    rank = {p: n for n, p in enumerate(head)}

    def best(name: str) -> int:
        return min(
            (rank[d[0]] for d in facts.definitions.get(name, []) if d[0] in rank),
            default=len(head),
        )

    return sorted((n for n in names if best(n) < len(head)), key=best)
