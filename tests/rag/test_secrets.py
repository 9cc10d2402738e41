"""Files that hold secrets are withheld: listed on the page with why, never chunked or indexed."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from rag.indexing import index_codebase
from rag.models import Chunk, CodeFile
from rag.retrieval import read_lines, retrieve, retrieve_files

pytestmark = pytest.mark.django_db

ENV_SECRET = "zebraquartzplanted7731"
KEY_SECRET = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7plantedkeybody"
TOKEN_SECRET = "AKIAPLANTEDTOKEN7731"
FILES = {
    "app/settings.py": "import os\n\nDATABASE_PASSWORD = os.environ['DATABASE_PASSWORD']\n",
    "app/views.py": "def login(request):\n    return check_password(request)\n",
    ".env": f"DATABASE_PASSWORD={ENV_SECRET}\nDEBUG=1\n",
    "config/keys.pem": f"-----BEGIN PRIVATE KEY-----\n{KEY_SECRET}\n-----END PRIVATE KEY-----\n",
    "deploy/upload.py": f"ACCESS_KEY = '{TOKEN_SECRET}'\n\ndef upload(path):\n    return path\n",
}
SECRETS = (ENV_SECRET, KEY_SECRET, TOKEN_SECRET)


def as_zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, content in files.items():
            zf.writestr(f"repo-main/{path}", content)
    return buffer.getvalue()


def as_pack(files: dict[str, str]) -> bytes:
    return json.dumps({"files": files}).encode()


@pytest.fixture(params=["zip", "pack"])
def indexed_with_secrets(request, alice, make_codebase):
    data = as_zip(FILES) if request.param == "zip" else as_pack(FILES)
    codebase = make_codebase(alice, data)
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    return codebase


def test_secret_files_are_flagged_with_why(indexed_with_secrets):
    withheld = dict(
        indexed_with_secrets.files.exclude(withheld_reason="").values_list(
            "path", "withheld_reason"
        )
    )
    assert withheld == {
        ".env": "Looks like an environment file (.env).",
        "config/keys.pem": "Looks like a PEM key or certificate file.",
        "deploy/upload.py": "Holds what looks like an AWS access key (line 1).",
    }


def test_no_chunk_row_or_index_file_holds_a_secret(indexed_with_secrets, settings):
    codebase = indexed_with_secrets
    texts = list(Chunk.objects.filter(codebase=codebase).values_list("text", flat=True))
    assert texts and any("check_password" in t for t in texts)  # the rest is indexed
    contents = list(CodeFile.objects.filter(codebase=codebase).values_list("content", flat=True))
    folder = Path(settings.PLANAGENTS_INDEX_DIR) / str(codebase.pk)
    on_disk = [p.read_bytes() for p in folder.rglob("*") if p.is_file()]
    assert on_disk
    for secret in SECRETS:
        assert not any(secret in text for text in texts + contents), secret
        # bm25s stores its vocabulary lower-cased.
        assert not any(secret.lower().encode() in blob.lower() for blob in on_disk), secret


def test_withheld_files_are_never_retrieved_or_read(indexed_with_secrets):
    codebase = indexed_with_secrets
    for query in (ENV_SECRET, "DATABASE_PASSWORD environment", "private key", TOKEN_SECRET):
        hits = retrieve(codebase, query, k=10)
        assert all(hit.path not in {".env", "config/keys.pem", "deploy/upload.py"} for hit in hits)
        assert not any(secret in hit.text for hit in hits for secret in SECRETS)
        files = {f.path for f in retrieve_files(codebase, query, k=10)}
        assert not files & {".env", "config/keys.pem", "deploy/upload.py"}
    assert read_lines(codebase, ".env") == ""


def test_the_codebase_page_lists_withheld_files_and_why(alice_client, indexed_with_secrets):
    html = alice_client.get(reverse("rag:detail", args=[indexed_with_secrets.pk])).content.decode()
    assert "Withheld from the agents (3)" in html
    assert "<code>.env</code> — Looks like an environment file (.env)." in html
    assert "<code>config/keys.pem</code> — Looks like a PEM key or certificate file." in html
    assert "<code>deploy/upload.py</code> — Holds what looks like an AWS access key" in html
    assert not any(secret in html for secret in SECRETS)


def test_a_withheld_files_page_says_why_and_shows_no_text(alice_client, indexed_with_secrets):
    url = reverse("rag:file", args=[indexed_with_secrets.pk, ".env"])
    html = alice_client.get(url).content.decode()
    assert "Withheld from the agents: Looks like an environment file (.env)." in html
    assert "2 lines" in html  # its facts are kept, its text is not
    assert ENV_SECRET not in html
