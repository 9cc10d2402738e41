"""Parsing a pack does linear work in its size, whatever shape it is built in."""

import pytest

from rag.parsers import PackError, parse_upload
from tests.fuzz.growth import LINEAR_LIMIT, growth

FILE = '<file path="a.py">\nx = 1\n</file>\n'

# Shapes that make a splitter rescan: listings opened and never closed (the 85 KB pack that
# froze the server 4.8 s), file headers inside contents, fences never closed, long lines.
HOSTILE_PACKS = {
    "unclosed listings": lambda n: "<directory_structure>\n" * (n // 22) + "<files>\n" + FILE,
    "headers in contents": lambda n: FILE + '<file path="b.py">\n' * (n // 19),
    "listed headers": lambda n: (
        "<directory_structure>\na.py\n</directory_structure>\n<files>\n"
        + FILE
        + '</file>\n<file path="zz.py">\n' * (n // 27)
    ),
    "unclosed fences": lambda n: "## File: a.py\n```\n" * (n // 18),
    "one long line": lambda n: FILE + " " * n + "\n</file>\n",
    "plain headers": lambda n: ("=" * 16 + "\nFile: a.py\n" + "=" * 16 + "\n") * (n // 45),
}


def parse(text: str) -> object:
    try:
        return parse_upload([("pack", text.encode())])
    except PackError as exc:
        return exc


@pytest.mark.parametrize("make", HOSTILE_PACKS.values(), ids=HOSTILE_PACKS.keys())
def test_an_85_kb_hostile_pack_parses_in_linear_work(make):
    assert len(make(4 * 21_500)) >= 80_000
    # 21.5 KB → 86 KB: linear work grows ~4×; the old listing search grew 16×.
    assert growth(parse, make, 21_500) < LINEAR_LIMIT
