"""Definitions, references and imports of one source file, read with tree-sitter.

Plain functions, no Django. Each supported language is one row of `GRAMMARS`: the grammar
(an official tree-sitter wheel, loaded on first use), one query that captures definitions
(`@name` and `@def.<kind>`), one that captures the identifiers a file uses, and one that
captures its imports. Queries run in C; Python only sees the captured nodes, which keeps a
40 000-file pack to a minute or so. A file in any other language gets no symbols, never an
error: `extract` returns None.

What comes out is syntax, not types: `find_references("save")` finds every `save` a file
names (calls, attributes, imports), not only the ones that mean one particular `save`.
"""

from __future__ import annotations

import ast
import logging
import textwrap
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from pathlib import PurePosixPath
from typing import Any

import tree_sitter as ts

log = logging.getLogger(__name__)

MAX_BYTES = 1024 * 1024
"""Files larger than this are not parsed (they are data, generated or minified)."""


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str
    """class, function, method, constructor, interface, type, enum, struct, trait, module,
    macro, constant or variable."""
    start_line: int
    end_line: int
    """1-based and inclusive, decorators and `export` included."""
    container: str = ""
    """The definitions it sits in, outermost first, joined by "." (`Cart`, `Outer.Inner`)."""
    bases: tuple[str, ...] = ()
    """A class's bases as written (`Base`, `mixins.Timestamped`): Python's and JS/TS's
    `extends`; what `Session.close` follows to the mixin defining `close`."""

    @property
    def qualified_name(self) -> str:
        return f"{self.container}.{self.name}" if self.container else self.name


@dataclass(frozen=True)
class Import:
    module: str
    """As written: `os.path`, `..models` (Python, dots for the level), `./util` (JS/TS),
    `github.com/x/y` (Go), `com.acme.Cart` / `com.acme.*` (Java), `crate::cart` or a
    `mod cart;` as `mod:cart` (Rust)."""
    line: int
    names: tuple[str, ...] = ()
    """What a Python `from … import a, b` takes: each may be a submodule."""


@dataclass
class FileSymbols:
    language: str
    definitions: list[Definition] = field(default_factory=list)
    references: list[tuple[str, int]] = field(default_factory=list)
    """(name, line) of every identifier the file uses outside its definitions' names, one per
    name and line, in order."""
    imports: list[Import] = field(default_factory=list)


@dataclass(frozen=True)
class Grammar:
    module: str
    """The wheel's module (`tree_sitter_python`)."""
    function: str
    """Its function that returns the language (`language`, `language_tsx`)."""
    definitions: str
    references: str
    imports: str
    wrappers: frozenset[str] = frozenset()
    """Parent nodes a definition's lines extend to (decorators, `export`, `const … =`)."""
    leading: frozenset[str] = frozenset()
    """Preceding sibling nodes that belong to the definition (Rust's `#[derive(…)]`)."""
    containers: dict[str, str] = field(default_factory=dict)
    """Node types that give their definitions a container, and the field holding its name."""


_PY = Grammar(
    "tree_sitter_python",
    "language",
    definitions="""
        (class_definition name: (identifier) @name) @def.class
        (function_definition name: (identifier) @name) @def.function
        (module (expression_statement (assignment) @module.assign))
        (module [(if_statement) (try_statement) (with_statement)] @module.block)
    """,
    references="(identifier) @ref",
    imports="(import_statement) @import (import_from_statement) @from",
    wrappers=frozenset({"decorated_definition"}),
    containers={"class_definition": "name", "function_definition": "name"},
)
_JS_DEFINITIONS = """
    (class_declaration name: (_) @name) @def.class
    (function_declaration name: (identifier) @name) @def.function
    (generator_function_declaration name: (identifier) @name) @def.function
    (method_definition name: (_) @name) @def.method
    (variable_declarator name: (identifier) @name
        value: [(arrow_function) (function_expression) (generator_function)]) @def.function
    (program (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable))
    (program (variable_declaration (variable_declarator name: (identifier) @name) @def.variable))
    (program (export_statement
        declaration: (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable)))
"""
_JS_IMPORTS = """
    (import_statement source: (string) @source)
    (export_statement source: (string) @source)
    ((call_expression function: (identifier) @fn arguments: (arguments . (string) @source))
        (#eq? @fn "require"))
    (call_expression function: (import) arguments: (arguments . (string) @source))
"""
_JS_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration"})
_JS_CONTAINERS = {"class_declaration": "name", "class": "name", "function_declaration": "name",
                  "method_definition": "name", "variable_declarator": "name"}  # fmt: skip
_TS_DEFINITIONS = (
    _JS_DEFINITIONS
    + """
    (abstract_class_declaration name: (type_identifier) @name) @def.class
    (interface_declaration name: (type_identifier) @name) @def.interface
    (type_alias_declaration name: (type_identifier) @name) @def.type
    (enum_declaration name: (identifier) @name) @def.enum
    (abstract_method_signature name: (_) @name) @def.method
    (internal_module name: (_) @name) @def.module
"""
)
_TS_REFERENCES = (
    "[(identifier) (property_identifier) (shorthand_property_identifier) (type_identifier)] @ref"
)
_TS_CONTAINERS = _JS_CONTAINERS | {
    "abstract_class_declaration": "name",
    "interface_declaration": "name",
    "internal_module": "name",
}
_JS = Grammar(
    "tree_sitter_javascript",
    "language",
    definitions=_JS_DEFINITIONS,
    references="[(identifier) (property_identifier) (shorthand_property_identifier)] @ref",
    imports=_JS_IMPORTS,
    wrappers=_JS_WRAPPERS,
    containers=_JS_CONTAINERS,
)
_TS = Grammar(
    "tree_sitter_typescript",
    "language_typescript",
    definitions=_TS_DEFINITIONS,
    references=_TS_REFERENCES,
    imports=_JS_IMPORTS,
    wrappers=_JS_WRAPPERS,
    containers=_TS_CONTAINERS,
)
_TSX = Grammar(
    "tree_sitter_typescript",
    "language_tsx",
    definitions=_TS_DEFINITIONS,
    references=_TS_REFERENCES,
    imports=_JS_IMPORTS,
    wrappers=_JS_WRAPPERS,
    containers=_TS_CONTAINERS,
)
_GO = Grammar(
    "tree_sitter_go",
    "language",
    definitions="""
        (function_declaration name: (identifier) @name) @def.function
        (method_declaration name: (field_identifier) @name) @def.method
        (type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
        (type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
        (type_spec name: (type_identifier) @name) @def.type
        (source_file (const_declaration (const_spec name: (identifier) @name) @def.constant))
        (source_file (var_declaration (var_spec name: (identifier) @name) @def.variable))
    """,
    references="[(identifier) (field_identifier) (type_identifier)] @ref",
    imports="(import_spec path: (interpreted_string_literal) @source)",
    wrappers=frozenset({"type_declaration"}),
)
_JAVA = Grammar(
    "tree_sitter_java",
    "language",
    definitions="""
        (class_declaration name: (identifier) @name) @def.class
        (record_declaration name: (identifier) @name) @def.class
        (interface_declaration name: (identifier) @name) @def.interface
        (annotation_type_declaration name: (identifier) @name) @def.interface
        (enum_declaration name: (identifier) @name) @def.enum
        (method_declaration name: (identifier) @name) @def.method
        (constructor_declaration name: (identifier) @name) @def.constructor
    """,
    references="[(identifier) (type_identifier)] @ref",
    imports="(import_declaration) @source",
    containers={
        "class_declaration": "name",
        "record_declaration": "name",
        "interface_declaration": "name",
        "enum_declaration": "name",
    },  # fmt: skip
)
_RUST = Grammar(
    "tree_sitter_rust",
    "language",
    definitions="""
        (struct_item name: (type_identifier) @name) @def.struct
        (enum_item name: (type_identifier) @name) @def.enum
        (union_item name: (type_identifier) @name) @def.struct
        (type_item name: (type_identifier) @name) @def.type
        (trait_item name: (type_identifier) @name) @def.trait
        (function_item name: (identifier) @name) @def.function
        (function_signature_item name: (identifier) @name) @def.function
        (mod_item name: (identifier) @name) @def.module
        (macro_definition name: (identifier) @name) @def.macro
        (const_item name: (identifier) @name) @def.constant
        (static_item name: (identifier) @name) @def.constant
    """,
    references="[(identifier) (type_identifier) (field_identifier)] @ref",
    imports="""
        (mod_item name: (identifier) @mod !body)
        (use_declaration argument: (_) @source)
    """,
    leading=frozenset({"attribute_item"}),
    containers={"impl_item": "type", "trait_item": "name", "mod_item": "name"},
)

GRAMMARS: dict[str, Grammar] = {
    "python": _PY,
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TSX,
    "go": _GO,
    "java": _JAVA,
    "rust": _RUST,
}
"""Grammar by language name (rag.languages names; `tsx` is chosen by suffix)."""

_METHOD_PARENTS = {
    "python": frozenset({"class_definition"}),
    "rust": frozenset({"impl_item", "trait_item"}),
}
"""A function directly inside one of these is a method."""


def grammar_name(path: str, language: str) -> str | None:
    """Which row of GRAMMARS parses `path` (of `language`), or None when none does."""
    if language == "typescript" and PurePosixPath(path).suffix.lower() == ".tsx":
        return "tsx"
    return language if language in GRAMMARS else None


def supported(path: str, language: str) -> bool:
    return grammar_name(path, language) is not None


@dataclass
class _Compiled:
    language: ts.Language
    structure: ts.Query
    """Definitions and imports in one query: each query is one walk of the tree."""
    references: ts.Query


_local = threading.local()


@cache
def _compiled(name: str) -> _Compiled:
    grammar = GRAMMARS[name]
    loader: Callable[[], Any] = getattr(import_module(grammar.module), grammar.function)
    language = ts.Language(loader())
    return _Compiled(
        language,
        ts.Query(language, grammar.definitions + grammar.imports),
        ts.Query(language, grammar.references),
    )


def _parser(name: str) -> ts.Parser:
    # Parsers hold state: one per thread and grammar.
    parsers: dict[str, ts.Parser] = _local.__dict__.setdefault("parsers", {})
    if name not in parsers:
        parsers[name] = ts.Parser(_compiled(name).language)
    return parsers[name]


def extract(path: str, text: str, language: str) -> FileSymbols | None:
    """The symbols of one file, or None when its language has no grammar here or the file is
    too large to parse."""
    name = grammar_name(path, language)
    if name is None:
        return None
    data = text.encode("utf-8", "replace")
    if len(data) > MAX_BYTES:
        return None
    compiled = _compiled(name)
    root = _parser(name).parse(data).root_node
    grammar = GRAMMARS[name]
    result = FileSymbols(language=name)
    by_name: dict[int, Definition] = {}
    """One definition per name node: a `const f = () => …` is a function, not also a variable."""
    import_captures: dict[str, list[ts.Node]] = {}
    for _, captures in ts.QueryCursor(compiled.structure).matches(root):
        if any(key.startswith("def.") for key in captures):
            definition = _definition(name, grammar, captures)
            if definition is not None:
                _keep(by_name, *definition)
        elif "module.assign" in captures or "module.block" in captures:
            for node in [*captures.get("module.assign", []), *captures.get("module.block", [])]:
                for found in _module_names(node):
                    _keep(by_name, *found)
        else:
            for key, nodes in captures.items():
                import_captures.setdefault(key, []).extend(nodes)
    name_nodes = set(by_name)
    result.definitions = sorted(by_name.values(), key=lambda d: (d.start_line, -d.end_line))
    seen: set[tuple[str, int]] = set()
    for node in ts.QueryCursor(compiled.references).captures(root).get("ref", []):
        if node.start_byte in name_nodes:
            continue
        used = (_text(node), node.start_point.row + 1)
        if used not in seen:
            seen.add(used)
            result.references.append(used)
    result.references.sort(key=lambda item: item[1])
    result.imports = _imports(name, import_captures)
    return result


def parse_errors(path: str, language: str, lines: list[str]) -> list[int] | None:
    """The lines (1-based, of `lines`) where a piece of code does not parse, [] when it does,
    None when its language has no grammar here. The piece is dedented first: a method's code
    is indented inside its class. Python is parsed by Python too: tree-sitter's grammar
    recovers from an unexpected indent without an error node, so a method whose `def` line
    was replaced by two statements parsed (local-1.5b on the sketch bench)."""
    name = grammar_name(path, language)
    if name is None:
        return None
    text = textwrap.dedent("\n".join(lines))
    data = text.encode("utf-8", "replace")
    if len(data) > MAX_BYTES:
        return None
    root = _parser(name).parse(data).root_node
    found: set[int] = set()
    pending = [root] if root.has_error else []
    while pending:
        node = pending.pop()
        if node.is_error or node.is_missing:
            found.add(node.start_point.row + 1)
        elif node.has_error:
            pending.extend(node.children)
    if found:
        return sorted(found)
    if name == "python":
        # Also when tree-sitter flags an error it names no node of (pylint's
        # `return '. Add 'from __future__ …' as well'`, quotes unbalanced, on the grounding bench).
        return _python_errors(text)
    return [1] if root.has_error else []


def _python_errors(text: str) -> list[int]:
    """Where Python's own parser refuses `text` ([] when it parses)."""
    try:
        with warnings.catch_warnings():  # an invalid escape in a string is no parse error
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as exc:
        return [exc.lineno or 1]
    except (ValueError, RecursionError, MemoryError):  # a NUL byte; absurd nesting
        return []
    return []


def _definition(
    language: str, grammar: Grammar, captures: dict[str, list[ts.Node]]
) -> tuple[Definition, int] | None:
    """The definition a query match found, and the start byte of its name."""
    kind = next((key[4:] for key in captures if key.startswith("def.")), "")
    node = captures[f"def.{kind}"][0] if kind else None
    if node is None:
        return None
    name_node = captures["name"][0] if "name" in captures else node.child_by_field_name("name")
    if name_node is None:
        return None
    if kind == "type" and language == "go" and _go_named_struct_or_interface(node):
        return None  # matched again, with its finer kind
    container = _container(language, grammar, node)
    parents = _METHOD_PARENTS.get(language, frozenset())
    if kind == "function" and _enclosing(node, parents | frozenset(grammar.containers)) in parents:
        kind = "method"
    if kind == "variable" and _text(name_node).isupper():
        kind = "constant"
    bases = _bases(language, node) if kind == "class" else ()
    first, last = _first_line(node, grammar), _end_line(node)
    return Definition(_text(name_node), kind, first, last, container, bases), name_node.start_byte


_DATA_KINDS = frozenset({"variable", "constant"})


def _keep(by_name: dict[int, Definition], definition: Definition, name_start: int) -> None:
    """Record `definition` unless its name is known already with a finer kind than a
    variable's."""
    known = by_name.get(name_start)
    if known is None or (known.kind in _DATA_KINDS and definition.kind not in _DATA_KINDS):
        by_name[name_start] = definition


_MODULE_BRANCHES = frozenset({"if_statement", "elif_clause", "else_clause", "try_statement",
                              "except_clause", "except_group_clause", "finally_clause",
                              "with_statement", "block", "expression_statement"})  # fmt: skip
"""Where a Python module still defines its own names: a compatibility module's
`if PY2: text_type = unicode else: text_type = str`, `try: … except ImportError: …`."""
_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern"})
_NOT_DEFINITIONS = frozenset({"__all__"})
"""Module-level names that say something about the module rather than define a thing."""


def _module_names(node: ts.Node) -> list[tuple[Definition, int]]:
    """The names a module-level Python statement assigns (in its branches too, never inside a
    function or class), each with the start byte of its name."""
    found: list[tuple[Definition, int]] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "assignment":
            found.extend(_assigned(current))
        elif current.type in _MODULE_BRANCHES:
            stack.extend(current.named_children)
    return found


def _assigned(assignment: ts.Node) -> list[tuple[Definition, int]]:
    """`a = b = 1`, `x, (y, *z) = f()`, `FOO: int = 3`: one definition per name bound."""
    first, last = assignment.start_point.row + 1, _end_line(assignment)
    targets: list[ts.Node] = []
    current: ts.Node | None = assignment
    while current is not None and current.type == "assignment":
        left = current.child_by_field_name("left")
        stack = [left] if left is not None else []
        while stack:
            target = stack.pop()
            if target.type == "identifier":
                targets.append(target)
            elif target.type in _PATTERNS:
                stack.extend(target.named_children)
        current = current.child_by_field_name("right")
    found = []
    for target in targets:
        name = _text(target)
        if name not in _NOT_DEFINITIONS:
            kind = "constant" if name.isupper() else "variable"
            found.append((Definition(name, kind, first, last), target.start_byte))
    return found


def _bases(language: str, node: ts.Node) -> tuple[str, ...]:
    """A class's bases as written; keyword arguments (`metaclass=…`), `implements` and
    generic arguments left out."""
    written: list[ts.Node] = []
    if language == "python":
        arguments = node.child_by_field_name("superclasses")
        written.extend(arguments.named_children if arguments is not None else [])
    elif language == "java":
        superclass = node.child_by_field_name("superclass")
        written.extend(superclass.named_children if superclass is not None else [])
    else:
        for heritage in (c for c in node.named_children if c.type == "class_heritage"):
            for child in heritage.named_children:
                if child.type == "extends_clause":
                    value = child.child_by_field_name("value")
                    written.extend([value] if value is not None else [])
                elif child.type != "implements_clause":
                    written.append(child)
    names = [_text(_plain(n)) for n in written if n.type != "keyword_argument"]
    return tuple(n for n in names if n and all(p.isidentifier() for p in n.split(".")))


def _plain(node: ts.Node) -> ts.Node:
    """`Generic[T]` → `Generic`, `Base<T>` → `Base`."""
    if node.type in ("subscript", "generic_type"):
        inner = node.child_by_field_name("value") or node.named_child(0)
        return inner if inner is not None else node
    return node


def _go_named_struct_or_interface(type_spec: ts.Node) -> bool:
    value = type_spec.child_by_field_name("type")
    return value is not None and value.type in ("struct_type", "interface_type")


def _first_line(node: ts.Node, grammar: Grammar) -> int:
    """The first line of a definition with its decorators, `export` and attributes; a
    `const a = …, b = …` or a Go `type ( … )` group is not stretched to its first line."""
    start = node
    while (
        (parent := start.parent) is not None
        and parent.type in grammar.wrappers
        and sum(1 for c in parent.named_children if c.type == start.type) == 1
    ):
        start = parent
    first = start.start_point.row + 1
    sibling = start.prev_named_sibling
    while sibling is not None and sibling.type in grammar.leading:
        first = sibling.start_point.row + 1
        sibling = sibling.prev_named_sibling
    return first


def _enclosing(node: ts.Node, types: frozenset[str]) -> str:
    parent = node.parent
    while parent is not None:
        if parent.type in types:
            return parent.type
        parent = parent.parent
    return ""


def _container(language: str, grammar: Grammar, node: ts.Node) -> str:
    names: list[str] = []
    if language == "go" and node.type == "method_declaration":
        receiver = node.child_by_field_name("receiver")
        if receiver is not None:
            names.append(_receiver_type(receiver))
    parent = node.parent
    while parent is not None:
        field_name = grammar.containers.get(parent.type)
        if field_name:
            named = parent.child_by_field_name(field_name)
            if named is not None:
                names.append(_base_type(named))
        parent = parent.parent
    return ".".join(reversed([n for n in names if n]))


def _receiver_type(receiver: ts.Node) -> str:
    """`(s *Store)` → `Store`."""
    stack = [receiver]
    while stack:
        node = stack.pop()
        if node.type == "type_identifier":
            return _text(node)
        stack.extend(reversed(node.named_children))
    return ""


def _base_type(node: ts.Node) -> str:
    """A Rust `impl<T> Store<T>` names `Store`."""
    if node.type in ("generic_type", "scoped_type_identifier"):
        inner = node.child_by_field_name("type") or node.child_by_field_name("name")
        if inner is not None:
            return _text(inner)
    return _text(node)


def _imports(language: str, captures: dict[str, list[ts.Node]]) -> list[Import]:
    found: list[Import] = []
    for node in captures.get("import", []):  # Python `import a.b, c as d`
        for child in node.children_by_field_name("name"):
            module = child.child_by_field_name("name") if child.type == "aliased_import" else child
            if module is not None:
                found.append(Import(_text(module), node.start_point.row + 1))
    for node in captures.get("from", []):  # Python `from ..a import b, c`
        module = node.child_by_field_name("module_name")
        names = []
        for child in node.children_by_field_name("name"):
            named = child.child_by_field_name("name") if child.type == "aliased_import" else child
            if named is not None:
                names.append(_text(named))
        if module is not None:
            found.append(Import(_text(module).replace(" ", ""), node.start_point.row + 1,
                                tuple(names)))  # fmt: skip
    for node in captures.get("source", []):
        line = node.start_point.row + 1
        if language == "java":
            spec = _text(node).removeprefix("import").strip().removesuffix(";").strip()
            found.append(Import(spec.removeprefix("static ").replace(" ", ""), line))
        elif language == "rust":
            found.append(Import(_text(node).replace(" ", "").replace("\n", ""), line))
        else:
            found.append(Import(_text(node)[1:-1].strip(), line))
    for node in captures.get("mod", []):  # Rust `mod cart;`
        found.append(Import(f"mod:{_text(node)}", node.start_point.row + 1))
    found.sort(key=lambda item: item.line)
    return found


def _text(node: ts.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _end_line(node: ts.Node) -> int:
    end = node.end_point
    return end.row + 1 if end.column > 0 or end.row == node.start_point.row else end.row
