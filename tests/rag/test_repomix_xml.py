import json

from rag.parsers.repomix import detect_style, parse_repomix


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


def test_it_parses_a_large_pack_quickly():
    import time

    body = "\n".join(f"def f{n}():\n    return {n}\n" for n in range(40))
    listing = "\n".join(f"m{n}.py" for n in range(3000))
    blocks = "".join(f'<file path="m{n}.py">\n{body}\n</file>\n\n' for n in range(3000))
    pack = (
        f"<directory_structure>\n{listing}\n</directory_structure>\n\n<files>\n{blocks}</files>\n"
    )
    started = time.perf_counter()
    files = parse_repomix(pack.encode())
    assert len(files) == 3000
    assert time.perf_counter() - started < 3
