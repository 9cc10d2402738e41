"""The one place a plan's quality is judged: what the plan page's quality line says, what the
exports carry and what the grounding bench scores.

A plan is judged by what a developer could check in a minute: does each step change a
definition that exists (and show it), is its change sketch made of lines that are really in
that code, does any section name a path or a name the codebase does not have, and which tests
cover the change. Everything here is computed from the plan's data and the codebase's index,
with no model call.
"""

from __future__ import annotations

import builtins
import keyword
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rag.navigation import Navigator, RelatedResult
from rag.paths import FileSet

PROSE = ("summary", "decisions", "testing", "risks")
"""The plan's free-text sections (lists of sentences, or one paragraph)."""

_CODE_SPAN = re.compile(r"(`+)([^`\n]{1,200}?)\1")
_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*")
_WORD = re.compile(r"[^\s`'\"()\[\]{},;]+")
_CITED_LINE = re.compile(r"(?::\d+(?:-\d+)?|#L\d+(?:-L?\d+)?)$")
_DEFINES = re.compile(
    r"^\s*(?:async\s+def|def|class|function|func|fn|const|let|var)\s+([A-Za-z_]\w*)"
    r"|^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]"
)

FILE_EXTENSIONS = frozenset(
    [
        "py",
        "pyi",
        "pyx",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "go",
        "rs",
        "java",
        "kt",
        "rb",
        "php",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cs",
        "swift",
        "scala",
        "md",
        "rst",
        "txt",
        "toml",
        "yaml",
        "yml",
        "json",
        "cfg",
        "ini",
        "html",
        "css",
        "scss",
        "sql",
        "sh",
        "xml",
    ]
)
"""What makes a dotted word a file name (`setup.cfg`) rather than code (`np.array`)."""

_KNOWN_WORDS = (
    frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | frozenset(dir(builtins))
    | frozenset(
        [
            "self",
            "cls",
            "this",
            "super",
            "null",
            "undefined",
            "true",
            "false",
            "nil",
            "func",
            "fn",
            "const",
            "let",
            "var",
            "new",
            "function",
            "return",
            "async",
            "await",
            "import",
            "export",
            "from",
            "module",
            "require",
            "console",
            "window",
            "document",
            "string",
            "int",
            "float",
            "bool",
            "list",
            "dict",
            "set",
            "tuple",
            "bytes",
            "object",
            "any",
            "void",
        ]
    )
)
"""Names any language provides: never counted as invented."""


# ------------------------------------------------------------------ what the index knows


@dataclass
class KnownNames:
    """Which identifiers a codebase has: defined (its symbol table) or written anywhere in its
    files (a word of some file's text: an attribute, a parameter, an external library's name
    it calls), asked one name at a time and remembered. Withheld files do not count."""

    folder: Path | None
    codebase_id: int | None = None
    extra: set[str] = field(default_factory=set)
    """Names known besides the codebase's: the task's words, new definitions of the plan."""
    written: Callable[[str], bool] | None = None
    """Whether some file's text has a name as a word, when not the codebase's files in the
    database (the grounding bench reads the pack instead)."""
    _seen: dict[str, bool] = field(default_factory=dict)
    _defined_seen: dict[str, bool] = field(default_factory=dict)

    def unknown(self, names: Iterable[str]) -> set[str]:
        """Those of `names` that neither the codebase, nor `extra`, nor any language knows.
        With neither a symbol table nor the files to read, nothing is unknown: there is
        nothing to check against."""
        names = set(names)
        asked = names - self._seen.keys() - self.extra - _KNOWN_WORDS
        if asked:
            table = self.folder is not None and Navigator(self.folder).exists()
            if not table and self.codebase_id is None and self.written is None:
                return set()
            for name in sorted(asked)[:MAX_NAMES_CHECKED]:
                self._seen[name] = self.defined(name) or self._written(name)
        return {
            n
            for n in names
            if n not in self.extra and n not in _KNOWN_WORDS and not self._seen.get(n, True)
        }

    def defined(self, name: str) -> bool:
        """Whether the codebase defines `name` (its symbol table), whatever else knows it."""
        if name not in self._defined_seen:
            found = Navigator(self.folder).defines(name) if self.folder else False
            self._defined_seen[name] = found
        return self._defined_seen[name]

    def _written(self, name: str) -> bool:
        """Whether some file's text has `name` as a whole word. The database narrows the files
        to those holding the string (one pass each), the word check reads only those."""
        if self.written is not None:
            return self.written(name)
        if self.codebase_id is None:
            return False
        from rag.models import CodeFile  # noqa: PLC0415 (the module is usable without Django)

        word = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
        holding = CodeFile.objects.filter(
            codebase_id=self.codebase_id, withheld_reason="", content__contains=name
        ).values_list("content", flat=True)
        return any(word.search(text) for text in holding.iterator(chunk_size=20))


MAX_NAMES_CHECKED = 60
"""Names a plan may have checked against the files' text: a plan is short; a flood of names is
cut here rather than scanning a large codebase once per name."""


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a dict, else an empty one (plan data is written by models)."""
    return value if isinstance(value, dict) else {}


def identifiers(text: str) -> set[str]:
    """Every identifier in `text` (for the names a task itself writes)."""
    return set(re.findall(r"[A-Za-z_]\w*", text))


# ------------------------------------------------------------------ paths and names in prose


def is_path_like(word: str) -> bool:
    """A word that names a file: it has a folder (`a/b.py`) or ends in a file extension
    (`setup.cfg`); a URL, a dotted code name (`np.array`) or a version number is not."""
    word = _CITED_LINE.sub("", word.strip(".:"))
    if not word or "://" in word or word.startswith(("@", "-")):
        return False
    suffix = PurePosixPath(word).suffix.lstrip(".").lower()
    if "/" in word:
        return bool(suffix) or word.endswith("/")
    return suffix in FILE_EXTENSIONS and not word.startswith(".")


def written_paths(text: str) -> list[str]:
    """The file paths `text` names, in code spans or as bare words, without line numbers."""
    found: list[str] = []
    for word in _WORD.findall(text):
        word = word.strip(".:")
        if is_path_like(word):
            found.append(_CITED_LINE.sub("", word))
    return list(dict.fromkeys(found))


def code_names(text: str) -> list[str]:
    """Names written as code in `text` that claim to be code of the codebase: in each code
    span, a dotted name (`a.b.c`, `Class.method`) or a call (`name()`); a bare word in
    backticks (`REMOTE_ADDR`, `blocked`) makes no such claim. Spans that are paths or
    citations are left out."""
    names: list[str] = []
    for _, span in _CODE_SPAN.findall(text):
        span = span.strip()
        if is_path_like(span) or any(is_path_like(w) for w in span.split()):
            continue
        for match in _CLAIM.finditer(span):
            name, called = match.group(1), bool(match.group(2))
            if "." in name or called:
                names.append(name)
    return list(dict.fromkeys(names))


_CLAIM = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\s*\()?")
RECEIVERS = frozenset({"self", "cls", "this"})
"""A dotted name starting with these is a member of the codebase's own code."""
STANDARD_MODULES = frozenset(sys.stdlib_module_names)
"""`time.monotonic`, `os.path.join`: the language's library, not the codebase's to check."""


_CHANGING = re.compile(
    r"\b(?:remove|removing|delete|deleting|drop|dropping|replace|replacing|change|changing|"
    r"modify|modifying|rewrite|rewriting|update|updating|edit|xóa|xoá|thay|sửa)\b"
    r"(?:\s+(?:the|this|that|a|an|both|line|lines|call|calls|condition|conditions|check|"
    r"checks|statement|statements|expression|code|assignment|dòng|lệnh|điều kiện))*"
    r"\s+((?:`[^`\n]+`(?:\s*(?:,|and|or|và|hoặc)\s*)?)+)",
    re.IGNORECASE,
)
"""A verb that changes code, then the code it changes, quoted: "Remove the line `x = 1` and
`y()`"; what follows "with" or "to" is the new code, not quoted from the old."""
_CODE_LIKE = re.compile(r"[()=\[\]<>!+*/%,:]|\s")
_NAME_ONLY = re.compile(r"[A-Za-z_][\w.]*(?:\(\))?")


def unquoted(step: dict[str, Any]) -> list[str]:
    """Code a step says to remove, replace or change, written as code, that is not in the code
    shown under it (whitespace and quote marks aside): a claim about the code a reader would
    look for and not find. The requests walk's 1.5B plan said to remove
    `self._r.headers.pop('Content-Length')` from `should_strip_auth`, a line in no file. Names
    alone (`merge_setting`, `Session.send()`) are the invented-name check's; a step with no
    code shown claims nothing here."""
    lines = as_dict(step.get("code")).get("lines")
    if not isinstance(lines, list) or not lines:
        return []
    shown = _squeeze("\n".join(str(line) for line in lines))
    text = f"{step.get('title') or ''} {step.get('detail') or ''}"
    out = []
    for match in _CHANGING.finditer(text):
        for quote in re.findall(r"`([^`\n]+)`", match.group(1)):
            quote = quote.strip()
            if not _CODE_LIKE.search(quote) or _NAME_ONLY.fullmatch(quote):
                continue
            if is_path_like(quote) or _squeeze(quote) in shown:
                continue
            out.append(quote)
    return list(dict.fromkeys(out))


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text).replace('"', "'")


def _sentences(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(section, text) for every piece of prose in the plan: the free-text sections, the
    steps' titles and details, the files' reasons."""
    for key in PROSE:
        value = data.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item.strip():
                yield key, item
    for step in data.get("steps") or []:
        if isinstance(step, dict):
            yield "steps", f"{step.get('title') or ''}. {step.get('detail') or ''}"
    for entry in data.get("files") or []:
        if isinstance(entry, dict) and isinstance(entry.get("reason"), str):
            yield "files", entry["reason"]


def new_definitions(data: dict[str, Any]) -> set[str]:
    """Names the plan itself introduces: defined by a step's sketch (`def name`, `class
    Name`, `name = …`) or named by a step that targets a new definition."""
    names: set[str] = set()
    for step in data.get("steps") or []:
        if not isinstance(step, dict):
            continue
        sketch = as_dict(step.get("sketch"))
        for line in sketch.get("after") or []:
            match = _DEFINES.match(str(line))
            if match:
                names.add(match.group(1) or match.group(2))
        target = as_dict(step.get("target"))
        if target.get("kind") == "new":
            # "Add LoginThrottle": what a new-definition step names is what it introduces.
            names |= identifiers(f"{step.get('title') or ''}")
            names |= {
                part
                for name in code_names(str(step.get("detail") or ""))
                for part in name.split(".")
            }
    return names


@dataclass(frozen=True)
class WrittenPath:
    section: str
    path: str
    status: str
    """exists, new (a file the plan creates, in a folder that exists) or missing."""


def check_written_paths(data: dict[str, Any], paths: FileSet) -> list[WrittenPath]:
    """Every path the plan's prose names, judged: a file of the codebase; a new file (listed
    in Files as created, or a file in a folder the codebase has, such as a new test module
    the Testing section proposes); or missing (invented). The Files table is judged on its
    own (agents.plan.check_file)."""
    created = {
        str(f.get("path"))
        for f in data.get("files") or []
        if isinstance(f, dict) and f.get("action") == "create"
    }
    folders = {str(PurePosixPath(p).parent) for p in paths}
    out: dict[str, WrittenPath] = {}
    for section, text in _sentences(data):
        for written in written_paths(text):
            if written in out:
                continue
            found = paths.resolve(written)
            if found.path is not None:
                status = "exists"
            elif found.how == "invalid":
                continue  # not a path after all (a pattern, a placeholder)
            elif written in created or str(PurePosixPath(written).parent) in folders:
                status = "new"
            else:
                status = "missing"
            out[written] = WrittenPath(section, found.path or written, status)
    return list(out.values())


# ------------------------------------------------------------------ the quality line


@dataclass(frozen=True)
class Quality:
    steps: int
    on_definitions: int
    """Steps whose target is a definition the codebase has (its code shown under the step)."""
    new_definitions: int
    """Steps that add a new definition to a named file."""
    sketches: int
    sketches_checked: int
    """Sketches whose every "before" line is in the target's code, character for character
    after whitespace normalisation."""
    files: int
    invented_paths: list[str]
    """Paths in Files or in any section that are not in the codebase and not new files."""
    invented_names: list[str]
    """Names written as code that the codebase, the task and the plan's new definitions lack."""
    tests: list[tuple[str, str]]
    """Existing test files the plan names, each with why it matters ("imports the changed
    module", "named after it" or "named in the plan"); else the tests of the changed files."""
    tests_named: bool
    """Whether the plan itself names those tests (False: they are the app's suggestion)."""
    unquoted: list[str] = field(default_factory=list)
    """Code the steps say to change that is not in the code shown under them (`unquoted`)."""
    without_step: list[str] = field(default_factory=list)
    """Files in Files that no step changes (nor Testing names): a change with no instruction.
    The requests walk's 1.5B plan listed four such files as "modify", each with a reason no
    step backed ("Add new methods to the `MockRequest` class …")."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Quality:
        fields = {**data}
        fields["tests"] = [tuple(t) for t in data.get("tests") or []]
        return cls(**fields)

    def line(self) -> str:
        """The quality line: "3 steps · 3 on real definitions · 3 sketches checked · …"."""
        parts = [_count(self.steps, "step")]
        if self.steps:
            parts.append(f"{self.on_definitions} on real definitions")
            if self.new_definitions:
                parts.append(_count(self.new_definitions, "new definition"))
            n = self.sketches_checked
            checked = f"{n} {'sketch' if n == 1 else 'sketches'} checked"
            if self.sketches > self.sketches_checked:
                checked += f" ({self.sketches - self.sketches_checked} failing the check)"
            parts.append(checked)
        parts.append(_count(len(self.invented_paths), "invented path"))
        parts.append(_count(len(self.invented_names), "invented name"))
        if self.unquoted:
            parts.append(f"{_count(len(self.unquoted), 'quote')} not in the code shown")
        files = _count(self.files, "file")
        if self.without_step:
            files += f" ({len(self.without_step)} that no step changes)"
        parts.append(files)
        parts.append(self._tests())
        return " · ".join(parts)

    def _tests(self) -> str:
        if not self.tests:
            return "tests: none found"
        shown = ", ".join(f"`{path}` ({why})" for path, why in self.tests[:3])
        more = f" and {len(self.tests) - 3} more" if len(self.tests) > 3 else ""
        return f"tests: {shown}{more}" if self.tests_named else f"tests not named; {shown}{more}"

    def problems(self) -> list[str]:
        """What a reviewer should look at first, one sentence each."""
        out = [f"`{p}` is not in the codebase." for p in self.invented_paths]
        out += [
            f"`{n}` is not defined or used anywhere in the codebase, nor in the task."
            for n in self.invented_names
        ]
        out += [f"A step changes `{q}`, which is not in its code." for q in self.unquoted]
        out += [f"`{p}` is in Files, but no step changes it." for p in self.without_step]
        return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def judge(
    data: dict[str, Any],
    paths: FileSet,
    *,
    task: str,
    index_folder: Path | None,
    codebase_id: int | None = None,
    related: Any = None,
    written: Callable[[str], bool] | None = None,
) -> Quality:
    """The quality of the plan `data` (its structured form, paths already checked or not).

    Names are checked against the symbol table in `index_folder` and the text of the files of
    codebase `codebase_id`. `related(path) -> RelatedResult` gives a changed file's tests
    (rag.navigation); None judges without tests."""
    steps = [s for s in data.get("steps") or [] if isinstance(s, dict)]
    targets = [as_dict(s.get("target")) for s in steps]
    sketches = [s.get("sketch") for s in steps if isinstance(s.get("sketch"), dict)]
    files = [f for f in data.get("files") or [] if isinstance(f, dict) and f.get("path")]

    invented: list[str] = []
    for entry in files:
        found = paths.resolve(str(entry["path"]))
        if entry.get("action") != "create" and found.path is None:
            invented.append(str(entry["path"]))
    invented += [w.path for w in check_written_paths(data, paths) if w.status == "missing"]

    known = KnownNames(
        index_folder, codebase_id, identifiers(task) | new_definitions(data), written
    )
    coded: list[str] = []
    for _, text in _sentences(data):
        coded += code_names(text)
    names = [n for n in dict.fromkeys(coded) if _invented(n, known, _module_names(paths))]

    named_tests = _named_tests(data, files, paths)
    return Quality(
        steps=len(steps),
        on_definitions=sum(1 for t in targets if t.get("kind") == "definition"),
        new_definitions=sum(1 for t in targets if t.get("kind") == "new"),
        sketches=len(sketches),
        sketches_checked=sum(1 for s in sketches if isinstance(s, dict) and s.get("checked")),
        files=len({str(f["path"]) for f in files}),
        invented_paths=list(dict.fromkeys(invented)),
        invented_names=names,
        tests=_tests(named_tests, files, paths, related),
        tests_named=bool(named_tests),
        unquoted=[q for s in steps for q in unquoted(s)],
        without_step=_without_step(data, steps, files, paths),
    )


def _without_step(
    data: dict[str, Any], steps: list[dict[str, Any]], files: list[dict[str, Any]], paths: FileSet
) -> list[str]:
    """The paths in Files that no step names (in its files, its target or its words) and the
    Testing section does not name either, in the plan's own spelling."""
    named: set[str] = set()

    def add(written: str) -> None:
        named.add(paths.resolve(written).path or written)

    for step in steps:
        for written in step.get("files") or []:
            add(str(written))
        target = as_dict(step.get("target"))
        if target.get("path"):
            add(str(target["path"]))
        for written in written_paths(f"{step.get('title') or ''} {step.get('detail') or ''}"):
            add(written)
    for line in data.get("testing") or []:
        for written in written_paths(str(line)):
            add(written)
    out = []
    for entry in files:
        path = str(entry["path"])
        if (paths.resolve(path).path or path) not in named:
            out.append(path)
    return list(dict.fromkeys(out))


def _module_names(paths: FileSet) -> set[str]:
    """The names the codebase's files give its modules and packages (`todo`, `auth`)."""
    return {
        PurePosixPath(part).stem for path in paths for part in PurePosixPath(path).parts if part
    }


def _invented(name: str, known: KnownNames, modules: set[str]) -> bool:
    """Whether a name written as code claims code the codebase does not have.

    A call `name()` is invented when nothing knows `name`. A dotted name is judged by its root:
    one the plan introduces is new code (its members too); `self.x` is the codebase's own; a
    standard module, or a root the files use but do not define (an import alias such as `np`,
    an outside library), is outside code the app cannot check; a root nobody knows is
    invented. Under a root of the codebase (a module, package or definition), every further
    part must be known."""
    parts = name.split(".")
    root, rest = parts[0], parts[1:]
    if not rest:
        return bool(known.unknown({root}))
    if root in known.extra:
        return False
    if root not in RECEIVERS:
        if root in STANDARD_MODULES:
            return False
        if root not in modules and not known.defined(root):
            return bool(known.unknown({root}))
    return bool(known.unknown({p for p in rest if p not in modules}))


def _named_tests(data: dict[str, Any], files: list[dict[str, Any]], paths: FileSet) -> list[str]:
    written = [str(f["path"]) for f in files]
    for section, text in _sentences(data):
        if section in ("testing", "steps", "files"):
            written += written_paths(text)
    found = [paths.resolve(w).path for w in written]
    return list(dict.fromkeys(p for p in found if p and _is_test_path(p)))


def _is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    return (
        any(p in ("test", "tests", "testing", "__tests__", "spec") for p in parts[:-1])
        or name.startswith("test_")
        or PurePosixPath(name).stem.endswith(("_test", ".test", ".spec", "_spec"))
    )


def _tests_of_changes(files: list[dict[str, Any]], paths: FileSet, related: Any) -> dict[str, str]:
    """The tests of the files the plan modifies, from the import graph: path → why."""
    if related is None:
        return {}
    out: dict[str, str] = {}
    for entry in files:
        path = paths.resolve(str(entry["path"])).path
        if not path or entry.get("action") == "delete" or _is_test_path(path):
            continue
        result: RelatedResult = related(path)
        for link in result.tests if result.found else []:
            out.setdefault(link.path, _why(link.why))
    return out


def _why(why: str) -> str:
    return "imports the changed module" if "import" in why else why


def _tests(
    named: list[str], files: list[dict[str, Any]], paths: FileSet, related: Any
) -> list[tuple[str, str]]:
    linked = _tests_of_changes(files, paths, related)
    if named:
        return [(p, linked.get(p, "named in the plan")) for p in named]
    return list(linked.items())[:5]
