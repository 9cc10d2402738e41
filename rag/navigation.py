"""Read-only lookups over a codebase's symbols and import graph, for the investigation tools:
`find_symbol`, `find_references`, `outline`, `related`.

    nav = Navigator(index_folder)
    nav.find_symbol("Cart.total")   # SymbolResult: hits with path:start-end, or suggestions
    nav.find_symbol("shop/models.py::Cart.total")  # a path, then names; inherited methods too
    nav.find_text("x = str(x)")     # TextResult: where a quoted line is (given the file texts)
    nav.find_references("total")    # ReferenceResult
    nav.outline("shop/cart.py")     # OutlineResult
    nav.related("shop/cart.py")     # RelatedResult: imports, importers, tests

Nothing raises for a name or path the codebase lacks: the result says "not found" and
suggests what is there. Data is a SQLite file (symbols.sqlite) written by `write` at indexing
and replaced atomically; every lookup opens it read-only, so a rebuild is seen at once.
Plain functions, no Django.
"""

from __future__ import annotations

import difflib
import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rag import index, verbatim
from rag.import_graph import ImportGraph
from rag.paths import FileSet
from rag.symbols import FileSymbols
from rag.verbatim import TextHit

SYMBOLS_FILE = "symbols.sqlite"
MAX_HITS = 20
MAX_REFERENCES = 50
MAX_SUGGESTIONS = 5

_KIND_ORDER = {"class": 0, "struct": 0, "interface": 0, "trait": 0, "enum": 1, "type": 1,
               "function": 2, "method": 2, "constructor": 3, "module": 3, "macro": 3,
               "constant": 4, "variable": 5}  # fmt: skip
_ROLE_ORDER = {"source": 0, "test": 1, "config": 2, "docs": 3, "data": 3}
_QUALIFIER = re.compile(r"::|#|:|\.")
_CLASS_KINDS = ("class", "struct", "interface", "trait")
_RECEIVERS = ("self.", "cls.", "this.")
MAX_BASES = 40
"""How many classes a lookup of an inherited method may visit."""

TextSource = Callable[[Sequence[str]], Iterable[tuple[str, str]]]
"""Given words every wanted file holds, (path, text) of the files that may hold them (more is
fine, never fewer): how a Navigator reads file texts, which live outside its index folder."""


@dataclass(frozen=True)
class FileRow:
    path: str
    language: str
    role: str
    lines: int


@dataclass(frozen=True)
class SymbolHit:
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    container: str = ""
    role: str = field(default="", compare=False)
    """The file's role (source, test, docs, vendored, …), as the index gave it."""

    @property
    def qualified_name(self) -> str:
        return f"{self.container}.{self.name}" if self.container else self.name

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class SymbolResult:
    query: str
    hits: list[SymbolHit]
    match: str
    """exact, case-insensitive, spelling (`_` and case aside: resolveUrl for resolve_url),
    qualified (`Cart.total`, `shop.models.Cart.total`, `shop/models.py::Cart.total`),
    inherited (`Session.close` defined on a base or mixin of `Session`), name (the qualifier
    fits nothing here: these are the definitions of its last part), or none."""
    suggestions: list[str] = field(default_factory=list)
    total: int = 0
    note: str = ""
    """Why a qualified name resolved the way it did, when it was not plainly."""

    @property
    def found(self) -> bool:
        return bool(self.hits)

    @property
    def ambiguous(self) -> bool:
        """A qualified name several definitions fit."""
        return self.match in ("qualified", "inherited", "name") and self.total > 1

    @property
    def message(self) -> str:
        if self.hits:
            note = f" {self.note}" if self.note else ""
            if self.ambiguous:
                listed = ", ".join(f"`{h.qualified_name}` ({h.location})" for h in self.hits[:5])
                more = f" and {self.total - 5} more" if self.total > 5 else ""
                return f"`{self.query}` could mean {self.total} definitions: {listed}{more}.{note}"
            more = f" (showing {len(self.hits)})" if self.total > len(self.hits) else ""
            how = "" if self.match == "exact" else f" ({self.match} match)"
            return f"{self.total} definition(s) of `{self.query}`{how}{more}.{note}"
        if self.suggestions:
            # Something close exists: "not defined in this codebase" would be read as a fact
            # about a name the code may well define under a spelling not tried here.
            return _not_found(f"No definition matches `{self.query}` as written.", self.suggestions)
        return f"No symbol named `{self.query}` is defined in this codebase."


@dataclass(frozen=True)
class TextResult:
    query: str
    hits: list[TextHit]
    searched: bool = True
    """False when the navigator was given no file texts, or the query is no quotable line."""
    total: int = 0

    @property
    def found(self) -> bool:
        return bool(self.hits)

    @property
    def message(self) -> str:
        if self.hits:
            where = ", ".join(h.location for h in self.hits[:3])
            more = f" and {self.total - 3} more" if self.total > 3 else ""
            return f"`{self.query}` appears word for word at {where}{more}."
        if not self.searched:
            return f"`{self.query}` was not looked for word for word (no single line of code)."
        return f"`{self.query}` appears nowhere in this codebase word for word."


@dataclass(frozen=True)
class Reference:
    path: str
    line: int

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}-{self.line}"


@dataclass(frozen=True)
class ReferenceResult:
    query: str
    references: list[Reference]
    total: int
    files: int
    """How many files name it."""
    definitions: list[SymbolHit] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.references)

    @property
    def message(self) -> str:
        if self.references:
            more = f", showing {len(self.references)}" if self.total > len(self.references) else ""
            return f"`{self.query}` is named {self.total} time(s) in {self.files} file(s){more}."
        if self.definitions:
            return f"`{self.query}` is defined but nothing else in the codebase names it."
        return _not_found(
            f"Nothing in this codebase defines or names `{self.query}`.", self.suggestions
        )


@dataclass(frozen=True)
class OutlineEntry:
    name: str
    kind: str
    start_line: int
    end_line: int
    depth: int
    """0 for top-level definitions, 1 for a class's methods, …"""
    container: str = ""

    @property
    def location(self) -> str:
        return f"{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class OutlineResult:
    query: str
    path: str | None
    """The codebase's own spelling of the file, None when no file matched."""
    language: str = ""
    lines: int = 0
    entries: list[OutlineEntry] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    parsed: bool = True
    """False when the file's language has no grammar here (or it was too large or withheld)."""

    @property
    def found(self) -> bool:
        return self.path is not None

    @property
    def message(self) -> str:
        if self.path is None:
            return _not_found(f"No file `{self.query}` in this codebase.", self.suggestions)
        if not self.parsed:
            return f"{self.path}: no outline ({self.language or 'this kind of file'} is not parsed); read it instead."
        return f"{self.path}: {len(self.entries)} definition(s) in {self.lines} lines."


@dataclass(frozen=True)
class TestLink:
    path: str
    why: str
    """imports it, named after it, or both."""


@dataclass(frozen=True)
class RelatedResult:
    query: str
    path: str | None
    imports: list[str] = field(default_factory=list)
    importers: list[str] = field(default_factory=list)
    tests: list[TestLink] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.path is not None

    @property
    def message(self) -> str:
        if self.path is None:
            return _not_found(f"No file `{self.query}` in this codebase.", self.suggestions)
        return (
            f"{self.path} imports {len(self.imports)} file(s), is imported by "
            f"{len(self.importers)}, and has {len(self.tests)} related test file(s)."
        )


def _not_found(text: str, suggestions: Sequence[str]) -> str:
    if suggestions:
        return f"{text} Did you mean: {', '.join(suggestions)}?"
    return text


# Writing ---------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL, language TEXT NOT NULL,
                    role TEXT NOT NULL, lines INTEGER NOT NULL, parsed INTEGER NOT NULL);
CREATE TABLE defs (name TEXT NOT NULL COLLATE NOCASE, kind TEXT NOT NULL, file INTEGER NOT NULL,
                   start INTEGER NOT NULL, end INTEGER NOT NULL, container TEXT NOT NULL);
CREATE TABLE refs (name TEXT NOT NULL, file INTEGER NOT NULL, line INTEGER NOT NULL);
CREATE TABLE imports (src INTEGER NOT NULL, dst INTEGER NOT NULL);
CREATE TABLE bases (file INTEGER NOT NULL, name TEXT NOT NULL, container TEXT NOT NULL,
                    base TEXT NOT NULL, ord INTEGER NOT NULL);
"""
_INDEXES = """
CREATE UNIQUE INDEX files_path ON files(path);
CREATE INDEX defs_name ON defs(name);
CREATE INDEX defs_file ON defs(file, start);
CREATE INDEX refs_name ON refs(name);
CREATE INDEX imports_src ON imports(src);
CREATE INDEX imports_dst ON imports(dst);
CREATE INDEX bases_class ON bases(file, name);
"""


def write(
    folder: str | Path,
    files: Sequence[FileRow],
    parsed: Mapping[str, FileSymbols],
    graph: ImportGraph,
) -> None:
    """Write symbols.sqlite into `folder`, replacing the old one atomically.

    References are kept for the names the codebase defines: those are what a planner
    follows; `numpy` or `self` would only multiply the file.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".symbols-", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        with closing(sqlite3.connect(tmp)) as db:
            db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
            ids = {row.path: n for n, row in enumerate(files, start=1)}
            db.executemany(
                "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (ids[r.path], r.path, r.language, r.role, r.lines, r.path in parsed)
                    for r in files
                ],
            )
            defined: set[str] = set()
            for path, found in parsed.items():
                db.executemany(
                    "INSERT INTO defs VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (d.name, d.kind, ids[path], d.start_line, d.end_line, d.container)
                        for d in found.definitions
                    ],  # fmt: skip
                )
                defined.update(d.name for d in found.definitions)
                db.executemany(
                    "INSERT INTO bases VALUES (?, ?, ?, ?, ?)",
                    [
                        (ids[path], d.name, d.container, base, n)
                        for d in found.definitions
                        for n, base in enumerate(d.bases)
                    ],
                )
            for path, found in parsed.items():
                db.executemany(
                    "INSERT INTO refs VALUES (?, ?, ?)",
                    [(name, ids[path], line) for name, line in found.references if name in defined],
                )
            db.executemany(
                "INSERT INTO imports VALUES (?, ?)",
                [
                    (ids[s], ids[t])
                    for s, targets in graph.edges.items()
                    for t in targets
                    if s in ids and t in ids
                ],  # fmt: skip
            )
            db.executescript(_INDEXES)
            db.commit()
        os.replace(tmp, folder / SYMBOLS_FILE)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# Reading ---------------------------------------------------------------------------------


class Navigator:
    """Lookups over one index folder's symbols.sqlite. An index without one (built before
    profiles existed) answers every lookup with "not found" and no suggestions."""

    def __init__(self, folder: str | Path, texts: TextSource | None = None) -> None:
        self.path = Path(folder) / SYMBOLS_FILE
        self.texts = texts
        """Where `find_text` reads file texts; None: it answers "not looked for"."""

    def exists(self) -> bool:
        return self.path.exists()

    def defines(self, name: str) -> bool:
        """Whether some definition is named exactly `name`, letter case included (the plan's
        quality check asks this of each name a plan writes as code)."""
        with self._db() as db:
            if db is None:
                return False
            row = db.execute(
                "SELECT 1 FROM defs WHERE name = ? AND name = ? COLLATE BINARY LIMIT 1",
                (name, name),
            ).fetchone()
        return row is not None

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection | None]:
        if not self.path.exists():
            yield None
            return
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            yield db
        finally:
            db.close()

    # find_symbol -------------------------------------------------------------------------

    def find_symbol(self, name: str, limit: int = MAX_HITS) -> SymbolResult:
        """Definitions named `name`: exact, else differing in case, else spelled differently
        (`_` and case aside); a qualified name the way people write one — `Class.method`,
        `module.func`, `pkg.module.Class.method`, `pkg/mod.py::Class.method`, `self.method`
        — by its container and module path, else through the class's bases (a method a mixin
        defines), else by its last part alone (saying the qualifier fit nothing). When none,
        the closest names the codebase defines."""
        query = _tidy_name(name)
        if not query:
            return SymbolResult(name, [], "none")
        with self._db() as db:
            if db is None:
                return SymbolResult(query, [], "none")
            written_path, parts = _split_name(query)
            if written_path is None and len(parts) <= 1:
                simple = self._by_name(db, query)
                if simple is not None:
                    return _symbols(query, simple[1], simple[0], limit)
            elif parts:
                return self._qualified_symbol(db, query, written_path, parts, limit)
            names, _ = self._catalogue(db)
            return SymbolResult(query, [], "none", _suggest(parts[-1] if parts else query, names))

    def _by_name(self, db: sqlite3.Connection, name: str) -> tuple[str, list[SymbolHit]] | None:
        """(how, hits) of the definitions named `name`: exact, case, then spelling."""
        hits = self._definitions(db, name)
        exact = [h for h in hits if h.name == name]
        if exact:
            return "exact", exact
        if hits:
            return "case-insensitive", hits
        names, _ = self._catalogue(db)
        key = _spelling(name)
        same = [n for n in names if _spelling(n) == key]
        if same:
            return "spelling", [h for n in same for h in self._definitions(db, n) if h.name == n]
        return None

    def _qualified_symbol(
        self,
        db: sqlite3.Connection,
        query: str,
        written_path: str | None,
        parts: list[str],
        limit: int,
    ) -> SymbolResult:
        last, qualifier = parts[-1], parts[:-1]
        path = None
        note = ""
        if written_path is not None:
            path = FileSet(self._catalogue(db)[1]).resolve(written_path).path
            if path is None:
                note = f"No file `{written_path}` here; looked in every file."
        named = self._by_name(db, last)
        candidates = named[1] if named else []
        pool = [h for h in candidates if h.path == path] if path else candidates
        direct = _qualified(pool, qualifier) if qualifier else pool
        if direct:
            return _symbols(query, direct, "qualified", limit, note)
        inherited = self._inherited(db, qualifier, path, last) if qualifier else []
        if inherited:
            owners = ", ".join(dict.fromkeys(f"`{h.container}`" for h in inherited))
            where = f"`{'.'.join(qualifier)}` inherits `{last}` from {owners}."
            return _symbols(query, inherited, "inherited", limit, f"{where} {note}".strip())
        if candidates:
            # The name is real: that is the answer, with what did not fit said plainly.
            if qualifier:
                told = f"No `{'.'.join(qualifier)}` here defines or inherits `{last}`; these do."
            else:
                told = f"`{path or written_path}` does not define `{last}`; these do."
            return _symbols(query, candidates, "name", limit, f"{told} {note}".strip())
        names, _ = self._catalogue(db)
        return SymbolResult(query, [], "none", _suggest(last, names))

    def _inherited(
        self, db: sqlite3.Connection, qualifier: list[str], path: str | None, method: str
    ) -> list[SymbolHit]:
        """`method` as the class `qualifier` names inherits it: for each class that fits, the
        first definition met walking its bases depth-first, left to right (Python's order for
        the usual mixin trees)."""
        classes = [h for h in self._definitions(db, qualifier[-1]) if h.kind in _CLASS_KINDS]
        exact = [h for h in classes if h.name == qualifier[-1]]
        classes = exact or classes
        if path:
            classes = [h for h in classes if h.path == path]
        if len(qualifier) > 1:
            classes = _qualified(classes, qualifier[:-1])
        found: list[SymbolHit] = []
        for cls in classes[:5]:
            seen = {(cls.path, cls.qualified_name)}
            stack = list(reversed(self._bases(db, cls)))
            while stack and len(seen) < MAX_BASES:
                base = stack.pop()
                if (base.path, base.qualified_name) in seen:
                    continue
                seen.add((base.path, base.qualified_name))
                defined = self._members(db, base, method)
                if defined:
                    found.extend(h for h in defined if h not in found)
                    break
                stack.extend(reversed(self._bases(db, base)))
        return found

    def _bases(self, db: sqlite3.Connection, cls: SymbolHit) -> list[SymbolHit]:
        """The classes `cls`'s bases name, resolved: in its own file, else in the files it
        imports, else anywhere (a name defined once). An index written before bases were
        kept has none."""
        try:
            written = [r[0] for r in db.execute(
                "SELECT b.base FROM bases b JOIN files f ON f.id = b.file "
                "WHERE f.path = ? AND b.name = ? AND b.container = ? ORDER BY b.ord",
                (cls.path, cls.name, cls.container))]  # fmt: skip
        except sqlite3.OperationalError:
            return []
        if not written:
            return []
        imported = {r[0] for r in db.execute(
            "SELECT t.path FROM imports i JOIN files s ON s.id = i.src "
            "JOIN files t ON t.id = i.dst WHERE s.path = ?", (cls.path,))}  # fmt: skip
        resolved: list[SymbolHit] = []
        for base in written:
            pieces = base.split(".")
            named = [h for h in self._definitions(db, pieces[-1])
                     if h.kind in _CLASS_KINDS and h.name == pieces[-1]]  # fmt: skip
            if len(pieces) > 1:
                named = _qualified(named, pieces[:-1]) or named
            here = [h for h in named if h.path == cls.path and h != cls]
            near = [h for h in named if h.path in imported]
            chosen = here or near or (named if len(named) == 1 else [])
            resolved.extend(h for h in chosen if h != cls)
        return resolved

    def _members(self, db: sqlite3.Connection, cls: SymbolHit, name: str) -> list[SymbolHit]:
        return [
            h
            for h in self._definitions(db, name)
            if h.name == name and h.path == cls.path and h.container == cls.qualified_name
        ]

    def _definitions(self, db: sqlite3.Connection, name: str) -> list[SymbolHit]:
        rows = db.execute(
            "SELECT d.name, d.kind, f.path, d.start, d.end, d.container, f.role FROM defs d "
            "JOIN files f ON f.id = d.file WHERE d.name = ?",
            (name,),
        ).fetchall()
        rows.sort(key=lambda r: (_ROLE_ORDER.get(r[6], 4), _KIND_ORDER.get(r[1], 6),
                                 r[2].count("/"), r[2], r[3]))  # fmt: skip
        return [SymbolHit(r[0], r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows]

    # find_text ---------------------------------------------------------------------------

    def find_text(self, line: str, limit: int = verbatim.MAX_HITS) -> TextResult:
        """Where a quoted line of code appears word for word (whitespace aside), source files
        first; "not looked for" without file texts or for text that is no single line."""
        query = line.strip().strip("`").strip()
        if self.texts is None or not verbatim.quotable(query):
            return TextResult(query, [], searched=False)
        hits = verbatim.find(query, self.texts(verbatim.needles(query)), limit=10 * limit)
        if hits:
            roles = self.roles()
            hits.sort(key=lambda h: (not h.whole, _ROLE_ORDER.get(roles.get(h.path, ""), 4)))
        return TextResult(query, hits[:limit], total=len(hits))

    def roles(self) -> dict[str, str]:
        """Every file's role (source, test, docs, vendored, …), by path."""
        with self._db() as db:
            if db is None:
                return {}
            return dict(db.execute("SELECT path, role FROM files").fetchall())

    def role(self, path: str) -> str:
        """The role the index gave `path` (source, test, docs, …), "" when it has none."""
        with self._db() as db:
            if db is None:
                return ""
            row = db.execute("SELECT role FROM files WHERE path = ?", (path,)).fetchone()
            return row[0] if row else ""

    # find_references ---------------------------------------------------------------------

    def find_references(self, name: str, limit: int = MAX_REFERENCES) -> ReferenceResult:
        """Where the codebase names `name` (calls, attributes, imports, types), outside its
        definitions' own names; source files first. A qualified `Cart.total` looks for
        `total`."""
        query = _tidy_name(name)
        _, parts = _split_name(query)
        bare = parts[-1] if parts else ""
        if not bare:
            return ReferenceResult(name, [], 0, 0)
        with self._db() as db:
            if db is None:
                return ReferenceResult(query, [], 0, 0)
            definitions = self.find_symbol(query if len(parts) > 1 else bare).hits
            real = definitions[0].name if definitions else bare
            rows = db.execute(
                "SELECT f.path, r.line, f.role FROM refs r JOIN files f ON f.id = r.file "
                "WHERE r.name = ?",
                (real,),
            ).fetchall()
            rows.sort(key=lambda r: (_ROLE_ORDER.get(r[2], 4), r[0], r[1]))
            refs = [Reference(path, line) for path, line, _ in rows]
            suggestions = [] if refs or definitions else _suggest(bare, self._catalogue(db)[0])
            return ReferenceResult(
                real if definitions else query,
                refs[:limit],
                len(refs),
                len({r.path for r in refs}),
                definitions,
                suggestions,
            )

    # outline -----------------------------------------------------------------------------

    def outline(self, path: str) -> OutlineResult:
        """The definitions of one file, in order, nested by container."""
        with self._db() as db:
            if db is None:
                return OutlineResult(path, None)
            real, suggestions = self._resolve(db, path)
            if real is None:
                return OutlineResult(path, None, suggestions=suggestions)
            file_id, language, _, lines, parsed = db.execute(
                "SELECT id, language, role, lines, parsed FROM files WHERE path = ?", (real,)
            ).fetchone()
            rows = db.execute(
                "SELECT name, kind, start, end, container FROM defs WHERE file = ? "
                "ORDER BY start, end DESC",
                (file_id,),
            ).fetchall()
            entries = [
                OutlineEntry(n, k, s, e, container.count(".") + 1 if container else 0, container)
                for n, k, s, e, container in rows
            ]
            return OutlineResult(path, real, language, lines, entries, parsed=bool(parsed))

    # related -----------------------------------------------------------------------------

    def related(self, path: str, limit: int = 30) -> RelatedResult:
        """The files `path` imports, the files importing it, and its tests (test files that
        import it or are named after it)."""
        with self._db() as db:
            if db is None:
                return RelatedResult(path, None)
            real, suggestions = self._resolve(db, path)
            if real is None:
                return RelatedResult(path, None, suggestions=suggestions)
            imports = [r[0] for r in db.execute(
                "SELECT t.path FROM imports i JOIN files s ON s.id = i.src "
                "JOIN files t ON t.id = i.dst WHERE s.path = ? ORDER BY t.path", (real,))]  # fmt: skip
            importers = db.execute(
                "SELECT s.path, s.role FROM imports i JOIN files s ON s.id = i.src "
                "JOIN files t ON t.id = i.dst WHERE t.path = ? ORDER BY s.path",
                (real,),
            ).fetchall()
            test_paths = [r[0] for r in db.execute("SELECT path FROM files WHERE role = 'test'")]
            named = set(tests_named_after(real, test_paths))
            importing = {p for p, role in importers if role == "test"}
            tests = [
                TestLink(
                    p,
                    "imports it and is named after it"
                    if p in named and p in importing
                    else "imports it"
                    if p in importing
                    else "named after it",
                )  # fmt: skip
                for p in sorted(named | importing, key=lambda p: (p not in named, p))
            ]
            return RelatedResult(
                path, real, imports[:limit], [p for p, _ in importers][:limit], tests[:limit]
            )

    # helpers -----------------------------------------------------------------------------

    def _resolve(self, db: sqlite3.Connection, path: str) -> tuple[str | None, list[str]]:
        _, paths = self._catalogue(db)
        resolved = FileSet(paths).resolve(path)
        if resolved.found:
            return resolved.path, []
        if resolved.candidates:
            return None, list(resolved.candidates)
        return None, closest_paths(resolved.written or path, paths)

    def _catalogue(self, db: sqlite3.Connection) -> tuple[list[str], list[str]]:
        """Every defined name and every path (for suggestions), cached with the index until
        symbols.sqlite changes."""

        def read(_path: Path) -> tuple[tuple[list[str], list[str]], int]:
            names = [r[0] for r in db.execute("SELECT DISTINCT name COLLATE BINARY FROM defs")]
            paths = [r[0] for r in db.execute("SELECT path FROM files ORDER BY path")]
            return (names, paths), sum(map(sys.getsizeof, names)) + sum(map(sys.getsizeof, paths))

        found = index.cached(self.path.parent, SYMBOLS_FILE, read, kind="catalogue")
        return found if found is not None else ([], [])


def _symbols(
    query: str, hits: list[SymbolHit], match: str, limit: int, note: str = ""
) -> SymbolResult:
    return SymbolResult(query, hits[:limit], match, total=len(hits), note=note)


def _tidy_name(name: str) -> str:
    """A name as people write it in prose: quotes, `()` or a call's arguments, and a leading
    `self.` left out."""
    query = name.strip().strip("`'\"").strip()
    if "(" in query:
        head = query.split("(", 1)[0].strip()
        query = head if head else query
    for receiver in _RECEIVERS:
        if query.startswith(receiver) and len(query) > len(receiver):
            query = query[len(receiver) :]
    return query


def _split_name(query: str) -> tuple[str | None, list[str]]:
    """(`pkg/mod.py`, [`Class`, `method`]) from `pkg/mod.py::Class.method`; no path for
    `pkg.mod.func` (a dotted module path is matched against files by `_qualified`)."""
    written_path = None
    rest = query
    if "::" in query:
        head, _, tail = query.partition("::")
        if "/" in head or "\\" in head or PurePosixPath(head).suffix in _SOURCE_SUFFIXES:
            written_path, rest = head, tail
    return written_path, [p for p in _QUALIFIER.split(rest) if p]


_SOURCE_SUFFIXES = frozenset({".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx",
                              ".go", ".java", ".rs", ".rb", ".php", ".kt"})  # fmt: skip


def _spelling(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _qualified(hits: list[SymbolHit], qualifier: list[str]) -> list[SymbolHit]:
    """The hits whose container or module path ends with the qualifier (`Cart`, `shop.cart`),
    or whose scope holds it in order ending at its innermost part: a package re-exports its
    modules' names, so `requests.Session` is `requests/sessions.py`'s `Session`."""
    wanted = [q.lower() for q in qualifier]
    chosen = []
    for hit in hits:
        container = [c.lower() for c in hit.container.split(".") if c]
        module = [p.lower() for p in PurePosixPath(hit.path).with_suffix("").parts]
        if module and module[-1] in ("__init__", "index", "mod"):
            module = module[:-1]
        scope = module + container
        ends = scope[-len(wanted) :] == wanted or container[-len(wanted) :] == wanted
        if ends or (scope and scope[-1] == wanted[-1] and _in_order(wanted[:-1], scope[:-1])):
            chosen.append(hit)
    return chosen


def _in_order(wanted: list[str], scope: list[str]) -> bool:
    remaining = iter(scope)
    return all(part in remaining for part in wanted)


def _suggest(query: str, names: Sequence[str], n: int = MAX_SUGGESTIONS) -> list[str]:
    """Names containing the query (shortest first), then the closest spellings."""
    lowered = query.lower()
    if not lowered:
        return []
    containing = sorted((x for x in names if lowered in x.lower()), key=lambda x: (len(x), x))
    by_lower: dict[str, list[str]] = {}
    for x in sorted(names):  # `Quantity` before `quantity`
        by_lower.setdefault(x.lower(), []).append(x)
    close = difflib.get_close_matches(lowered, list(by_lower), n=n, cutoff=0.6)
    spelled = [x for c in close for x in by_lower[c]]
    return list(dict.fromkeys([*containing[:n], *spelled]))[:n]


def closest_paths(written: str, paths: Sequence[str], n: int = 3) -> list[str]:
    """Up to n real paths that look most like `written`: same file name first, then the
    closest spellings."""
    name = PurePosixPath(written).name.lower()
    same_name = [p for p in paths if PurePosixPath(p).name.lower() == name]
    close = difflib.get_close_matches(written, list(paths), n=n, cutoff=0.5)
    return list(dict.fromkeys([*same_name, *close]))[:n]


def tests_named_after(path: str, test_paths: Iterable[str]) -> list[str]:
    """Test files whose name says they test `path`: `test_cart.py`, `cart_test.go`,
    `cart.spec.ts`, `CartTest.java`, `unittest_cart.py` for `cart.py`, `cart.go`, … (a
    package's `__init__.py` and an `index.ts` go by their folder's name)."""
    pure = PurePosixPath(path)
    stem = pure.name.split(".")[0]
    if stem in ("__init__", "index", "mod") and pure.parent.name:
        stem = pure.parent.name
    stem = stem.lower()
    if not stem:
        return []
    wanted = {f"test_{stem}", f"{stem}_test", f"tests_{stem}", f"{stem}_tests", f"test{stem}",
              f"{stem}test", f"{stem}tests", f"{stem}_spec", f"unittest_{stem}", f"{stem}.test",
              f"{stem}.spec"}  # fmt: skip
    family = _FAMILY.get(pure.suffix.lower(), pure.suffix.lower())
    found = []
    for candidate in test_paths:
        test = PurePosixPath(candidate.lower())
        if _FAMILY.get(test.suffix, test.suffix) != family:
            continue
        if test.name.rsplit(".", 1)[0] in wanted:
            found.append(candidate)
    return sorted(found)


_FAMILY = {".pyi": ".py", ".tsx": ".js", ".ts": ".js", ".jsx": ".js", ".mjs": ".js",
           ".cjs": ".js", ".mts": ".js", ".cts": ".js", ".kt": ".java"}  # fmt: skip
"""A file's tests are written in its language (TypeScript code may have JavaScript tests)."""
