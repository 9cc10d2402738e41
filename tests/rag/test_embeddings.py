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
