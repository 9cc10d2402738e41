"""Indexing yields to people: a codebase's files are parsed and chunked, and its chunks
embedded, on threads at PLANAGENTS_INDEX_NICE, below the local model's threads
(PLANAGENTS_LLM_NICE); the thread that ran the job keeps its own priority afterwards (a
pooled job thread may next run a session's turn); and before each batch of vectors the index
waits while a person's local-model call is in line or generating, whichever process makes
it."""

import os
import sys
import threading
import time
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from agents import model_queue
from agents.models import ModelTicket
from rag import api, embeddings
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
    parsed: list[int] = []
    real_embed, real_prepare = embeddings.embed, api.prepare

    def embed(texts, batch_size=embeddings.BATCH_SIZE):
        seen.append(own_nice())
        return real_embed(texts, batch_size)

    def prepare(files):
        parsed.append(own_nice())
        return real_prepare(files)

    monkeypatch.setattr(embeddings, "embed", embed)
    monkeypatch.setattr(api, "prepare", prepare)
    before = own_nice()
    codebase = make_codebase(alice, pack_bytes())
    index_codebase(codebase.pk)
    codebase.refresh_from_db()

    assert codebase.status == "ready"
    # Below the model's 10 (a test run already niced past 17 stays where it is: a thread
    # cannot raise its priority without privilege).
    assert parsed == [max(17, before)]
    assert seen and set(seen) == {max(17, before)}
    assert own_nice() == before  # the job's own thread is as it was


def test_the_default_is_below_the_model(settings):
    from planagents import settings as defaults

    assert defaults.PLANAGENTS_INDEX_NICE > defaults.PLANAGENTS_LLM_NICE


def ticket(priority: int) -> ModelTicket:
    return ModelTicket.objects.create(
        priority=priority, purpose="propose:1", seen_at=timezone.now()
    )


@pytest.mark.django_db(transaction=True)  # the call ends on another thread
def test_each_batch_of_vectors_waits_while_a_persons_model_call_runs(monkeypatch):
    monkeypatch.setattr(embeddings, "YIELD_SECONDS", 0.6)
    monkeypatch.setattr(
        embeddings, "embed_below", lambda texts, batch_size: np.zeros((len(texts), 4))
    )
    monkeypatch.setattr(embeddings, "dimension", lambda: 4)
    texts = [f"chunk {n}" for n in range(4)]

    started = time.monotonic()
    embeddings.embed_many(texts, batch_size=2)
    assert time.monotonic() - started < 0.3  # nobody waits on the model: no wait

    ticket(model_queue.BACKGROUND)  # background work is not a person
    started = time.monotonic()
    embeddings.embed_many(texts, batch_size=2)
    assert time.monotonic() - started < 0.3

    live = ticket(model_queue.LIVE)
    started = time.monotonic()
    embeddings.embed_many(texts, batch_size=2)
    assert time.monotonic() - started >= 2 * 0.6  # each of the 2 batches waited its most

    # The wait ends as soon as the call does.
    threading.Timer(0.2, lambda: ModelTicket.objects.filter(pk=live.pk).delete()).start()
    monkeypatch.setattr(embeddings, "YIELD_SECONDS", 30.0)
    started = time.monotonic()
    embeddings.embed_many(texts, batch_size=2)
    assert time.monotonic() - started < 5


def test_a_dead_processs_ticket_holds_no_index_up(monkeypatch, settings):
    monkeypatch.setattr(embeddings, "YIELD_SECONDS", 5.0)
    monkeypatch.setattr(
        embeddings, "embed_below", lambda texts, batch_size: np.zeros((len(texts), 4))
    )
    monkeypatch.setattr(embeddings, "dimension", lambda: 4)
    stale = timezone.now() - timedelta(seconds=settings.PLANAGENTS_LLM_QUEUE_STALE + 5)
    ModelTicket.objects.create(priority=model_queue.LIVE, purpose="propose:1", seen_at=stale)
    started = time.monotonic()
    embeddings.embed_many(["a", "b"], batch_size=1)
    assert time.monotonic() - started < 0.3
