"""An upload is indexed by a Celery worker process, dispatched through the one job seam."""

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.models import Codebase
from rag.services import create_codebase_from_upload
from tests.conftest import FIXTURES

pytestmark = [pytest.mark.scaleout, pytest.mark.django_db(transaction=True)]


def test_a_worker_indexes_an_uploaded_pack(topology, on_celery, user):
    worker = topology.worker("worker1")
    pack = SimpleUploadedFile("sample.xml", (FIXTURES / "repomix/sample.xml").read_bytes())
    codebase = create_codebase_from_upload(user, "sample", [pack])

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        codebase.refresh_from_db()
        if codebase.status in (Codebase.Status.READY, Codebase.Status.FAILED):
            break
        time.sleep(0.2)
    assert codebase.status == Codebase.Status.READY, codebase.error
    assert codebase.files.exists()
    assert "planagents.run_job" in worker.text()  # it ran there, not in this process
