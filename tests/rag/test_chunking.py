from rag.chunking import MAX_CHARS, chunk_file, embedding_text, split_lines
from rag.languages import language_for
from rag.parsers.repomix import parse_repomix
from rag.symbols import extract


def sample_files(pack_bytes):
    return {f.path: f.content for f in parse_repomix(pack_bytes("sample.json"))}


def chunk_parsed(path, content):
    """Chunks as indexing makes them: cut at the definitions tree-sitter found."""
    language = language_for(path)
    found = extract(path, content, language)
    return chunk_file(content, language, found.definitions if found else None)


def test_it_gives_true_one_based_line_numbers(pack_bytes):
    for path, content in sample_files(pack_bytes).items():
        lines = split_lines(content)
        for chunk in chunk_parsed(path, content):
            assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_it_starts_chunks_at_top_level_definitions(pack_bytes):
    content = sample_files(pack_bytes)["todo/api.py"]
    chunks = chunk_parsed("todo/api.py", content)
    lines = split_lines(content)
    for chunk in chunks[1:]:
        assert lines[chunk.start_line - 1].startswith(("def ", "class ", "@", "if __name__"))
    by_symbol = {s: c for c in chunks for s in c.symbols}
    assert "\ndef login(environ, start_response):\n" in by_symbol["login"].text
    # Chunks together cover every non-blank line.
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert all(n in covered for n, line in enumerate(lines, 1) if line.strip())


def test_it_lists_the_symbols_a_chunk_defines(pack_bytes):
    chunks = chunk_parsed("todo/auth.py", sample_files(pack_bytes)["todo/auth.py"])
    symbols = [s for c in chunks for s in c.symbols]
    assert {"AuthError", "hash_password", "check_password", "TokenStore", "issue"} <= set(symbols)


def test_it_follows_javascript_functions_and_classes(pack_bytes):
    chunks = chunk_parsed("static/app.js", sample_files(pack_bytes)["static/app.js"])
    by_symbol = {s: c for c in chunks for s in c.symbols}
    assert {"login", "listTodos", "TodoList", "render"} <= set(by_symbol)
    assert by_symbol["TodoList"].text.startswith("export class TodoList {")


def test_it_cuts_long_files_into_overlapping_windows():
    content = "\n".join(f"value_{n} = {n}  # some words to fill the line" for n in range(1, 201))
    chunks = chunk_file(content, "")
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    assert all(c.end_line - c.start_line < 40 for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 200
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert 0 < before.end_line - after.start_line + 1 <= 3


def test_it_splits_an_oversized_definition_and_remembers_its_name():
    body = "\n".join(f"    x_{n} = compute({n}, 'padding padding padding')" for n in range(80))
    content = f"import os\n\n\nclass Big:\n    def run(self):\n{body}\n"
    chunks = chunk_parsed("big.py", content)
    assert len(chunks) > 2
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    assert chunks[-1].context == "Big"
    assert embedding_text("big.py", chunks[-1]).startswith("big.py (Big)\n")


def test_it_numbers_crlf_lines_like_an_editor():
    chunks = chunk_file("a = 1\r\n\r\nb = 2\r\n", "python")
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [(1, 3, "a = 1\n\nb = 2")]


def test_it_makes_no_chunks_for_an_empty_or_blank_file():
    assert chunk_file("", "python") == []
    assert chunk_file("\n\n   \n", "python") == []


def test_it_splits_markdown_at_headings_but_not_inside_fences():
    content = (
        "# Title\nintro\n```markdown\n# not a heading\n```\n" + "text\n" * 200 + "## Next\nmore\n"
    )
    chunks = chunk_file(content, "markdown")
    assert chunks[-1].symbols == ["Next"]
    assert all("# not a heading" not in c.symbols for c in chunks)


def test_it_embeds_the_path_and_symbol_before_the_text(pack_bytes):
    chunk = chunk_parsed("todo/storage.py", sample_files(pack_bytes)["todo/storage.py"])[-1]
    assert embedding_text("todo/storage.py", chunk).startswith("todo/storage.py (")
