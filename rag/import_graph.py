"""Who imports whom: the imports tree-sitter found (rag.symbols.Import), resolved to files.

Plain functions over paths, no Django. Each language resolves the way its tools do, within
what the files alone tell:
- Python: relative imports from the importing file's folder; absolute ones by module name,
  where a module's name starts at the folder above its outermost package (`src/pkg/a.py` is
  `pkg.a`), then next to the importing script, then as a path from the top;
- JavaScript/TypeScript: relative specifiers with the usual extensions and `index` files,
  `@/` and `~/` as `src/`;
- Go: import paths under a `go.mod`'s module, to the package folder's files;
- Java: `a.b.C` to the file ending in `a/b/C.java`, `a.b.*` to its folder;
- Rust: `mod x;` and `crate::`/`self::`/`super::` paths to `x.rs` or `x/mod.rs`.
Everything else is external: counted by package (the files importing it), standard
libraries apart.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag.symbols import Import

JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts", ".vue", ".svelte")
NODE_BUILTINS = frozenset(
    [
        "assert",
        "async_hooks",
        "buffer",
        "child_process",
        "cluster",
        "console",
        "constants",
        "crypto",
        "dgram",
        "dns",
        "domain",
        "events",
        "fs",
        "http",
        "http2",
        "https",
        "inspector",
        "module",
        "net",
        "os",
        "path",
        "perf_hooks",
        "process",
        "punycode",
        "querystring",
        "readline",
        "repl",
        "stream",
        "string_decoder",
        "timers",
        "tls",
        "trace_events",
        "tty",
        "url",
        "util",
        "v8",
        "vm",
        "wasi",
        "worker_threads",
        "zlib",
    ]
)
RUST_STD = frozenset({"std", "core", "alloc", "proc_macro", "test"})
MAX_PACKAGE_EDGES = 50
"""A Go package or Java wildcard import links to at most this many of the folder's files."""


@dataclass
class ImportGraph:
    edges: dict[str, list[str]] = field(default_factory=dict)
    """Importing file → the files it imports, sorted."""
    external: dict[str, int] = field(default_factory=dict)
    """Third-party package → how many files import it, most first."""
    stdlib: dict[str, int] = field(default_factory=dict)
    """Standard-library module → how many files import it, most first."""

    def importers(self) -> dict[str, list[str]]:
        """Imported file → the files importing it, sorted."""
        back: dict[str, list[str]] = defaultdict(list)
        for source, targets in sorted(self.edges.items()):
            for target in targets:
                back[target].append(source)
        return dict(back)


def build(
    paths: Sequence[str],
    imports: Mapping[str, tuple[str, Sequence[Import]]],
    go_modules: Mapping[str, str] | None = None,
) -> ImportGraph:
    """The graph of `paths` (every file of the codebase), given each parsed file's
    (grammar name, imports). `go_modules` maps a go.mod's folder ("" at the top) to its
    module path."""
    resolver = _Resolver(paths, go_modules or {})
    edges: dict[str, list[str]] = {}
    external: Counter[str] = Counter()
    stdlib: Counter[str] = Counter()
    for path, (language, found) in imports.items():
        targets: set[str] = set()
        packages: set[str] = set()
        standard: set[str] = set()
        for item in found:
            resolved, package, is_std = resolver.resolve(path, language, item)
            targets.update(t for t in resolved if t != path)
            if not resolved and package:
                (standard if is_std else packages).add(package)
        if targets:
            edges[path] = sorted(targets)
        external.update(packages)
        stdlib.update(standard)
    return ImportGraph(edges, _by_count(external), _by_count(stdlib))


def _by_count(counts: Counter[str]) -> dict[str, int]:
    """Most first, ties by name (the sets they were counted from have no stable order)."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class _Resolver:
    def __init__(self, paths: Sequence[str], go_modules: Mapping[str, str]) -> None:
        self.files = frozenset(paths)
        self.by_folder: dict[str, list[str]] = defaultdict(list)
        for path in sorted(paths):
            self.by_folder[_folder(path)].append(path)
        self.python = python_modules(paths)
        self.java = _java_index(paths)
        self.go_modules = sorted(go_modules.items(), key=lambda kv: -len(kv[1]))

    def resolve(self, path: str, language: str, item: Import) -> tuple[list[str], str, bool]:
        """(files it names, else the external package and whether it is standard)."""
        if language == "python":
            return self._python(path, item)
        if language in ("javascript", "typescript", "tsx"):
            return self._js(path, item.module)
        if language == "go":
            return self._go(item.module)
        if language == "java":
            return self._java(item.module)
        if language == "rust":
            return self._rust(path, item.module)
        return [], "", False

    # Python -------------------------------------------------------------------------------

    def _python(self, path: str, item: Import) -> tuple[list[str], str, bool]:
        module = item.module
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            base = PurePosixPath(_folder(path) or ".")
            for _ in range(level - 1):
                base = base.parent
            rest = module[level:].replace(".", "/")
            folder = _join("" if base.as_posix() == "." else base.as_posix(), rest)
            found = [f for name in item.names if (f := self._py_file(_join(folder, name)))]
            own = self._py_file(folder) if rest else self._file(_join(folder, "__init__.py"))
            if not found and own:
                found = [own]
            return found, "", False
        found = [f for name in item.names if (f := self._py_module(path, f"{module}.{name}"))]
        if not found:
            parts = module.split(".")
            for n in range(len(parts), 0, -1):
                hit = self._py_module(path, ".".join(parts[:n]))
                if hit:
                    found = [hit]
                    break
        top = module.split(".")[0]
        return found, top, top in sys.stdlib_module_names

    def _py_module(self, path: str, name: str) -> str | None:
        folder = _folder(path)
        beside = self._py_file(_join(folder, name.replace(".", "/")))
        if beside and _join(folder, "__init__.py") not in self.files:
            return beside  # a script's sibling: the script's folder is on sys.path
        if name in self.python:
            return self.python[name]
        return beside or self._py_file(name.replace(".", "/"))

    def _py_file(self, stem: str) -> str | None:
        for candidate in (f"{stem}.py", f"{stem}/__init__.py", f"{stem}.pyi"):
            if candidate in self.files:
                return candidate
        return None

    def _file(self, path: str) -> str | None:
        return path if path in self.files else None

    # JavaScript / TypeScript --------------------------------------------------------------

    def _js(self, path: str, spec: str) -> tuple[list[str], str, bool]:
        spec = spec.split("?")[0]
        if spec.startswith("."):
            base = _join(_folder(path), spec)
            hit = self._js_file(base)
            return ([hit] if hit else []), "", False
        if spec.startswith(("@/", "~/")):
            for root in ("src", ""):
                hit = self._js_file(_join(root, spec[2:]))
                if hit:
                    return [hit], "", False
        if spec.startswith("node:"):
            return [], spec[5:].split("/")[0], True
        parts = spec.split("/")
        package = "/".join(parts[:2]) if spec.startswith("@") else parts[0]
        return [], package, package in NODE_BUILTINS

    def _js_file(self, written: str) -> str | None:
        base = _normalize(written)
        if base is None:
            return None
        candidates = [base]
        suffix = PurePosixPath(base).suffix
        if suffix in (".js", ".jsx", ".mjs", ".cjs"):  # TypeScript's ESM spelling of a .ts file
            trimmed = base[: -len(suffix)]
            candidates += [trimmed + ".ts", trimmed + ".tsx", trimmed + ".mts", trimmed + ".cts"]
        candidates += [base + ext for ext in JS_EXTENSIONS]
        candidates += [f"{base}/index{ext}" for ext in JS_EXTENSIONS]
        return next((c for c in candidates if c in self.files), None)

    # Go -----------------------------------------------------------------------------------

    def _go(self, spec: str) -> tuple[list[str], str, bool]:
        for folder, module in self.go_modules:
            if spec == module or spec.startswith(module + "/"):
                package = _join(folder, spec[len(module) + 1 :])
                found = [
                    f
                    for f in self.by_folder.get(package, [])
                    if f.endswith(".go") and not f.endswith("_test.go")
                ]
                return found[:MAX_PACKAGE_EDGES], "", False
        first = spec.split("/")[0]
        if "." not in first:
            return [], first, True
        return [], "/".join(spec.split("/")[:3]), False

    # Java ---------------------------------------------------------------------------------

    def _java(self, spec: str) -> tuple[list[str], str, bool]:
        parts = spec.split(".")
        if parts[-1] == "*":
            folder_key = ".".join(parts[:-1])
            found = self.java.get(folder_key + ".*", [])
            if not found:  # `import a.b.C.*` takes C's nested classes
                found = self.java.get(folder_key, [])
            if found:
                return found[:MAX_PACKAGE_EDGES], "", False
        else:
            for n in range(len(parts), 1, -1):  # `a.b.C.method` (static) or `a.b.C.Inner`
                found = self.java.get(".".join(parts[:n]), [])
                if found:
                    return found[:1], "", False
        standard = parts[0] in ("java", "javax", "jdk", "sun")
        return [], ".".join(parts[:2]), standard

    # Rust ---------------------------------------------------------------------------------

    def _rust(self, path: str, spec: str) -> tuple[list[str], str, bool]:
        if spec.startswith("mod:"):
            hit = self._rust_module(self._rust_module_dir(path), [spec[4:]])
            return ([hit] if hit else []), "", False
        parts = [p for p in spec.split("{")[0].split("::") if p]
        if not parts:
            return [], "", False
        head = parts[0]
        if head == "crate":
            base = self._rust_crate_root(path)
        elif head == "self":
            base = self._rust_module_dir(path)
        elif head == "super":
            base = PurePosixPath(self._rust_module_dir(path)).parent.as_posix()
            base = "" if base == "." else base
        else:
            return [], head, head in RUST_STD
        names = [p for p in parts[1:] if p not in ("self", "super", "*")]
        hit = self._rust_module(base, names)
        return ([hit] if hit else []), "", False

    def _rust_module(self, base: str, names: list[str]) -> str | None:
        for n in range(len(names), 0, -1):
            stem = _join(base, "/".join(names[:n]))
            for candidate in (f"{stem}.rs", f"{stem}/mod.rs"):
                if candidate in self.files:
                    return candidate
        return None

    def _rust_module_dir(self, path: str) -> str:
        """The folder a file's own submodules live in."""
        pure = PurePosixPath(path)
        if pure.name in ("lib.rs", "main.rs", "mod.rs"):
            return _folder(path)
        return _join(_folder(path), pure.stem)

    def _rust_crate_root(self, path: str) -> str:
        folder = PurePosixPath(_folder(path))
        while True:
            key = "" if folder.as_posix() == "." else folder.as_posix()
            if _join(key, "lib.rs") in self.files or _join(key, "main.rs") in self.files:
                return key
            if key == "":
                return _folder(path)
            folder = folder.parent


def python_modules(paths: Iterable[str]) -> dict[str, str]:
    """Dotted module name → file, each name starting at the folder above its outermost
    package. Shallower files win a name two files share (the project's own over a copy)."""
    python = sorted(
        (p for p in paths if p.endswith((".py", ".pyi"))),
        key=lambda p: (p.count("/"), p.endswith(".pyi"), p),
    )
    packages = {_folder(p) for p in python if PurePosixPath(p).name == "__init__.py"}
    modules: dict[str, str] = {}
    for path in python:
        parts = path.split("/")
        top = len(parts) - 1
        while top > 0 and "/".join(parts[:top]) in packages:
            top -= 1
        names = parts[top:]
        names[-1] = PurePosixPath(names[-1]).stem
        if names[-1] == "__init__":
            names.pop()
        if names:
            modules.setdefault(".".join(names), path)
    return modules


def _java_index(paths: Iterable[str]) -> dict[str, list[str]]:
    """Dotted suffix of a .java file (`b.C`, `a.b.C`) → files; `a.b.*` → the folder's files."""
    index: dict[str, list[str]] = defaultdict(list)
    for path in sorted(p for p in paths if p.endswith(".java")):
        parts = path[: -len(".java")].split("/")
        for n in range(len(parts)):
            index[".".join(parts[n:])].append(path)
        for n in range(len(parts) - 1):
            index[".".join(parts[n:-1]) + ".*"].append(path)
    return dict(index)


def _folder(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent


def _join(folder: str, rest: str) -> str:
    if not folder:
        return rest
    if not rest:
        return folder
    return f"{folder}/{rest}"


def _normalize(path: str) -> str | None:
    """`a/./b/../c` → `a/c`; None when it climbs above the top."""
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                return None
            out.pop()
        else:
            out.append(part)
    return "/".join(out)
