"""Uploads for the security tests: a Repomix JSON pack built from a dict, indexed for real."""

from __future__ import annotations

import json
import time

from django.core.files.uploadedfile import SimpleUploadedFile

from rag.indexing import index_codebase
from rag.models import Codebase
from rag.services import create_codebase_from_upload


def json_pack(files: dict[str, str]) -> bytes:
    """A Repomix JSON pack: any path (quotes and angle brackets too) survives the format."""
    return json.dumps({"files": files}).encode()


def indexed_codebase(owner: object, name: str, files: dict[str, str]) -> Codebase:
    """Upload `files` as `owner` and index them synchronously; returns the ready codebase."""
    upload = SimpleUploadedFile("pack.json", json_pack(files))
    codebase = create_codebase_from_upload(owner, name, [upload])  # type: ignore[arg-type]
    index_codebase(codebase.pk)
    # In transactional tests the dispatched job may have claimed it first: wait for it.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        codebase.refresh_from_db()
        if codebase.status in (Codebase.Status.READY, Codebase.Status.FAILED):
            break
        time.sleep(0.05)
    assert codebase.status == Codebase.Status.READY, codebase.error
    return codebase
