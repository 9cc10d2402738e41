"""A codebase's profile, computed once at indexing with no LLM: languages, stack, entry points,
tests and their command, layout, and (stored beside it) the symbol table and import graph.

    analysis = profile.analyze(records)       # FileRecords, or profile.sources({path: text})
    profile.write(folder, analysis)           # profile.json + symbols.sqlite in the index folder
    profile.load(folder)                      # the Profile, for the codebase page and prompts
    profile.summary(profile.load(folder))     # at most 600 characters, for a prompt

Plain functions, no Django. Withheld files (secrets), vendored and generated files and files
over 1 MB are never parsed. The pieces: rag.manifests (what is declared), rag.symbols
(tree-sitter), rag.import_graph (who imports whom), rag.conventions (entry points, tests);
the lookups the investigation tools make are rag.navigation's.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rag import conventions, import_graph, manifests, navigation, symbols
from rag.conventions import EntryPoint, Source, readable
from rag.import_graph import ImportGraph
from rag.languages import language_for
from rag.roles import LEXICAL_ONLY, classify

log = logging.getLogger(__name__)

PROFILE_FILE = "profile.json"
VERSION = 1
SUMMARY_CHARS = 600
NOT_CODE = frozenset({"markdown", "rst", "text", "asciidoc", "json", "yaml", "toml", "ini",
                      "dotenv", "xml", "csv", "lockfile", "config", ""})  # fmt: skip
"""Languages left out of the language shares: they describe or feed the code."""


@dataclass
class SourceFile:
    path: str
    content: str
    role: str
    withheld_reason: str = ""


def sources(files: Mapping[str, str]) -> list[SourceFile]:
    """Files given as path → text, with the roles indexing would give them."""
    items = list(files.items())
    roles = classify(items)
    return [SourceFile(p, t, r) for (p, t), r in zip(items, roles, strict=True)]


@dataclass
class Profile:
    version: int = VERSION
    file_count: int = 0
    parsed: int = 0
    """Files whose symbols were read."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Why the others were not: withheld, vendored, generated, too large, no grammar, parse
    error."""
    languages: list[dict[str, Any]] = field(default_factory=list)
    """[{name, files, bytes, share}] of the code's languages, largest first."""
    stack: list[str] = field(default_factory=list)
    """Frameworks and notable libraries the manifests declare, frameworks first."""
    manifests: list[str] = field(default_factory=list)
    dependencies: dict[str, int] = field(default_factory=dict)
    """How many dependencies each ecosystem's manifests declare."""
    entry_points: list[EntryPoint] = field(default_factory=list)
    test_files: int = 0
    test_folders: list[tuple[str, int]] = field(default_factory=list)
    test_patterns: list[str] = field(default_factory=list)
    test_command: str = ""
    test_command_source: str = ""
    test_commands: list[tuple[str, str]] = field(default_factory=list)
    """Every (command, why) found, the likeliest first."""
    layout: list[tuple[str, int]] = field(default_factory=list)
    """Top-level folders (ending in /) and files with their file counts, largest first."""
    definitions: int = 0
    definitions_by_kind: dict[str, int] = field(default_factory=dict)
    import_edges: int = 0
    most_imported: list[tuple[str, int]] = field(default_factory=list)
    """Files imported by the most other files, with that count."""
    external_imports: list[tuple[str, int]] = field(default_factory=list)
    """Third-party packages by how many files import them."""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Profile:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["entry_points"] = [EntryPoint(**e) for e in known.get("entry_points", [])]
        for key in ("test_folders", "test_commands", "layout", "most_imported",
                    "external_imports"):  # fmt: skip
            known[key] = [tuple(item) for item in known.get(key, [])]
        return cls(**known)


@dataclass
class Analysis:
    profile: Profile
    files: list[navigation.FileRow]
    symbols: dict[str, symbols.FileSymbols]
    graph: ImportGraph


def analyze(files: Sequence[Source]) -> Analysis:
    """The profile, symbols and import graph of a codebase's files."""
    started = time.perf_counter()
    profile = Profile(file_count=len(files))
    skipped: Counter[str] = Counter()
    parsed: dict[str, symbols.FileSymbols] = {}
    rows: list[navigation.FileRow] = []
    for item in files:
        language = language_for(item.path)
        reason = _skip_reason(item, language)
        result = None if reason else _extract(item, language)
        if result is None:
            skipped[reason or "parse error"] += 1
        else:
            parsed[item.path] = result
        rows.append(navigation.FileRow(item.path, language, item.role, _line_count(item.content)))
    profile.parsed = len(parsed)
    profile.skipped = dict(skipped.most_common())

    found = [manifests.read(f.path, f.content) for f in files if readable(f)]
    declared = sorted((m for m in found if m), key=lambda m: (m.path.count("/"), m.path))
    profile.manifests = [m.path for m in declared]
    profile.stack = manifests.stack(declared)
    per_ecosystem: dict[str, set[str]] = {}
    for m in declared:
        per_ecosystem.setdefault(m.ecosystem, set()).update(m.dependencies)
    profile.dependencies = {k: len(v) for k, v in sorted(per_ecosystem.items())}

    profile.languages = _languages(files)
    profile.entry_points = conventions.entry_points(files, declared, parsed)
    tests = conventions.tests(files, declared, [lang["name"] for lang in profile.languages])
    profile.test_files, profile.test_folders = tests.files, tests.folders
    profile.test_patterns, profile.test_commands = tests.patterns, tests.commands
    if tests.commands:
        profile.test_command, profile.test_command_source = tests.commands[0]
    profile.layout = _layout(files)

    graph = import_graph.build(
        [f.path for f in files],
        {path: (s.language, s.imports) for path, s in parsed.items()},
        {_folder(m.path): m.module for m in declared if m.module},
    )
    kinds: Counter[str] = Counter(d.kind for s in parsed.values() for d in s.definitions)
    profile.definitions = sum(kinds.values())
    profile.definitions_by_kind = dict(kinds.most_common())
    profile.import_edges = sum(len(t) for t in graph.edges.values())
    # What the project itself leans on: a vendored library its code imports everywhere is not.
    copied = {f.path for f in files if f.role in LEXICAL_ONLY}
    imported = ((path, len(srcs)) for path, srcs in graph.importers().items() if path not in copied)
    profile.most_imported = sorted(imported, key=lambda kv: (-kv[1], kv[0]))[:10]
    profile.external_imports = list(graph.external.items())[:15]
    profile.seconds = round(time.perf_counter() - started, 3)
    return Analysis(profile, rows, parsed, graph)


def write(folder: str | Path, analysis: Analysis) -> None:
    """Store the analysis in an index folder, each file replaced atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    navigation.write(folder, analysis.files, analysis.symbols, analysis.graph)
    navigation.atomic_write_text(folder / PROFILE_FILE, json.dumps(analysis.profile.to_json()))


def build_into(folder: str | Path, files: Sequence[Source]) -> Profile | None:
    """Analyze `files` and store the result in an index folder: the indexing job's hook.

    A failure is logged and leaves no profile (never a stale one): the codebase stays
    searchable, and the tools say they have no symbols rather than answer from old ones.
    """
    folder = Path(folder)
    try:
        analysis = analyze(files)
        write(folder, analysis)
    except Exception:
        log.exception("could not profile the codebase indexed in %s", folder)
        for name in (PROFILE_FILE, navigation.SYMBOLS_FILE):
            (folder / name).unlink(missing_ok=True)
        return None
    found = analysis.profile
    log.info(
        "profiled %d files (%d parsed) in %.1fs", found.file_count, found.parsed, found.seconds
    )
    return found


def load(folder: str | Path) -> Profile | None:
    """The stored profile, or None when there is none (an index built before profiles)."""
    try:
        data = json.loads((Path(folder) / PROFILE_FILE).read_text())
        return Profile.from_json(data) if data.get("version") == VERSION else None
    except (OSError, ValueError, TypeError):
        return None


def summary(profile: Profile | None, limit: int = SUMMARY_CHARS) -> str:
    """The profile in a few short lines for a prompt: stack, entry points, tests, layout,
    the most imported files. Items are dropped from the end of the longest line until the
    whole fits in `limit` characters."""
    if profile is None:
        return ""
    languages = [
        f"{display_language(lang['name'])} {round(100 * lang['share'])}%"
        for lang in profile.languages[:3]
        if lang["share"] >= 0.02
    ]
    lines = [
        "Stack: "
        + (
            "; ".join(p for p in (", ".join(languages), ", ".join(profile.stack[:8])) if p)
            or "unknown"
        )
    ]
    if profile.entry_points:
        shown = [_entry(e) for e in profile.entry_points[:5]]
        lines.append("Entry points: " + ", ".join(shown))
    if profile.test_files or profile.test_command:
        run = f"run `{profile.test_command}`" if profile.test_command else "no test command found"
        where = [f"{folder} ({n})" for folder, n in profile.test_folders[:4]]
        lines.append("Tests: " + "; ".join([run, ", ".join(where)] if where else [run]))
    folders = [f"{name} ({n})" for name, n in profile.layout if name.endswith("/")]
    if folders:
        lines.append("Layout: " + ", ".join(folders[:8]))
    if profile.most_imported:
        lines.append("Most imported: " + ", ".join(p for p, _ in profile.most_imported[:5]))
    return _fit(lines, limit)


_DISPLAY = {"javascript": "JavaScript", "typescript": "TypeScript", "cpp": "C++", "csharp": "C#",
            "php": "PHP", "objective-c": "Objective-C", "html": "HTML", "css": "CSS",
            "scss": "SCSS", "sql": "SQL"}  # fmt: skip


def display_language(name: str) -> str:
    """`typescript` → `TypeScript`, `python` → `Python`."""
    return _DISPLAY.get(name, name.capitalize())


def _entry(entry: EntryPoint) -> str:
    if entry.kind in ("django", "module"):
        return f"{entry.path} ({entry.detail})"
    if entry.kind == "console script":
        return f"{entry.path} ({entry.detail.split(' = ')[0]})"
    return entry.path


def _fit(lines: list[str], limit: int) -> str:
    text = "\n".join(lines)
    while len(text) > limit:
        longest = max(range(len(lines)), key=lambda n: len(lines[n]))
        line = lines[longest]
        cut = max(line.rfind(", "), line.rfind("; "))
        if cut > line.find(": ") + 2:
            lines[longest] = line[:cut]
        else:
            lines[longest] = line[: max(0, len(line) - (len(text) - limit) - 1)] + "…"
        text = "\n".join(lines)
    return text


def _extract(item: Source, language: str) -> symbols.FileSymbols | None:
    if hasattr(item, "symbols"):  # a rag.pipeline.FileRecord: read already, for its chunks
        found: symbols.FileSymbols | None = item.symbols
        return found
    try:
        return symbols.extract(item.path, item.content, language)
    except Exception:  # one odd file must not cost the codebase its profile
        log.exception("could not read the symbols of %s", item.path)
        return None


def _skip_reason(item: Source, language: str) -> str:
    if item.withheld_reason:
        return "withheld"
    if item.role in LEXICAL_ONLY:
        return item.role
    if len(item.content.encode("utf-8", "replace")) > symbols.MAX_BYTES:
        return "too large"
    if not symbols.supported(item.path, language):
        return "no grammar"
    return ""


def _line_count(content: str) -> int:
    return content.count("\n") + (1 if content and not content.endswith("\n") else 0)


def _languages(files: Sequence[Source]) -> list[dict[str, Any]]:
    count: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for item in files:
        language = language_for(item.path)
        if language not in NOT_CODE and readable(item):
            count[language] += 1
            size[language] += len(item.content.encode("utf-8", "replace"))
    total = sum(size.values()) or 1
    return [
        {"name": name, "files": count[name], "bytes": n, "share": round(n / total, 3)}
        for name, n in sorted(size.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _layout(files: Sequence[Source]) -> list[tuple[str, int]]:
    top: Counter[str] = Counter()
    for item in files:
        head, _, rest = item.path.partition("/")
        top[head + "/" if rest else head] += 1
    return sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))


def _folder(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent
