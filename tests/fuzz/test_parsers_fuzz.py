"""Fuzz every upload parser: mutated real packs and zips, generated packs in every style.

Bounded and deterministic (Hypothesis with a fixed derandomised seed): every input either
parses into files that keep their promises or is refused with a PackError a user can read.
bench/fuzz/parsers.py runs the same inputs 10,000+ at a time.
"""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.parsers import ParseResult
from tests.fuzz.inputs import MEMBER_NAMES, OPERATIONS, SEEDS, TOKENS, build_zip, check, mutate

FUZZ = settings(
    max_examples=250,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
mutations = st.lists(
    st.tuples(
        st.integers(0, OPERATIONS - 1),
        st.floats(0, 1),
        st.floats(0, 1),
        st.integers(0, len(TOKENS) - 1),
    ),
    min_size=1,
    max_size=6,
)


@FUZZ
@given(seed=st.sampled_from(SEEDS), changes=mutations)
def test_mutated_packs_and_zips_parse_or_are_refused_clearly(seed, changes):
    check([("upload", mutate(seed, changes))])


@FUZZ
@given(seeds=st.lists(st.sampled_from(SEEDS[:-1]), min_size=2, max_size=3), changes=mutations)
def test_mutated_split_packs_parse_or_are_refused_clearly(seeds, changes):
    parts = [(f"part{n}", mutate(seed, changes) if n else seed) for n, seed in enumerate(seeds)]
    check(parts)


members = st.lists(
    st.tuples(st.integers(0, len(MEMBER_NAMES) - 1), st.binary(max_size=300)), max_size=8
)


@FUZZ
@given(members=members, stored=st.booleans(), changes=st.none() | mutations)
def test_zips_of_hostile_members_parse_or_are_refused_clearly(members, stored, changes):
    data = build_zip(members, stored)
    check([("upload.zip", mutate(data, changes) if changes else data)])


paths = st.from_regex(r"[a-z][a-z0-9_]{0,8}(/[a-z][a-z0-9_]{0,8}){0,3}\.(py|js|md)", fullmatch=True)
contents = st.text(st.characters(blacklist_characters="<`=\r\x00", codec="utf-8"), max_size=200)
file_sets = st.dictionaries(paths, contents, min_size=1, max_size=6)


def render(style: str, files: dict[str, str]) -> str:
    if style == "json":
        return json.dumps({"directoryStructure": "\n".join(files), "files": files})
    if style == "xml":
        blocks = "".join(f'<file path="{p}">\n{c}\n</file>\n\n' for p, c in files.items())
        return f"<directory_structure>\n{chr(10).join(files)}\n</directory_structure>\n\n<files>\n{blocks}</files>\n"
    if style == "markdown":
        return "".join(f"## File: {p}\n```\n{c}\n```\n\n" for p, c in files.items())
    rule = "=" * 16
    blocks = "".join(f"{rule}\nFile: {p}\n{rule}\n{c}\n\n" for p, c in files.items())
    return f"{blocks}{'=' * 64}\nEnd of Codebase\n{'=' * 64}\n"


@FUZZ
@given(style=st.sampled_from(["json", "xml", "markdown", "plain"]), files=file_sets)
def test_generated_packs_in_every_style_give_back_their_files(style, files):
    result = check([("pack", render(style, files).encode())])
    assert isinstance(result, ParseResult), result
    got = {f.path: f.content for f in result.files}
    assert list(got) == list(files)
    for path, content in files.items():
        # Plain and Markdown cannot tell trailing blank lines from the separator after a file.
        expected = content if style in ("json", "xml") else content.rstrip("\n")
        assert got[path].rstrip("\n") == expected.rstrip("\n")
    assert result.warnings == []


def test_a_json_pack_nested_too_deeply_is_refused_not_crashed():
    result = check([("deep.json", b'{"files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")])
    assert "nested too deeply" in str(result)
