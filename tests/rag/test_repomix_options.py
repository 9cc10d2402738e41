"""Packs made with Repomix options that change file contents (fixtures from Repomix 1.18.1)."""

from rag.parsers.repomix import parse_repomix, strip_line_numbers


def by_path(files):
    return {f.path: f.content for f in files}


def test_it_strips_line_numbers_and_keeps_the_real_lines(pack_bytes):
    plain = by_path(parse_repomix(pack_bytes("sample.xml")))
    numbered = by_path(parse_repomix(pack_bytes("sample.lines.xml")))
    assert numbered.keys() == plain.keys()
    assert numbered["todo/auth.py"] == plain["todo/auth.py"]
    assert numbered["todo/export.py"] == plain["todo/export.py"]


def test_it_leaves_text_that_only_looks_numbered():
    text = "1: first\n3: skipped a number"
    assert strip_line_numbers(text) == text
    assert strip_line_numbers(" 9: x\n10: y") == " 9: x\n10: y"
    assert strip_line_numbers(" 1: x\n 2: \n 3: y") == "x\n\ny"


def test_it_reads_compressed_packs(pack_bytes):
    files = by_path(parse_repomix(pack_bytes("sample.compress.xml")))
    assert "todo/auth.py" in files
    assert "⋮----" in files["todo/auth.py"]
    assert "def hash_password" in files["todo/auth.py"]
