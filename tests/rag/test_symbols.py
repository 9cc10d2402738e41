from pathlib import Path

import pytest

from rag import symbols
from rag.symbols import Definition, Import, extract

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "profile"


def read(path: str) -> str:
    return (FIXTURES / path).read_text()


def defs(result):
    return {(d.qualified_name, d.kind, d.start_line, d.end_line) for d in result.definitions}


def test_it_reads_python_definitions_with_their_kind_container_and_lines():
    result = extract("shop/models.py", read("shop/shop/models.py"), "python")
    assert defs(result) == {
        ("TAX_RATE", "constant", 5, 5),
        ("Cart", "class", 8, 19),
        ("Cart.__str__", "method", 11, 12),
        ("Cart.total", "method", 14, 15),
        ("Cart.empty", "method", 17, 19),  # the decorator is part of it
        ("CartItem", "class", 22, 27),
        ("CartItem.__str__", "method", 26, 27),
    }


def test_a_nested_function_is_a_function_inside_its_container():
    text = "def outer():\n    def inner():\n        pass\n    return inner\n"
    result = extract("a.py", text, "python")
    assert defs(result) == {("outer", "function", 1, 4), ("outer.inner", "function", 2, 3)}


def test_it_keeps_references_by_name_and_line_but_not_the_definitions_own_names():
    result = extract("shop/api/handlers.py", read("shop/shop/api/handlers.py"), "python")
    refs = set(result.references)
    assert ("Cart", 3) in refs  # the import
    assert ("Cart", 8) in refs  # the use
    assert ("format_price", 9) in refs
    assert ("CartHandler", 6) not in refs  # its own definition
    assert ("get", 7) not in refs
    assert len(refs) == len(result.references)  # one per name and line


def test_comments_and_strings_are_no_references():
    text = '# Cart is mentioned here\nx = "Cart"\ny = Cart\n'
    result = extract("a.py", text, "python")
    assert [r for r in result.references if r[0] == "Cart"] == [("Cart", 3)]


def test_it_reads_python_imports_absolute_relative_and_aliased():
    text = "import os, a.b as c\nfrom ..models import Cart as C, Item\nfrom . import utils\n"
    assert extract("shop/x.py", text, "python").imports == [
        Import("os", 1),
        Import("a.b", 1),
        Import("..models", 2, ("Cart", "Item")),
        Import(".", 3, ("utils",)),
    ]


def test_it_reads_typescript_definitions_and_imports():
    result = extract("src/app.ts", read("webapp/src/app.ts"), "typescript")
    assert defs(result) == {
        ("Shop", "class", 7, 11),
        ("Shop.total", "method", 8, 10),
        ("app", "variable", 13, 13),  # `export const app = express();`
    }
    assert [i.module for i in result.imports] == [
        "express",
        "node:fs",
        "path",
        "./components",
        "./util.js",
    ]
    util = extract("src/util.ts", read("webapp/src/util.ts"), "typescript")
    assert {(d.name, d.kind) for d in util.definitions} == {
        ("formatPrice", "function"),
        ("sumPrices", "function"),
        ("Priced", "interface"),
        ("Currency", "type"),
    }
    assert next(d for d in util.definitions if d.name == "formatPrice").start_line == 1


def test_tsx_files_use_the_tsx_grammar():
    result = extract(
        "src/components/Button.tsx", read("webapp/src/components/Button.tsx"), "typescript"
    )
    assert result.language == "tsx"
    assert [(d.name, d.kind, d.start_line, d.end_line) for d in result.definitions] == [
        ("Button", "function", 4, 6)
    ]
    assert ("formatPrice", 5) in result.references


def test_it_reads_javascript_requires():
    result = extract("lib/server.js", read("webapp/lib/server.js"), "javascript")
    assert result.imports == [Import("../src/app", 1)]
    assert [(d.name, d.kind) for d in result.definitions] == [("listen", "function")]


def test_it_reads_go_types_methods_with_their_receiver_and_imports():
    result = extract("internal/store/store.go", read("gosvc/internal/store/store.go"), "go")
    assert defs(result) == {
        ("Store", "struct", 4, 6),
        ("Getter", "interface", 8, 10),
        ("New", "function", 12, 14),
        ("Store.Get", "method", 16, 18),
    }
    main = extract("main.go", read("gosvc/main.go"), "go")
    assert [i.module for i in main.imports] == [
        "fmt",
        "example.com/gosvc/internal/store",
        "github.com/gin-gonic/gin",
    ]


def test_it_reads_java_classes_constructors_methods_and_imports():
    result = extract("Cart.java", read("javaapp/src/main/java/com/acme/cart/Cart.java"), "java")
    assert defs(result) == {
        ("Cart", "class", 5, 11),
        ("Cart.Cart", "constructor", 6, 6),
        ("Cart.total", "method", 8, 10),
    }
    app = extract("App.java", read("javaapp/src/main/java/com/acme/App.java"), "java")
    assert [i.module for i in app.imports] == ["com.acme.cart.Cart", "java.util.List"]


def test_it_reads_rust_items_impl_methods_and_modules():
    result = extract("src/cli.rs", read("rustcli/src/cli.rs"), "rust")
    assert ("Args", "struct", 1, 4) in defs(result)  # #[derive] included
    assert ("Args.parse_args", "method", 7, 9) in defs(result)
    assert ("tests", "module", 12, 18) in defs(result)
    assert ("tests.it_parses", "function", 14, 17) in defs(result)
    main = extract("src/main.rs", read("rustcli/src/main.rs"), "rust")
    assert [i.module for i in main.imports] == ["mod:cli", "crate::cli::Args"]


@pytest.mark.parametrize(
    ("path", "language"),
    [("README.md", "markdown"), ("app.rb", "ruby"), ("style.css", "css"), ("noext", "")],
)
def test_a_language_without_a_grammar_gets_no_symbols_and_no_error(path, language):
    assert extract(path, "anything at all {{{", language) is None
    assert not symbols.supported(path, language)


def test_a_file_over_the_size_cap_is_not_parsed():
    big = "x = 1\n" * (symbols.MAX_BYTES // 6 + 1)
    assert extract("big.py", big, "python") is None
    assert extract("ok.py", "x = 1\n", "python") is not None


def test_broken_code_still_yields_what_parses():
    text = "def good():\n    pass\n\ndef broken(:\n    ???\n\nclass Fine:\n    pass\n"
    result = extract("broken.py", text, "python")
    names = {d.name for d in result.definitions}
    assert {"good", "Fine"} <= names


def test_undecodable_text_does_not_raise():
    assert extract("odd.py", "x = '\udcff'\ndef f():\n    pass\n", "python").definitions == [
        Definition("x", "variable", 1, 1),
        Definition("f", "function", 2, 3),
    ]


def test_a_declaration_group_does_not_stretch_its_members_lines():
    go = extract("a.go", "package a\ntype (\n\tA struct{}\n\tB int\n)\n", "go")
    assert [(d.name, d.start_line) for d in go.definitions] == [("A", 3), ("B", 4)]
    ts_text = "export const a = () => 1,\n  b = () => 2;\nexport const c = () => 3;\n"
    ts_defs = extract("a.ts", ts_text, "typescript").definitions
    assert [(d.name, d.start_line, d.end_line) for d in ts_defs] == [
        ("a", 1, 1),
        ("b", 2, 2),
        ("c", 3, 3),
    ]


COMPAT = """import sys
__all__ = ["text_type"]
PY2 = sys.version_info[0] == 2
if PY2:
    text_type = unicode
else:
    text_type = str
try:
    import simplejson as json
except ImportError:
    json = None
a = b = 1
x, (y, *rest) = f()
FOO: int = 3
obj.attr = 4


class Base:
    field = 1

    def run(self):
        local = 2


def helper():
    inner = 3
"""


def test_module_level_names_are_definitions_in_branches_and_unpacking_too():
    result = extract("pkg/compat.py", COMPAT, "python")
    data = sorted(
        (d.name, d.kind, d.start_line)
        for d in result.definitions
        if d.kind in ("variable", "constant")
    )
    assert data == [
        ("FOO", "constant", 14),
        ("PY2", "constant", 3),
        ("a", "variable", 12),
        ("b", "variable", 12),
        ("json", "variable", 11),
        ("rest", "variable", 13),
        ("text_type", "variable", 5),
        ("text_type", "variable", 7),
        ("x", "variable", 13),
        ("y", "variable", 13),
    ]
    # `__all__`, an attribute, a class attribute and function locals define nothing here.
    names = {d.name for d in result.definitions}
    assert not names & {"__all__", "attr", "field", "local", "inner"}
    # A module-level name's own spelling is no reference to it.
    assert ("text_type", 7) not in result.references


def test_a_class_keeps_its_bases_as_written():
    text = "class Session(mixins.Closing, Base, Generic[T], metaclass=Meta):\n    pass\n"
    assert extract("a.py", text, "python").definitions[0].bases == (
        "mixins.Closing",
        "Base",
        "Generic",
    )
    ts_text = "export class A extends B<T> implements I {}\nclass C extends lib.D {}\n"
    assert [d.bases for d in extract("a.ts", ts_text, "typescript").definitions] == [
        ("B",),
        ("lib.D",),
    ]


def test_top_level_javascript_constants_are_definitions_and_functions_stay_functions():
    text = "export const API_URL = '/api', load = () => 1;\nlet cache = {};\nfunction f() { const local = 1; }\n"
    found = {(d.name, d.kind) for d in extract("a.js", text, "javascript").definitions}
    assert found == {
        ("API_URL", "constant"),
        ("load", "function"),
        ("cache", "variable"),
        ("f", "function"),
    }
