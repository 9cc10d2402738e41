"""The process's cache of loaded indexes is bounded by bytes, least recently used out first
(issue 20: a server's memory grew with every codebase it had ever loaded)."""

import gc
import os
import time
import weakref

import numpy as np
import pytest

from planagents import caches
from rag import api, index, navigation
from rag.import_graph import ImportGraph
from rag.navigation import SYMBOLS_FILE, FileRow, Navigator
from rag.rerank import CodeFacts
from rag.search import CodeMap

ROWS, DIM = 400, 256
"""One dense index of ROWS x DIM float32: 400 KiB, so two fit in 1 MB and three do not."""


@pytest.fixture(autouse=True)
def empty_cache(settings):
    settings.PLANAGENTS_INDEX_CACHE_MB = 1
    index._cache.clear()
    yield
    index._cache.clear()


def dense(where):
    vectors = np.random.default_rng(len(str(where))).random((ROWS, DIM), dtype=np.float32)
    index.write_dense(where, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


def symbols_entries():
    """The kinds of reading of symbols.sqlite the cache holds."""
    return {key[2] for key in index._cache if isinstance(key, tuple) and key[1] == SYMBOLS_FILE}


def touch_later(path):
    later = time.time() + 5
    os.utime(path, (later, later))  # mtime resolution: make sure the change is visible


def test_an_index_past_the_byte_bound_evicts_the_least_recently_used():
    for codebase in (1, 2, 3):
        dense(codebase)
    first = index.load_dense(1)
    second = index.load_dense(2)
    index.load_dense(3)
    assert index.load_dense(2) is second
    assert index.load_dense(1) is not first  # it was dropped, and loaded again
    assert index._cache.size <= caches.MB


def test_a_recently_used_index_survives():
    for codebase in (1, 2, 3):
        dense(codebase)
    first = index.load_dense(1)
    second = index.load_dense(2)
    assert index.load_dense(1) is first  # used again: 2 is now the least recent
    index.load_dense(3)
    assert index.load_dense(1) is first
    assert index.load_dense(2) is not second


def test_a_changed_file_is_loaded_again(settings):
    dense(1)
    before = index.load_dense(1)
    assert index.load_dense(1) is before
    index.write_dense(1, np.eye(3, dtype=np.float32))
    touch_later(settings.PLANAGENTS_INDEX_DIR / "1" / index.DENSE_FILE)
    after = index.load_dense(1)
    assert after is not before
    assert after.ntotal == 3
    assert len(index._cache) == 1  # the old version's entry went with it


def test_the_bound_comes_from_the_setting(settings):
    settings.PLANAGENTS_INDEX_CACHE_MB = 2
    bound = caches.lru("rag.index").bound
    assert bound.max_bytes is not None and bound.max_bytes() == 2 * caches.MB
    for codebase in (1, 2, 3):
        dense(codebase)
    loaded = [index.load_dense(codebase) for codebase in (1, 2, 3)]
    assert [index.load_dense(codebase) for codebase in (1, 2, 3)] == loaded  # all three fit
    assert index._cache.size == 3 * ROWS * DIM * 4


def test_an_index_larger_than_the_bound_is_kept_alone():
    index.write_dense(1, np.ones((1200, DIM), dtype=np.float32))  # 1.2 MB
    dense(2)
    index.load_dense(2)
    big = index.load_dense(1)
    assert index.load_dense(1) is big
    assert len(index._cache) == 1


def test_what_is_derived_from_an_index_leaves_memory_with_it(settings):
    cmap = CodeMap.build(["app/api.py", "app/db.py"], ["source"] * 2, [0, 1], [["get"], []], [])
    index.write_map(1, cmap.to_json())
    loaded = api.CodeIndex(1).code_map()
    assert loaded is not None and loaded.lookups["names"]["api"] == [0]
    assert api.CodeIndex(1).code_map() is loaded  # built once per version of map.json
    gone = weakref.ref(loaded)
    del loaded
    for codebase in (2, 3, 4):
        dense(codebase)
        index.load_dense(codebase)  # pushes the map out
    gc.collect()
    assert gone() is None


def test_deleting_an_index_drops_it_from_the_cache():
    dense(1)
    index.load_dense(1)
    index.delete(1)
    assert len(index._cache) == 0
    assert index.load_dense(1) is None


def test_symbol_facts_and_names_count_against_the_same_bound(tmp_path):
    folder = tmp_path / "idx"
    navigation.write(folder, [FileRow("app/api.py", "python", "source", 3)], {}, ImportGraph())
    facts = CodeFacts.load(folder)
    assert facts is not None and CodeFacts.load(folder) is facts
    assert Navigator(folder).find_symbol("nothing_here").hits == []  # reads the catalogue
    assert symbols_entries() == {"facts", "catalogue"}
    for codebase in (2, 3, 4):
        dense(codebase)
        index.load_dense(codebase)  # pushes them out
    assert symbols_entries() == set()
    assert CodeFacts.load(folder) is not facts
