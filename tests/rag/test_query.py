from rag.query import analyze, strip_environment


def test_it_finds_paths_in_a_stack_trace():
    terms = analyze('  File "/usr/lib/python3/site-packages/xarray/core/dataset.py", line 12, in f')
    assert "usr/lib/python3/site-packages/xarray/core/dataset.py" in terms.paths


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
