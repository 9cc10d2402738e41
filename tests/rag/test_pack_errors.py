import pytest

from rag.parsers.repomix import PackError, parse_repomix, sniff


def test_it_rejects_an_empty_file():
    with pytest.raises(PackError, match="found an empty file"):
        parse_repomix(b"")


def test_it_rejects_a_whitespace_only_file():
    with pytest.raises(PackError, match="empty file"):
        sniff(b"  \n\n")


def test_it_names_a_png_it_was_given():
    with pytest.raises(PackError, match="found a PNG image"):
        sniff(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def test_it_names_a_zip_it_was_given():
    with pytest.raises(PackError, match="zip archive"):
        parse_repomix(b"PK\x03\x04rest")


def test_it_rejects_random_text_and_quotes_its_start():
    with pytest.raises(PackError) as info:
        parse_repomix(b"Dear diary, today I wrote no code at all.")
    assert "Expected a Repomix pack" in info.value.message
    assert "'Dear diary, today" in info.value.message


def test_it_rejects_a_pack_with_zero_files():
    pack = b"Header\n<directory_structure>\n</directory_structure>\n<files>\n\n</files>\n"
    with pytest.raises(PackError, match="at least one file"):
        parse_repomix(pack)


def test_it_rejects_a_json_pack_with_zero_files():
    with pytest.raises(PackError, match="at least one file"):
        parse_repomix(b'{"files": {}}')


def test_it_rejects_undecodable_bytes():
    with pytest.raises(PackError, match="not valid UTF-8"):
        parse_repomix('<files>\n<file path="a.py">\nx = "é"\n</file>\n</files>'.encode("latin-1"))


def test_it_accepts_a_byte_order_mark():
    files = parse_repomix(b'\xef\xbb\xbf{"files": {"a.py": "x = 1"}}')
    assert files[0].path == "a.py"
