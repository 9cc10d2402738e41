import os
import time

import numpy as np

from rag import index


def unit(rows):
    vectors = np.asarray(rows, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_it_persists_the_dense_index_and_finds_the_nearest_row(settings):
    index.write_dense(7, unit([[1, 0, 0], [0, 1, 0], [0, 0, 1]]))
    assert (settings.PLANAGENTS_INDEX_DIR / "7" / "dense.faiss").exists()
    hits = index.search_dense(7, unit([[0, 0.9, 0.1]])[0], 2)
    assert [ordinal for ordinal, _ in hits] == [1, 2]
    assert not list((settings.PLANAGENTS_INDEX_DIR / "7").glob("*.tmp"))


def test_it_reloads_an_index_rewritten_on_disk(settings):
    index.write_dense(8, unit([[1, 0], [0, 1]]))
    assert index.search_dense(8, unit([[1, 0]])[0], 1)[0][0] == 0
    index.write_dense(8, unit([[0, 1], [1, 0]]))
    path = settings.PLANAGENTS_INDEX_DIR / "8" / "dense.faiss"
    later = time.time() + 5
    os.utime(path, (later, later))  # mtime resolution: make sure the change is visible
    assert index.search_dense(8, unit([[1, 0]])[0], 1)[0][0] == 1


def test_it_persists_a_lexical_index_and_ranks_by_bm25():
    index.write_lexical(9, [["token", "store", "issue"], ["storage", "todo"], ["password"]])
    assert index.search_lexical(9, ["password", "unknown"], 3) == [
        (2, index.search_lexical(9, ["password"], 1)[0][1])
    ]
    assert index.search_lexical(9, ["nothing"], 3) == []


def test_it_keeps_only_the_newest_lexical_folder(settings):
    index.write_lexical(10, [["a"]])
    index.write_lexical(10, [["b"]])
    folders = list((settings.PLANAGENTS_INDEX_DIR / "10").glob("lexical-*"))
    assert len(folders) == 1
    assert index.search_lexical(10, ["b"], 1)[0][0] == 0


def test_it_finds_nothing_without_an_index():
    assert index.search_dense(99, unit([[1, 0]])[0], 3) == []
    assert index.search_lexical(99, ["x"], 3) == []
