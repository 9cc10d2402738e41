import json

import pytest

from rag.parsers.repomix import detect_style, parse_repomix


@pytest.mark.parametrize(
    ("name", "style"),
    [
        ("sample.md", "repomix-markdown"),
        ("sample.parsable.md", "repomix-markdown"),
        ("sample.txt", "repomix-plain"),
    ],
)
def test_it_reads_markdown_and_plain_packs(pack_bytes, name, style):
    data = pack_bytes(name)
    assert detect_style(data.decode()) == style
    expected = json.loads(pack_bytes("sample.json"))["files"]
    assert {f.path: f.content for f in parse_repomix(data)} == expected


def test_it_keeps_a_nested_markdown_fence_inside_a_markdown_pack(pack_bytes):
    files = {f.path: f.content for f in parse_repomix(pack_bytes("sample.md"))}
    assert "````markdown\n## Example session" in files["docs/usage.md"]
    assert files["docs/usage.md"].endswith("…</file>`.")
