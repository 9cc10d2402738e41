import json

import pytest

from rag.parsers.repomix import PackError, detect_style, parse_repomix


def test_it_reads_the_json_style(pack_bytes):
    data = pack_bytes("sample.json")
    files = parse_repomix(data)
    assert detect_style(data.decode()) == "repomix-json"
    assert [f.path for f in files] == list(json.loads(data)["files"])
    assert len(files) == 10


def test_it_explains_json_without_a_files_object():
    with pytest.raises(PackError, match='"files" object'):
        parse_repomix(b'{"fileSummary": {}}')


def test_it_explains_broken_json():
    with pytest.raises(PackError, match="invalid JSON"):
        parse_repomix(b'{"files": {"a.py": ')
