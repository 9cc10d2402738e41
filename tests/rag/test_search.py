from rag.query import analyze
from rag.search import CodeMap, rank_files


def code_map():
    return CodeMap.build(
        paths=["pkg/core.py", "pkg/reader.py", "tests/test_reader.py", "docs/reader.md"],
        roles=["source", "source", "test", "docs"],
        chunk_files=[0, 1, 1, 2, 3],
        chunk_symbols=[["Core"], ["Reader", "read_rows"], ["parse_header"], ["test_read"], []],
        dense_ordinals=[0, 1, 2],
    )


def paths(cmap, scored):
    return [cmap.paths[s.file] for s in scored]


def test_files_defining_named_symbols_rank_first():
    cmap = code_map()
    scored = rank_files(cmap, analyze("parse_header breaks on empty lines"), [], [], [])
    assert paths(cmap, scored)[0] == "pkg/reader.py"
    assert "symbols" in scored[0].reasons


def test_dotted_module_names_match_files():
    cmap = code_map()
    scored = rank_files(cmap, analyze("pkg.core.Core is slow"), [], [], [])
    assert paths(cmap, scored)[0] == "pkg/core.py"
    assert "paths" in scored[0].reasons


def test_role_weights_put_source_above_tests_with_the_same_evidence():
    cmap = code_map()
    same = [(3, 1.0), (1, 1.0)]  # a test chunk ranked first, then a source chunk
    scored = rank_files(cmap, analyze("reading"), same, same, [])
    assert paths(cmap, scored)[0] == "pkg/reader.py"


def test_a_code_map_survives_json():
    cmap = code_map()
    assert CodeMap.from_json(cmap.to_json()) == cmap
