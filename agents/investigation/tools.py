"""The read-only tools an agent investigates with, over one indexed codebase:

    ws = Workspace.of(codebase)
    ws.search("rate limit login")        ws.find_symbol("PolyFit")
    ws.find_references("PolyFit")        ws.read_file("app/api.py", 10, 60)
    ws.outline("app/api.py")             ws.list_dir("app")
    ws.related("app/api.py")

Each takes plain arguments and returns a ToolResult; none raises on bad input: an unknown path
or symbol answers "not found, did you mean …". Withheld files (they look like they hold a
secret: CodeFile.withheld_reason) are never shown, and every result is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from rag import index, verbatim
from rag.chunking import split_lines
from rag.models import Codebase, CodeFile
from rag.navigation import Navigator, closest_paths
from rag.paths import FileSet, parse_citation
from rag.retrieval import retrieve

MAX_LINES = 200
MAX_CHARS = 6000
_NAME = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*")
"""A code name as people write it: `Linker`, `Session.send`, `pkg.mod.func`, `mod::Class`."""
_FILE_END = re.compile(
    r"\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java|rb|md|rst|txt|cfg|toml|ini|json|ya?ml)$"
)
SNIPPET_LINES = 40
QUOTE_CONTEXT = 3
"""Lines shown either side of a quoted line found word for word."""


@dataclass(frozen=True)
class Tool:
    """What a model is told of one tool: what it does, and its one string argument."""

    does: str
    argument: str
    """The argument's name: query, name or path."""
    means: str
    """What the argument holds."""


TOOLS: dict[str, Tool] = {
    "search": Tool(
        "Find code by meaning and words, or a quoted line.", "query", "what to look for"
    ),
    "find_symbol": Tool(
        "Show where a class, function or variable is defined.",
        "name",
        "a class, method, function or module-level name",
    ),
    "find_references": Tool(
        "List where a class or function is used.", "name", "a class or function name"
    ),
    "read_file": Tool(
        f"Read at most {MAX_LINES} lines of a file.", "path", "path:start-end, or a path"
    ),
    "outline": Tool("List a file's definitions.", "path", "a file's path"),
    "list_dir": Tool("List a folder.", "path", "a folder's path; . for the root"),
    "related": Tool("Give a file's imports, importers and tests.", "path", "a file's path"),
}
"""The read-only tools, by name: the evidence plan's tool names and the native tool
declarations (agents.investigation.native) both come from here."""


@dataclass(frozen=True)
class ToolResult:
    tool: str
    argument: str
    found: bool
    message: str
    """One line a person (or a model) reads first: what was found, or why not."""
    path: str = ""
    start: int = 0
    end: int = 0
    """The lines `text` shows (0 when it shows no one file's lines)."""
    text: str = ""

    @property
    def location(self) -> str:
        if not self.path:
            return ""
        return f"{self.path}:{self.start}-{self.end}" if self.start else self.path


@dataclass
class Workspace:
    """What the tools read: the codebase's readable files, its withheld ones and its symbol
    index. Built once per investigation (in the thread that owns the database connection)."""

    codebase: Codebase
    files: FileSet
    withheld: dict[str, str] = field(default_factory=dict)
    navigator: Navigator | None = None
    _content: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, codebase: Codebase) -> Workspace:
        rows = CodeFile.objects.filter(codebase=codebase).values_list("path", "withheld_reason")
        readable = [p for p, why in rows if not why]
        withheld = {p: why for p, why in rows if why}
        workspace = cls(codebase, FileSet(readable), withheld)
        workspace.navigator = workspace._nav()
        return workspace

    # -------------------------------------------------------------- dispatch

    def call(self, tool: str, argument: str) -> ToolResult:
        """Run one tool on the one string argument an evidence plan gives it."""
        argument = (argument or "").strip()[:300]
        handlers: dict[str, Callable[[str], ToolResult]] = {
            "search": self.search,
            "find_symbol": self.find_symbol,
            "find_references": self.find_references,
            "read_file": self._read_argument,
            "outline": self.outline,
            "list_dir": self.list_dir,
            "related": self.related,
        }
        handler = handlers.get(tool)
        if handler is None:
            return ToolResult(
                tool, argument, False, f"No tool named `{tool}`; use one of {', '.join(TOOLS)}."
            )
        try:
            return handler(argument)
        except Exception as exc:  # a tool answers, it never takes the session down
            return ToolResult(tool, argument, False, f"The tool failed: {exc}")

    def _read_argument(self, argument: str) -> ToolResult:
        cited = parse_citation(argument)
        if cited is not None:
            return self.read_file(cited.path, cited.start, cited.end)
        parts = argument.replace(",", " ").split()
        numbers = [int(p) for p in parts[1:3] if p.isdigit()]
        start = numbers[0] if numbers else 1
        end = numbers[1] if len(numbers) > 1 else start + MAX_LINES - 1
        return self.read_file(parts[0] if parts else "", start, end)

    # -------------------------------------------------------------- tools

    def search(self, query: str, k: int = 3) -> ToolResult:
        """Code by meaning and words; a query that is a line of code (`x = str(x)`) and
        appears word for word answers with the places it appears, citing the first one's
        line, with QUOTE_CONTEXT lines either side of it shown."""
        if not query.strip():
            return ToolResult("search", query, False, "Nothing to search for: give a query.")
        if verbatim.statement(query):
            quoted = self._quoted(query)
            if quoted is not None:
                return quoted
        hits = [h for h in retrieve(self.codebase, query, k) if h.path in self.files]
        if not hits:
            return ToolResult("search", query, False, f"No code matches `{query}`.")
        blocks = [f"### {h.citation}\n{_clip(h.text, 1500)}" for h in hits]
        top = hits[0]
        return ToolResult(
            "search",
            query,
            True,
            f"{len(hits)} match(es); best: {top.citation}.",
            top.path,
            top.start_line,
            top.end_line,
            _clip("\n\n".join(blocks), MAX_CHARS),
        )

    def _quoted(self, line: str) -> ToolResult | None:
        result = self._nav().find_text(line)
        hits = [h for h in result.hits if h.path in self.files]
        if not hits:
            return None
        first = hits[0]
        listing = [f"- {h.location}: {h.text.strip()[:160]}" for h in hits[:10]]
        low = max(1, first.line - QUOTE_CONTEXT)
        shown = self._lines(first.path, low, first.line + QUOTE_CONTEXT)
        return ToolResult(
            "search",
            line,
            True,
            result.message,
            first.path,
            first.line,
            first.line,
            "\n".join(listing) + "\n\n" + _numbered(shown, low),
        )

    def find_text(self, line: str) -> ToolResult:
        """Where a quoted line of code appears word for word, or "not found"."""
        quoted = self._quoted(line)
        if quoted is not None:
            return quoted
        return ToolResult("search", line, False, self._nav().find_text(line).message)

    def find_symbol(self, name: str) -> ToolResult:
        result = self._nav().find_symbol(name)
        hits = [h for h in result.hits if h.path in self.files]
        if not hits:
            as_file = self._as_file(name)
            if as_file is not None:
                return as_file
            return ToolResult("find_symbol", name, False, _suggesting(result.message, result))
        first = hits[0]
        listing = [f"- {h.kind} `{h.qualified_name}` — {h.location}" for h in hits[:5]]
        end = min(first.end_line, first.start_line + SNIPPET_LINES - 1)
        source = self._lines(first.path, first.start_line, end)
        return ToolResult(
            "find_symbol",
            name,
            True,
            result.message,
            first.path,
            first.start_line,
            end,
            "\n".join(listing) + "\n\n" + _numbered(source, first.start_line),
        )

    def find_references(self, name: str) -> ToolResult:
        result = self._nav().find_references(name)
        refs = [r for r in result.references if r.path in self.files]
        if not refs:
            return ToolResult("find_references", name, False, _suggesting(result.message, result))
        lines = []
        for ref in refs[:15]:
            text = self._lines(ref.path, ref.line, ref.line)
            lines.append(f"{ref.path}:{ref.line}: {text[0].strip()[:160] if text else ''}")
        first = refs[0]
        return ToolResult(
            "find_references",
            name,
            True,
            result.message,
            first.path,
            first.line,
            first.line,
            "\n".join(lines),
        )

    def read_file(self, path: str, start: int = 1, end: int | None = None) -> ToolResult:
        argument = f"{path}:{start}-{end}" if end else f"{path}:{start}"
        real, refusal = self._resolve(path)
        if real is None:
            named = self._as_name(path, refusal)
            if named is not None:  # the definition, as find_symbol shows it
                return replace(named, tool="read_file", argument=argument)
            return ToolResult("read_file", argument, False, refusal)
        lines = self._all_lines(real)
        start = max(1, start)
        if start > len(lines):
            return ToolResult(
                "read_file",
                argument,
                False,
                f"{real} has {len(lines)} lines; line {start} is out of range.",
                real,
            )
        wanted = end if end is not None and end >= start else start + MAX_LINES - 1
        last = min(wanted, start + MAX_LINES - 1, len(lines))
        shown: list[str] = []
        used = 0
        for number in range(start, last + 1):
            line = f"{number}: {lines[number - 1]}"
            if used + len(line) > MAX_CHARS and shown:
                last = number - 1
                break
            shown.append(line)
            used += len(line) + 1
        notes = []
        if wanted > last:
            notes.append(f"showing lines {start}-{last} of {len(lines)}")
        message = f"{real}:{start}-{last}" + (f" ({'; '.join(notes)})." if notes else ".")
        return ToolResult("read_file", argument, True, message, real, start, last, "\n".join(shown))

    def outline(self, path: str) -> ToolResult:
        real, refusal = self._resolve(path)
        if real is None:
            named = self._as_name(path, refusal)
            if named is None:
                return ToolResult("outline", path, False, refusal)
            outlined = self.outline(named.path)  # the file that defines the name
            return replace(outlined, argument=path, message=f"{named.message} {outlined.message}")
        result = self._nav().outline(real)
        if not result.found or not result.entries:
            return ToolResult("outline", path, result.found, result.message, real)
        rows = [
            f"{'  ' * min(e.depth, 3)}{e.kind} {e.name}  {e.start_line}-{e.end_line}"
            for e in result.entries[:60]
        ]
        last = max(e.end_line for e in result.entries)
        return ToolResult(
            "outline", path, True, result.message, real, 1, last, _clip("\n".join(rows), MAX_CHARS)
        )

    def list_dir(self, path: str) -> ToolResult:
        folder = path.strip().strip("/").removeprefix("./")
        folder = "" if folder in (".", "") else folder
        prefix = f"{folder}/" if folder else ""
        children: dict[str, int] = {}
        for real in self.files:
            if real.startswith(prefix):
                rest = real[len(prefix) :]
                head, _, tail = rest.partition("/")
                key = f"{head}/" if tail else head
                children[key] = children.get(key, 0) + 1
        if not children:
            folders = sorted({p.rsplit("/", 1)[0] for p in self.files if "/" in p})
            near = closest_paths(folder, folders)
            hint = f" Did you mean: {', '.join(near)}?" if near else ""
            return ToolResult(
                "list_dir", path, False, f"No folder `{folder}` in this codebase.{hint}"
            )
        rows = [
            f"{name} ({count} files)" if name.endswith("/") else name
            for name, count in sorted(
                children.items(), key=lambda kv: (not kv[0].endswith("/"), kv[0])
            )
        ]
        return ToolResult(
            "list_dir",
            path,
            True,
            f"{folder or '(root)'}: {len(rows)} entries.",
            "",
            0,
            0,
            _clip("\n".join(rows[:100]), MAX_CHARS),
        )

    def related(self, path: str) -> ToolResult:
        real, refusal = self._resolve(path)
        if real is None:
            return ToolResult("related", path, False, refusal)
        result = self._nav().related(real)
        if not result.found:
            return ToolResult("related", path, False, result.message)

        def readable(paths: list[str]) -> str:
            shown = [p for p in paths if p in self.files][:12]
            return ", ".join(shown) or "(none)"

        text = (
            f"imports: {readable(result.imports)}\n"
            f"imported by: {readable(result.importers)}\n"
            f"tests: {readable([t.path for t in result.tests])}"
        )
        return ToolResult("related", path, True, result.message, real, 0, 0, text)

    # -------------------------------------------------------------- helpers

    def _nav(self) -> Navigator:
        return self.navigator or Navigator(index.index_dir(self.codebase.pk), texts=self._texts)

    def _texts(self, needles: Sequence[str]) -> Iterator[tuple[str, str]]:
        """The readable files holding every one of `needles`, narrowed by the database (a
        `LIKE`, case-insensitive on SQLite: a superset; verbatim.find checks exactly)."""
        rows = CodeFile.objects.filter(codebase=self.codebase, withheld_reason="")
        for needle in needles:
            rows = rows.filter(content__contains=needle)
        for path, content in rows.values_list("path", "content").iterator(chunk_size=100):
            if path in self.files:
                yield path, content

    def _resolve(self, path: str) -> tuple[str | None, str]:
        """The readable file `path` means, or None and the message saying why not."""
        cited = parse_citation(path)
        written = cited.path if cited is not None else path
        if not written.strip():
            return None, "No path given."
        resolved = self.files.resolve(written)
        if resolved.found:
            return resolved.path, ""
        hidden = FileSet(self.withheld).resolve(written)
        if hidden.found and hidden.path:
            reason = self.withheld[hidden.path]
            return None, f"{hidden.path} is withheld from the agents ({reason})."
        if resolved.candidates:
            return None, f"`{written}` could mean several files: {', '.join(resolved.candidates)}."
        near = closest_paths(resolved.written or written, list(self.files))
        hint = f" Did you mean: {', '.join(near)}?" if near else ""
        return None, f"No file `{resolved.written or written}` in this codebase.{hint}"

    def _as_file(self, written: str) -> ToolResult | None:
        """outline's answer for a file given where a name was asked for (`find_symbol
        pkg/mod.py`), its message saying so; None when `written` is not one of the files.
        The 1.5B model looked up `astropy/coordinates/sky_coordinate.py` as a symbol to find
        what it defines, and was told "Did you mean: copy, _copy, ipyio"."""
        if "::" in written:
            return None
        real, _refusal = self._resolve(written)
        if real is None:
            return None
        outlined = self.outline(real)
        note = f"`{written.strip()}` is a file, not a name; its outline. "
        return replace(
            outlined, tool="find_symbol", argument=written, message=note + outlined.message
        )

    def _as_name(self, written: str, refusal: str) -> ToolResult | None:
        """find_symbol's answer for a name given where a file was asked for (`outline Linker`,
        `read_file Session.send`), its message saying so; None when `written` is not a name
        or names nothing here. Models and issue writers name code by its definitions: the
        1.5B model outlined `C` and `a` and was told only "No file `C`"."""
        name = written.strip().strip("`'\"")
        if not _NAME.fullmatch(name) or _FILE_END.search(name) or not refusal.startswith("No file"):
            return None
        found = self.find_symbol(name)
        if not found.found:
            return None
        return replace(
            found,
            message=f"`{name}` is not a file; it is defined at {found.location}. " + found.message,
        )

    def _all_lines(self, path: str) -> list[str]:
        if path not in self._content:
            content = CodeFile.objects.filter(codebase=self.codebase, path=path).values_list(
                "content", flat=True
            )
            self._content[path] = split_lines(content.first() or "")
        return self._content[path]

    def _lines(self, path: str, start: int, end: int) -> list[str]:
        return self._all_lines(path)[max(start, 1) - 1 : end]


def _numbered(lines: list[str], first: int) -> str:
    return _clip("\n".join(f"{first + i}: {line}" for i, line in enumerate(lines)), MAX_CHARS)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "\n…"


def _suggesting(message: str, result: object) -> str:
    """The navigator's "not found" message; when it found only withheld or no files, say so."""
    if getattr(result, "found", False):
        return re.sub(r"\s+", " ", f"{message} (only in files withheld from the agents)")
    return message
