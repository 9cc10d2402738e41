import numpy as np
import pytest

from rag import embeddings


def test_it_returns_unit_float32_vectors():
    vectors = embeddings.embed(["def check_password(password, stored):", "rate limiting"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_it_puts_related_texts_closer_than_unrelated_ones():
    login, password, weather = embeddings.embed(
        ["user login with a password", "check the password a user typed", "sunny weather at sea"]
    )
    assert login @ password > login @ weather


def test_it_loads_the_model_once_per_process():
    assert embeddings.get_model() is embeddings.get_model()


def test_it_handles_an_empty_batch():
    assert embeddings.embed([]).shape == (0, 384)


def test_it_refuses_a_model_it_would_have_to_download(settings):
    settings.PLANAGENTS_EMBEDDING_MODEL = "someone/some-hub-model"
    with pytest.raises(embeddings.EmbeddingModelError, match="never downloaded"):
        embeddings._model_path()


def test_batches_hold_texts_of_about_one_length_short_first():
    texts = ["x" * 900, "y" * 10, "z" * 880, "w" * 15]
    assert embeddings.batches_by_length(texts, batch_size=2) == [[1, 3], [0, 2]]


def test_embed_many_keeps_the_order_of_its_texts_and_reports_each_batch():
    texts = ["def a():\n    return 1\n" * 20, "rate limit", "class Cart:\n    pass\n" * 5]
    seen = []
    vectors = embeddings.embed_many(texts, lambda batch, v: seen.append(batch), batch_size=2)
    assert np.allclose(vectors, embeddings.embed(texts), atol=1e-4)
    assert sorted(n for batch in seen for n in batch) == [0, 1, 2]


def test_threads_come_from_the_environment_when_settings_lack_them(monkeypatch, settings):
    if hasattr(settings, "PLANAGENTS_EMBED_THREADS"):
        del settings.PLANAGENTS_EMBED_THREADS
    monkeypatch.setenv("PLANAGENTS_EMBED_THREADS", "2")
    assert embeddings.threads() == 2


def test_the_loaded_encoder_is_kept_out_of_the_garbage_collectors_generations(monkeypatch):
    """A full collection walking the encoder's objects made the plan page's p95 437 ms with
    200 comments (168 ms once frozen, bench/RESULTS-comments.md)."""
    import gc

    monkeypatch.setattr(embeddings, "_model", None)
    gc.unfreeze()
    try:
        model = embeddings.get_model()
        assert gc.get_freeze_count() > 0
        assert not gc.is_tracked(model) or model not in gc.get_objects(generation=2)
    finally:
        gc.unfreeze()
