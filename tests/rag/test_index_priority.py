"""Indexing yields to people: a codebase's chunks are embedded on a thread at
PLANAGENTS_INDEX_NICE, below the local model's threads (PLANAGENTS_LLM_NICE), and the thread
that ran the job keeps its own priority afterwards (a pooled job thread may next run a
session's turn)."""

import os
import sys
import threading

import pytest

from rag import embeddings
from rag.indexing import index_codebase

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice values are Linux's"),
]


def own_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_codebase_is_embedded_below_the_models_priority(alice, make_codebase, pack_bytes, settings,
                                                          monkeypatch):  # fmt: skip
    settings.PLANAGENTS_LLM_NICE = 10
    settings.PLANAGENTS_INDEX_NICE = 17
    seen: list[int] = []
    real = embeddings.embed

    def embed(texts, batch_size=embeddings.BATCH_SIZE):
        seen.append(own_nice())
        return real(texts, batch_size)

    monkeypatch.setattr(embeddings, "embed", embed)
    before = own_nice()
    codebase = make_codebase(alice, pack_bytes())
    index_codebase(codebase.pk)
    codebase.refresh_from_db()

    assert codebase.status == "ready"
    # Every batch below the model's 10 (a test run already niced past 17 stays where it is:
    # a thread cannot raise its priority without privilege).
    assert seen and set(seen) == {max(17, before)}
    assert own_nice() == before  # the job's own thread is as it was


def test_the_default_is_below_the_model(settings):
    from planagents import settings as defaults

    assert defaults.PLANAGENTS_INDEX_NICE > defaults.PLANAGENTS_LLM_NICE
