import json

from rag.parsers.repomix import detect_style, parse_repomix
from tests.fuzz.growth import LINEAR_LIMIT, growth


def test_it_reads_every_file_of_the_default_xml_pack(pack_bytes):
    files = parse_repomix(pack_bytes("sample.xml"))
    expected = json.loads(pack_bytes("sample.json"))["files"]
    assert {f.path: f.content for f in files} == expected


def test_it_detects_the_default_xml_style(pack_bytes):
    assert detect_style(pack_bytes("sample.xml").decode()) == "repomix-xml"


def test_it_keeps_a_closing_file_tag_inside_content(pack_bytes):
    files = {f.path: f.content for f in parse_repomix(pack_bytes("sample.xml"))}
    export = files["todo/export.py"]
    assert export.endswith('return "</file>"')
    assert '<file path="{name}.xml">\n{body}\n</file>\n</files>' in export
    assert "todo/storage.py" in files


def test_it_ignores_the_header_prose(pack_bytes):
    paths = {f.path for f in parse_repomix(pack_bytes("sample.xml"))}
    assert paths == set(json.loads(pack_bytes("sample.json"))["files"])


def test_it_only_splits_on_paths_the_directory_listing_names():
    pack = (
        "Header prose by Repomix.\n\n<directory_structure>\na.py\nb.py\n</directory_structure>\n\n"
        "<files>\nThis section contains the contents of the repository's files.\n\n"
        '<file path="a.py">\nDOC = """\n</file>\n\n'
        '<file path="fake.py">\nnot a file\n"""\n</file>\n\n'
        '<file path="b.py">\nprint(2)\n</file>\n\n</files>\n'
    )
    files = {f.path: f.content for f in parse_repomix(pack)}
    assert list(files) == ["a.py", "b.py"]
    assert files["a.py"] == 'DOC = """\n</file>\n\n<file path="fake.py">\nnot a file\n"""'


def test_it_reads_a_pack_without_a_directory_listing():
    pack = (
        '<files>\n<file path="./src\\\\x.py">\nx = 1\n</file>\n\n'
        '<file path="/y.md">\n# Y\n</file>\n</files>\n'
    )
    files = parse_repomix(pack.encode())
    assert [(f.path, f.content) for f in files] == [("src/x.py", "x = 1"), ("y.md", "# Y")]


def test_it_reads_the_parsable_xml_style(pack_bytes):
    files = parse_repomix(pack_bytes("sample.parsable.xml"))
    expected = json.loads(pack_bytes("sample.json"))["files"]
    assert detect_style(pack_bytes("sample.parsable.xml").decode()) == "repomix-xml-parsable"
    assert {f.path: f.content for f in files} == expected


def many_files(count: int) -> bytes:
    """A well-formed default-XML pack of `count` small files, each named in its listing."""
    body = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    listing = "\n".join(f"src/m{n}.py" for n in range(count))
    blocks = "".join(f'<file path="src/m{n}.py">\n{body}\n</file>\n\n' for n in range(count))
    pack = (
        f"<directory_structure>\n{listing}\n</directory_structure>\n\n<files>\n{blocks}</files>\n"
    )
    return pack.encode()


def test_it_parses_a_pack_of_many_files_in_linear_work():
    """test_repomix_linear grows hostile shapes of one or two files; this grows the number of
    files, where per-file work that scans the listing or the text before it (a listing kept
    as a list: 9.7x) turns quadratic. CPU work at n and 4n, not a wall clock."""
    files = parse_repomix(many_files(4000))
    assert [f.path for f in files] == [f"src/m{n}.py" for n in range(4000)]
    assert growth(parse_repomix, many_files, 1000) < LINEAR_LIMIT
