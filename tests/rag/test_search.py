from rag import search
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


def tree_map(paths, roles=None, symbols=None):
    """A code map with one chunk per file; `symbols` maps a path to the names it defines."""
    symbols = symbols or {}
    return CodeMap.build(
        paths=paths,
        roles=roles or ["source"] * len(paths),
        chunk_files=list(range(len(paths))),
        chunk_symbols=[symbols.get(p, []) for p in paths],
        dense_ordinals=[],
    )


PACKAGE = [
    "docs/conf.py",
    "docs/index.rst",
    "pkg/__init__.py",
    "pkg/io/__init__.py",
    "pkg/io/card.py",
    "pkg/io/header.py",
    "pkg/tables.py",
]


def test_reproduction_file_names_are_not_path_evidence():
    cmap = tree_map(PACKAGE, ["config", "docs", *["source"] * 5])
    query = "With this conf.py and an __init__.py next to index.rst, the build fails"
    assert "paths" not in {
        s for f in rank_files(cmap, analyze(query), [], [], []) for s in f.signals
    }


def test_a_file_name_only_one_source_file_has_is_path_evidence():
    cmap = tree_map(PACKAGE)
    scored = rank_files(cmap, analyze("tables.py builds the wrong index"), [], [], [])
    assert paths(cmap, scored)[0] == "pkg/tables.py" and "paths" in scored[0].signals


def test_a_dotted_name_through_a_package_points_at_the_module_defining_it():
    cmap = tree_map(PACKAGE, symbols={"pkg/io/card.py": ["Card"], "pkg/io/header.py": ["Header"]})
    scored = rank_files(cmap, analyze("pkg.io.Card.fromstring drops the comment"), [], [], [])
    with_path = [cmap.paths[f.file] for f in scored if "paths" in f.signals]
    assert with_path == ["pkg/io/card.py"]


def test_a_dotted_name_of_a_module_still_names_it():
    cmap = tree_map(PACKAGE)
    scored = rank_files(cmap, analyze("pkg.io.header is slow"), [], [], [])
    assert [cmap.paths[f.file] for f in scored if "paths" in f.signals] == ["pkg/io/header.py"]


def test_module_names_start_at_the_import_root():
    cmap = tree_map(["src/pkg/__init__.py", "src/pkg/mod.py", "tools/run.py"])
    assert cmap.modules["pkg.mod"] == 1 and cmap.modules["src.pkg.mod"] == 1
    assert cmap.modules["pkg"] == 0


TRACE = """Reading fails

Traceback (most recent call last):
  File "/home/me/repro_script.py", line 3, in <module>
    frobnicate_widgets(load())
  File "/usr/lib/python3.11/site-packages/pkg/io/header.py", line 40, in parse
    return tokens.split()
  File "/usr/lib/python3.11/site-packages/numpy/core/fromnumeric.py", line 9, in wrapreduction
    return ufunc.reduce(obj)
ValueError: bad header
"""


def test_traceback_frames_inside_the_codebase_are_path_evidence_and_others_are_not():
    cmap = tree_map([*PACKAGE, "pkg/repro_script.py", "pkg/core/fromnumeric.py"])
    scored = rank_files(cmap, analyze(TRACE), [], [], [])
    assert [cmap.paths[f.file] for f in scored if "paths" in f.signals] == ["pkg/io/header.py"]


def test_words_of_frames_outside_the_codebase_leave_the_query():
    cmap = tree_map(PACKAGE)
    terms = search.with_frames(cmap, analyze(TRACE))
    assert "frobnicate" not in terms.tokens and "wrapreduction" not in terms.tokens
    assert "fromnumeric" not in terms.words and "numpy" not in terms.words
    assert {"header", "split"} <= set(terms.tokens)  # the frame in our header.py counts


def test_every_file_comes_back_with_each_signals_rank_and_score():
    paths_ = [f"pkg/m{n}.py" for n in range(40)]
    cmap = tree_map(paths_)
    bm25 = [(n, 40.0 - n) for n in range(40)]
    scored = rank_files(cmap, analyze("anything"), [], bm25, bm25)
    last = next(f for f in scored if f.file == 39)
    assert last.signals["chunks"] == (40, 1.0) and last.signals["files"] == (40, 1.0)
    assert set(last.reasons) == {"chunks", "files"}


def test_vendored_and_generated_files_rank_below_project_code_with_more_evidence():
    cmap = tree_map(["lib/vendored.py", "lib/generated.py", "app/mine.py"],
                    ["vendored", "generated", "source"])  # fmt: skip
    strong = [(0, 9.0), (1, 8.0)]
    files = [(0, 9.0), (1, 8.0), (2, 7.0)]  # ours comes third even in whole-file BM25
    scored = rank_files(cmap, analyze("query"), strong, strong, files)
    assert paths(cmap, scored)[0] == "app/mine.py"


def test_a_frame_in_our_package_at_another_version_keeps_its_words_but_names_no_file():
    cmap = tree_map(PACKAGE)
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/venv/site-packages/pkg/io/old_reader.py", line 7, in lookup_single\n'
        "    value = self.lookup_table[key]\n"
        "KeyError: 'setosa'\n"
    )
    terms = search.with_frames(cmap, analyze(trace))
    assert "lookup_single" in terms.identifiers and "lookup" in terms.tokens
    assert terms.paths == []


CALLS = """Traceback (most recent call last):
  File "/venv/site-packages/pkg/tables.py", line 3, in build
    header = make_header(cards)
  File "/venv/site-packages/pkg/io/card.py", line 9, in make_header
    raise ValueError(card)
ValueError: bad card
"""


def test_only_the_innermost_frame_of_ours_names_its_file():
    cmap = tree_map(PACKAGE)
    terms = search.with_frames(cmap, analyze(CALLS))
    assert terms.paths == ["pkg/io/card.py"]
    assert {"build", "make_header"} <= set(terms.identifiers)  # the caller's words stay


def test_an_innermost_frame_in_a_file_we_lack_names_no_file():
    cmap = tree_map(PACKAGE)
    renamed = CALLS.replace("pkg/io/card.py", "pkg/io/_old_card.py")
    assert search.with_frames(cmap, analyze(renamed)).paths == []


def test_a_plain_word_that_names_a_function_is_not_symbol_evidence():
    cmap = tree_map(PACKAGE, symbols={"pkg/tables.py": ["note"]})
    plain = rank_files(cmap, analyze("the note option is ignored"), [], [], [])
    as_code = rank_files(cmap, analyze("`note()` ignores the option"), [], [], [])
    assert not any("symbols" in f.signals for f in plain)
    assert [cmap.paths[f.file] for f in as_code if "symbols" in f.signals] == ["pkg/tables.py"]


def test_a_file_first_in_three_signals_beats_one_merely_present_in_one_more():
    paths_ = ["pkg/first.py", "pkg/zebra.py", *[f"pkg/m{n}.py" for n in range(30)]]
    cmap = tree_map(paths_)
    fillers = [(n, 10.0 - n / 100) for n in range(2, 21)]  # ranks 2..20
    dense = [(0, 0.9), (1, 0.8)]
    lexical = [(0, 30.0), *fillers, (1, 1.0)]  # zebra.py only 21st lexically
    scored = rank_files(cmap, analyze("zebra"), dense, lexical, lexical)
    assert paths(cmap, scored)[0] == "pkg/first.py"
    assert "names" in next(f for f in scored if f.file == 1).signals
