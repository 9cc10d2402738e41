"""Where a codebase's program starts and how it is tested, from its files and manifests.

Plain functions, no Django. Entry points: what the manifests declare (console scripts,
package.json main/bin, Cargo binaries), then the conventional files (manage.py, __main__.py,
wsgi/asgi.py), then files defining `main` (Go, Rust, Java) and Python scripts with a
`__main__` guard. Tests: the files whose role is test (rag.roles), where they sit, the naming
patterns in use, and the command that likely runs them (configured first, then inferred).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol

from rag import import_graph
from rag.manifests import Manifest
from rag.roles import LEXICAL_ONLY
from rag.symbols import FileSymbols

MAX_ENTRY_POINTS = 12


class Source(Protocol):
    """What the profile reads of a file (rag.pipeline.FileRecord has it)."""

    path: str
    content: str
    role: str
    withheld_reason: str


def readable(item: Source) -> bool:
    """Whether the file's text may be read for the profile: not withheld, not someone
    else's code (vendored) or a build product (generated)."""
    return not item.withheld_reason and item.role not in LEXICAL_ONLY


@dataclass
class EntryPoint:
    path: str
    kind: str
    """console script, package main, binary, django, wsgi, asgi, module, main or script."""
    detail: str = ""


_MAIN_GUARD = re.compile(r"""^if\s+__name__\s*==\s*["']__main__["']\s*:""", re.M)


def entry_points(
    files: Sequence[Source],
    declared: Sequence[Manifest],
    parsed: Mapping[str, FileSymbols],
) -> list[EntryPoint]:
    """Where the program starts, the declared ones first, at most MAX_ENTRY_POINTS."""
    paths = {f.path for f in files}
    found: list[EntryPoint] = []

    def add(path: str, kind: str, detail: str = "") -> None:
        if path in paths and all(e.path != path for e in found):
            found.append(EntryPoint(path, kind, detail))

    modules = import_graph.python_modules(paths)
    for m in declared:
        if m.ecosystem == "python":
            for name, target in m.scripts.items():
                hit = modules.get(target.split(":")[0].strip())
                if hit:
                    add(hit, "console script", f"{name} = {target}")
        for target in m.entry_files:
            add(target, "package main" if m.ecosystem == "node" else "binary", m.path)
    # Hidden folders hold CI helpers (.github/), not the program; shallow files come first.
    ordered = sorted(
        (
            f
            for f in files
            if readable(f)
            and f.role != "test"
            and f.role not in LEXICAL_ONLY  # a copied library's __main__ is not this program's
            and not any(p.startswith(".") for p in f.path.split("/")[:-1])
        ),
        key=lambda f: (f.path.count("/"), f.path),
    )
    for item in ordered:
        name = PurePosixPath(item.path).name
        if name == "manage.py" and "django" in item.content.lower():
            add(item.path, "django", "python manage.py")
        elif name in ("wsgi.py", "asgi.py"):
            add(item.path, name[:-3], "web server application")
        elif name == "__main__.py":
            package = _folder(item.path).replace("/", ".")
            add(item.path, "module", f"python -m {package}" if package else "python -m")
    for item in ordered:
        found_symbols = parsed.get(item.path)
        has_main = found_symbols is not None and any(
            d.name == "main" and d.kind in ("function", "method") for d in found_symbols.definitions
        )
        suffix = PurePosixPath(item.path).suffix
        if suffix == ".go" and has_main and "package main" in item.content[:4000]:
            add(item.path, "main", "func main")
        elif suffix == ".rs" and has_main:
            add(item.path, "main", "fn main")
        elif suffix == ".java" and has_main and "static void main" in item.content:
            add(item.path, "main", "public static void main")
        elif suffix == ".py" and item.role == "source" and _MAIN_GUARD.search(item.content):
            add(item.path, "script", "if __name__ == '__main__'")
    return found[:MAX_ENTRY_POINTS]


@dataclass
class Tests:
    files: int = 0
    folders: list[tuple[str, int]] = field(default_factory=list)
    """Where test files sit (`tests/`, `astropy/**/tests/`), with their counts, most first."""
    patterns: list[str] = field(default_factory=list)
    """The naming conventions in use (`test_*.py`, `*_test.go`, …)."""
    commands: list[tuple[str, str]] = field(default_factory=list)
    """(command, why), the likeliest first."""


_TEST_PATTERNS = [
    ("test_*.py", re.compile(r"(^|/)test_[^/]*\.py$")),
    ("*_test.py", re.compile(r"_test\.py$")),
    ("*_test.go", re.compile(r"_test\.go$")),
    ("*.test.js/ts", re.compile(r"\.test\.[jt]sx?$")),
    ("*.spec.js/ts", re.compile(r"\.spec\.[jt]sx?$")),
    ("__tests__/", re.compile(r"(^|/)__tests__/")),
    ("*Test.java", re.compile(r"Tests?\.java$")),
    ("*_spec.rb", re.compile(r"_spec\.rb$")),
]
_TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing", "e2e"})
_ECOSYSTEM = {"python": "python", "javascript": "node", "typescript": "node", "go": "go",
              "rust": "rust", "java": "java", "kotlin": "java", "ruby": "ruby", "php": "php"}  # fmt: skip


def tests(files: Sequence[Source], declared: Sequence[Manifest], languages: Sequence[str]) -> Tests:
    """Where the tests are and how to run them; `languages` (largest first) decides which
    ecosystem's command comes first."""
    found = [f for f in files if f.role == "test" and not f.withheld_reason]
    inline_rust = [
        f for f in files if f.path.endswith(".rs") and f.role != "test" and "#[test]" in f.content
    ]
    folders: Counter[str] = Counter(_test_folder(f.path) for f in found + inline_rust)
    patterns = [label for label, p in _TEST_PATTERNS if any(p.search(f.path) for f in found)]
    if inline_rust:
        patterns.append("#[test] in Rust sources")
    return Tests(
        files=len(found) + len(inline_rust),
        folders=sorted(_grouped(folders).items(), key=lambda kv: (-kv[1], kv[0]))[:8],
        patterns=patterns,
        commands=_commands(files, declared, languages, bool(found or inline_rust)),
    )


def _test_folder(path: str) -> str:
    """The folder holding a test file's suite: its outermost `tests/`-like folder, else its
    own folder."""
    parts = path.split("/")[:-1]
    for n, part in enumerate(parts):
        if part.lower() in _TEST_DIRS:
            return "/".join(parts[: n + 1]) + "/"
    return ("/".join(parts) + "/") if parts else "./"


def _grouped(folders: Counter[str]) -> Counter[str]:
    """Test folders beside each package (`astropy/units/tests/`, `astropy/io/tests/`, …)
    as one `astropy/**/tests/` when there are more than three of them."""
    groups: dict[str, list[str]] = defaultdict(list)
    for folder in folders:
        parts = folder.rstrip("/").split("/")
        if len(parts) >= 3:
            groups[f"{parts[0]}/**/{parts[-1]}/"].append(folder)
    merged: Counter[str] = Counter(folders)
    for label, members in groups.items():
        if len(members) > 3:
            for member in members:
                merged[label] += merged.pop(member)
    return merged


def _commands(
    files: Sequence[Source], declared: Sequence[Manifest], languages: Sequence[str], any_tests: bool
) -> list[tuple[str, str]]:
    # The shallowest file of each name (the top-level conftest.py over a nested one).
    names: dict[str, str] = {}
    for f in sorted(files, key=lambda f: (f.path.count("/"), f.path)):
        names.setdefault(PurePosixPath(f.path).name.lower(), f.path)
    commands: list[tuple[str, str, str]] = []  # (ecosystem, command, why)
    for m in declared:
        commands += _declared_commands(m, names)
    has_python = any(f.path.endswith(".py") for f in files)
    if has_python and any_tests and not any(c[0] == "python" for c in commands):
        py_deps = {d for m in declared if m.ecosystem == "python" for d in m.dependencies}
        if "conftest.py" in names:
            commands.append(("python", "pytest", names["conftest.py"]))
        elif "pytest" in py_deps:
            commands.append(("python", "pytest", "pytest is a dependency"))
        elif "manage.py" in names:
            commands.append(("python", "python manage.py test", names["manage.py"]))
        else:
            commands.append(("python", "python -m unittest", "test files, no pytest set-up"))
    rank: dict[str, int] = {}
    for n, language in enumerate(languages):
        rank.setdefault(_ECOSYSTEM.get(language, language), n)
    commands.sort(key=lambda c: (rank.get(c[0], len(rank)), c[1] == "tox"))
    chosen: dict[str, str] = {}
    for _, command, why in commands:
        chosen.setdefault(command, why)
    return list(chosen.items())


def _declared_commands(m: Manifest, names: Mapping[str, str]) -> list[tuple[str, str, str]]:
    found = []
    for hint in m.test_hints:
        if hint == "pytest":
            found.append(("python", "pytest", f"{m.path} configures pytest"))
        elif hint == "tox":
            found.append(("python", "tox", m.path))
        elif hint == "npm test":
            tool = (
                "yarn" if "yarn.lock" in names else "pnpm" if "pnpm-lock.yaml" in names else "npm"
            )
            found.append(("node", f"{tool} test", f"{m.path} scripts.test"))
        elif hint == "mvn test":
            found.append(("java", "mvn test", m.path))
        elif hint == "gradle test":
            found.append(
                ("java", "./gradlew test" if "gradlew" in names else "gradle test", m.path)
            )
        elif hint == "composer test":
            found.append(("php", "composer test", m.path))
    name = PurePosixPath(m.path).name.lower()
    if name == "go.mod":
        found.append(("go", "go test ./...", m.path))
    elif name == "cargo.toml":
        found.append(("rust", "cargo test", m.path))
    elif name == "gemfile":
        rspec = "rspec" in m.dependencies or "rspec-rails" in m.dependencies
        found.append(("ruby", "bundle exec rspec" if rspec else "bundle exec rake test", m.path))
    return found


def _folder(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent
