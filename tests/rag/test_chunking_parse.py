"""Chunks cut at the definitions tree-sitter found (rag.symbols), as indexing makes them."""

from rag import profile, symbols
from rag.chunking import MAX_CHARS, MAX_LINES, chunk_file, embedding_text, split_lines
from rag.parsers.repomix import ParsedFile
from rag.pipeline import prepare


def chunks_of(path: str, text: str, language: str):
    found = symbols.extract(path, text, language)
    assert found is not None
    return chunk_file(text, language, found.definitions)


def method(name: str, lines: int = 6) -> str:
    body = "".join(f"        total += self.price * {n}  # adds up item number {n}\n"
                   for n in range(lines))  # fmt: skip
    return f"    def {name}(self):\n        total = 0\n{body}        return total\n\n"


BIG_CLASS = (
    "import os\n\n\n"
    "class Cart:\n"
    '    """A shopping cart."""\n\n'
    "    currency = 'EUR'\n\n"
    + method("add")
    + method("total")
    + method("empty")
    + method("checkout")
    + "\n\ndef helper():\n    return 1\n"
)


def assert_true_lines(text: str, chunks) -> None:
    lines = split_lines(text)
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_a_class_larger_than_a_chunk_is_cut_at_its_methods():
    assert len(BIG_CLASS) > MAX_CHARS
    chunks = chunks_of("cart.py", BIG_CLASS, "python")
    assert_true_lines(BIG_CLASS, chunks)
    lines = split_lines(BIG_CLASS)
    by_symbol = {s: c for c in chunks for s in c.symbols}
    for name in ("add", "total", "empty", "checkout"):
        chunk = by_symbol[name]
        # Each method is whole in one chunk, and no chunk starts inside a method's body.
        assert f"def {name}(self):" in chunk.text and "return total" in chunk.text
        assert lines[chunk.start_line - 1].startswith(("class ", "    def ", "import ", "\n"))
    assert all(len(c.text) <= MAX_CHARS for c in chunks)


def test_a_method_chunk_names_its_class_in_its_context_and_in_what_is_embedded():
    chunks = chunks_of("cart.py", BIG_CLASS, "python")
    header = next(c for c in chunks if "Cart" in c.symbols)
    assert header.text.startswith("class Cart:") and header.context == ""
    for name in ("total", "empty", "checkout"):
        chunk = next(c for c in chunks if name in c.symbols)
        assert chunk.context == f"Cart.{name}"
        assert embedding_text("cart.py", chunk).startswith(f"cart.py (Cart.{name})\n")
    # The code after the class is not merged into the class's last method.
    helper = next(c for c in chunks if "helper" in c.symbols)
    assert helper.text.startswith("def helper():") and helper.context == ""


def test_small_methods_merge_into_one_chunk_labelled_with_their_class():
    text = "class Cart:\n" + method("add", 18) + method("a", 1) + method("b", 1) + method("c", 18)
    chunks = chunks_of("cart.py", text, "python")
    merged = next(c for c in chunks if "a" in c.symbols)
    assert merged.symbols == ["a", "b"] and merged.context == "Cart"


def test_a_method_too_large_to_merge_is_labelled_class_dot_method():
    text = "class Cart:\n" + method("add", 20) + method("total", 20)
    chunks = chunks_of("cart.py", text, "python")
    assert_true_lines(text, chunks)
    total = [c for c in chunks if "total" in c.symbols or c.context == "Cart.total"]
    assert total and all(c.context == "Cart.total" for c in total)
    assert embedding_text("cart.py", total[0]).startswith("cart.py (Cart.total)\n")


def test_a_definition_with_no_definitions_inside_falls_back_to_windows():
    body = "".join(f"    x_{n} = compute({n}, 'padding padding padding')\n" for n in range(80))
    text = f"def run():\n{body}"
    chunks = chunks_of("run.py", text, "python")
    assert_true_lines(text, chunks)
    assert len(chunks) > 2
    assert all(len(c.text) <= MAX_CHARS and c.end_line - c.start_line < MAX_LINES for c in chunks)
    assert chunks[0].symbols == ["run"] and all(c.context == "run" for c in chunks[1:])


def test_a_decorated_function_keeps_its_decorators_and_comment_in_its_chunk():
    filler = "".join(
        f"    step_{n} = prepare({n}, 'some text to make it long')\n" for n in range(25)
    )
    text = (
        f"def first():\n{filler}    return 1\n\n\n"
        "# Cached: the lookup is slow.\n"
        "@functools.cache\n"
        "@other.decorator(with_args=True)\n"
        f"def second():\n{filler}    return 2\n"
    )
    chunks = chunks_of("mod.py", text, "python")
    assert_true_lines(text, chunks)
    second = next(c for c in chunks if "second" in c.symbols)
    assert second.text.startswith("# Cached: the lookup is slow.\n@functools.cache\n@other.")
    assert "first" not in second.symbols


def test_a_java_class_is_cut_at_its_methods():
    def java_method(name: str) -> str:
        body = "".join(f"        sum += items.get({n}).price() * {n}; // item {n}\n"
                       for n in range(8))  # fmt: skip
        return (f"    /** Adds up {name}. */\n    public int {name}() {{\n        int sum = 0;\n"
                f"{body}        return sum;\n    }}\n\n")  # fmt: skip

    text = (
        "package shop;\n\nimport java.util.List;\n\n"
        "public class Cart {\n    private List<Item> items;\n\n"
        + java_method("total")
        + java_method("discount")
        + java_method("tax")
        + "}\n"
    )
    chunks = chunks_of("shop/Cart.java", text, "java")
    assert_true_lines(text, chunks)
    assert len(chunks) >= 3
    lines = split_lines(text)
    for name in ("total", "discount", "tax"):
        chunk = next(c for c in chunks if name in c.symbols)
        assert f"public int {name}()" in chunk.text and "return sum;" in chunk.text
        assert lines[chunk.start_line - 1].strip().startswith(("/**", "public class"))
    assert any(c.context.startswith("Cart.") for c in chunks)


def test_go_methods_are_labelled_with_their_receiver_type():
    body = "".join(f"\ttotal += s.items[{n}].Price * {n} // item number {n}\n" for n in range(30))
    text = (
        f"package shop\n\nfunc (s *Store) Total() int {{\n\ttotal := 0\n{body}\treturn total\n}}\n"
    )
    chunks = chunks_of("shop/store.go", text, "go")
    assert_true_lines(text, chunks)
    assert len(chunks) > 1
    assert all(c.context == "Store.Total" for c in chunks[1:])


def test_a_file_without_a_grammar_is_windowed_as_before():
    text = "".join(f"line {n} of a plain text file with some words in it\n" for n in range(120))
    assert symbols.extract("notes.txt", text, "text") is None
    chunks = chunk_file(text, "text")
    assert_true_lines(text, chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 120
    assert all(c.symbols == [] and c.context == "" for c in chunks)
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert 0 < before.end_line - after.start_line + 1 <= 3


def test_without_definitions_source_is_windowed_and_markdown_still_follows_headings():
    chunks = chunk_file(BIG_CLASS, "python")
    assert_true_lines(BIG_CLASS, chunks)
    assert all(c.symbols == [] for c in chunks)
    markdown = "# Title\n" + "text\n" * 60 + "## Usage\nrun it\n"
    assert chunk_file(markdown, "markdown")[-1].symbols == ["Usage"]


def test_indexing_parses_each_file_once_for_chunks_and_profile(monkeypatch):
    calls = []
    real = symbols.extract

    def counting(path, text, language):
        calls.append(path)
        return real(path, text, language)

    monkeypatch.setattr(symbols, "extract", counting)
    records = prepare([ParsedFile("shop/cart.py", BIG_CLASS), ParsedFile("README.md", "# Hi\n")])
    cart = records[0]
    assert cart.symbols is not None
    assert {"add", "checkout"} <= {s for c in cart.chunks for s in c.symbols}
    analysis = profile.analyze(records)
    assert "Cart.checkout" in {
        d.qualified_name for d in analysis.symbols["shop/cart.py"].definitions
    }
    assert calls.count("shop/cart.py") == 1
