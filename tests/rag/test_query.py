import pytest

from rag.query import MAX_QUERY_CHARS, analyze, strip_environment
from tests.fuzz.growth import LINEAR_LIMIT, growth


def test_it_keeps_stack_trace_frames_apart_from_the_prose():
    terms = analyze(
        "Stacking fails\n"
        '  File "/usr/lib/python3/site-packages/xarray/core/dataset.py", line 12, in stack_it\n'
        "    return self._stack_once(dims)\n"
        "KeyError: 'z'"
    )
    [frame] = terms.frames
    assert frame.path == "usr/lib/python3/site-packages/xarray/core/dataset.py"
    assert {"stack_it", "_stack_once"} <= set(frame.identifiers)
    assert "_stack_once" not in terms.identifiers and "site" not in terms.tokens
    assert {"stacking", "keyerror"} <= set(terms.tokens)
    assert "dataset.py" not in terms.text


def test_it_reads_ipython_style_frames_with_their_numbered_lines():
    terms = analyze(
        "~/envs/lib/python3.8/site-packages/seaborn/axisgrid.py in map(self, func, **kwargs)\n"
        "   1263         row_indices, col_indices = np.indices(self.axes.shape)\n"
        "-> 1265         self._map_bivariate(func, indices, **kwargs)\n"
        "\n"
        "TypeError: ufunc 'isnan' not supported"
    )
    [frame] = terms.frames
    assert frame.path.endswith("site-packages/seaborn/axisgrid.py")
    assert {"map", "_map_bivariate", "row_indices"} <= set(frame.identifiers)
    assert "_map_bivariate" not in terms.identifiers and "isnan" in terms.tokens


def test_prose_that_starts_with_a_file_name_is_not_a_frame():
    assert analyze("setup.py in my project fails to build").frames == []


def test_it_reads_pytest_style_frames():
    terms = analyze("pkg/io/reader.py:40: in read_rows\n    rows = parse(line)\nE   ValueError")
    assert [f.path for f in terms.frames] == ["pkg/io/reader.py"]
    assert "read_rows" in terms.frames[0].identifiers


def test_it_finds_dotted_module_names_and_identifiers():
    terms = analyze("Calling `astropy.io.fits.Card.fromstring()` fails in to_unstacked_dataset")
    assert "astropy.io.fits.Card.fromstring" in terms.modules
    assert terms.identifiers["to_unstacked_dataset"] == 1.0
    assert terms.identifiers["fromstring"] == 1.0
    assert terms.identifiers.get("fails", 0) < 0.5


def test_it_drops_pasted_version_dumps():
    query = "Plot fails with hue\n\nmore text here\n\nINSTALLED VERSIONS\npandas: 1.5.0\nnumpy: 1.2"
    assert "pandas" not in strip_environment(query)
    assert "numpy" not in analyze("bug\nnumpy==1.24.2\nscipy: 1.10.0\n").tokens


# Inputs that made the old patterns backtrack: blank lines (cubic in the version-line pattern),
# and long runs of path characters with no path in them (quadratic in the path pattern).
WORST_CASE_TASKS = {
    "blank lines": lambda n: "\n" * n,
    "spaces and blank lines": lambda n: " \n" * (n // 2),
    "one long word": lambda n: "a" * n,
    "dots and dashes": lambda n: "-." * (n // 2),
    "a version line without a version": lambda n: "numpy " + " " * n + "x",
}


@pytest.mark.parametrize("make", WORST_CASE_TASKS.values(), ids=WORST_CASE_TASKS.keys())
def test_an_800_character_hostile_task_is_analysed_in_linear_work(make):
    # 200 → 800 characters: linear work grows ~4×; the old patterns grew 16–64×.
    assert growth(analyze, make, 200) < LINEAR_LIMIT


def test_a_task_longer_than_the_cap_is_cut_before_analysis():
    tail = "unique_marker_identifier"
    terms = analyze("x " * MAX_QUERY_CHARS + tail)
    assert tail not in terms.identifiers and tail not in terms.tokens


def test_it_keeps_finding_paths_files_and_fences():
    terms = analyze(
        "See ./src/app/views.py:12 and docs/guide, not e.g. or etc.\n"
        "```python\ndef handle_request(): pass\n```\nThen C:\\\\proj\\\\main.go#L3."
    )
    assert "src/app/views.py" in terms.paths and "docs/guide" in terms.paths
    assert not any(p.startswith("e.g") for p in terms.paths)
    assert terms.identifiers["handle_request"] == 1.0


def test_version_lines_go_but_prose_with_numbers_stays():
    text = strip_environment(
        "Fails since 2.0 was released\n - pandas == 1.5.3\nscipy 1.10.0 (conda)"
    )
    assert "Fails since 2.0 was released" in text
    assert "pandas" not in text and "scipy" not in text
