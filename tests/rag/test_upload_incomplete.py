"""A pack that lacks files its own listing names, or that ends cut off: the uploader chooses to
refuse it (the default: nothing is kept, and the error names what is missing) or to index what
is there with a warning."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.forms import UploadForm
from rag.indexing import index_codebase
from rag.models import Codebase
from rag.parsers.listing import SHOW_MISSING, incomplete
from rag.parsers.repomix import parse_pack

pytestmark = pytest.mark.django_db

ZIP = Path(__file__).resolve().parent.parent / "fixtures" / "zips" / "sample_project.zip"
LOST = ("todo/storage.py", "pyproject.toml", "README.md")


@pytest.fixture(autouse=True)
def dispatched(monkeypatch):
    calls = []
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: calls.append((job, ids)))
    return calls


@pytest.fixture
def cut_pack(pack_bytes):
    """sample.xml cut in the middle of todo/export.py: its listing still names every file."""
    data = pack_bytes("sample.xml")
    return data[: data.index(b'<file path="todo/export.py">') + 60]


def post(client, data, name="cut-off.xml", **fields):
    return client.post(
        "/codebases/upload/", {"name": "", "pack": SimpleUploadedFile(name, data)} | fields
    )


def test_the_form_offers_the_choice_with_refuse_as_the_default(alice_client):
    page = alice_client.get("/codebases/upload/").content.decode()
    assert "If the pack is incomplete" in page
    assert re.search(r'<input type="radio" name="if_incomplete" value="refuse"[^>]* checked>', page)
    assert "Index what is there and warn" in page


def test_by_default_an_incomplete_pack_is_refused_naming_how_many_and_which_files(
    alice_client, alice, cut_pack, pack_bytes, settings, dispatched
):
    response = post(alice_client, cut_pack)

    assert response.status_code == 400
    error = response.context["form"].non_field_errors()[0]
    complete = [f.path for f in parse_pack(pack_bytes("sample.xml")).files]
    held = [f.path for f in parse_pack(cut_pack).files]
    missing = [p for p in complete if p not in held]
    assert f"names {len(missing)} file(s) that are not in it" in error
    assert all(path in error for path in (*missing, *LOST))
    assert "last file (todo/export.py) is cut off" in error
    assert "nothing was kept" in error and f"the {len(held)} file(s) it holds" in error
    assert 'role="alert"' in response.content.decode()
    # Nothing half-made: no codebase, no stored bytes, no job.
    assert not Codebase.objects.exists() and dispatched == []
    assert not (settings.DATA_DIR / "uploads").exists() or not any(
        (settings.DATA_DIR / "uploads").iterdir()
    )


def test_refuse_is_what_a_post_without_the_choice_gets(alice_client, cut_pack):
    assert post(alice_client, cut_pack, if_incomplete="").status_code == 400
    assert post(alice_client, cut_pack, if_incomplete="refuse").status_code == 400
    assert not Codebase.objects.exists()


def test_warn_indexes_what_is_there_and_names_what_is_missing(
    alice_client, alice, cut_pack, dispatched
):
    response = post(alice_client, cut_pack, if_incomplete="warn")

    assert response.status_code == 302
    codebase = Codebase.objects.get(owner=alice)
    assert dispatched == [(index_codebase, (codebase.pk,))]
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == Codebase.Status.READY
    warnings = " ".join(codebase.warnings)
    assert "directory listing names" in warnings and all(path in warnings for path in LOST)


def test_a_complete_pack_and_a_zip_pass_the_refuse_choice(alice_client, pack_bytes):
    assert post(alice_client, pack_bytes("sample.xml"), "whole.xml").status_code == 302
    assert post(alice_client, ZIP.read_bytes(), "repo.zip").status_code == 302


def test_the_parts_of_a_split_pack_are_judged_together(pack_bytes):
    """repomix --split-output: the listing is in the first part, the files spread over all."""
    listing = "a.py\nb.py"
    first = json.dumps({"directoryStructure": listing, "files": {"a.py": "x = 1"}})
    second = json.dumps({"files": {"b.py": "y = 2"}})
    uploads = [
        SimpleUploadedFile("p1.json", first.encode()),
        SimpleUploadedFile("p2.json", second.encode()),
    ]
    form = UploadForm({"name": ""}, {"pack": uploads})
    assert form.is_valid(), form.errors
    alone = UploadForm({"name": ""}, {"pack": [SimpleUploadedFile("p1.json", first.encode())]})
    assert not alone.is_valid()
    assert "1 file(s) that are not in it: b.py" in alone.non_field_errors()[0]


def test_a_long_list_of_missing_files_is_shortened():
    listing = "\n".join(f"f{n}.py" for n in range(SHOW_MISSING + 5))
    pack = parse_pack(
        json.dumps({"directoryStructure": f"{listing}\nkept.py", "files": {"kept.py": "x"}})
    )
    reason = incomplete([pack])
    assert f"names {SHOW_MISSING + 5} file(s)" in reason and "and 5 more" in reason
    assert "f24.py" not in reason


def test_binary_files_the_listing_names_are_not_missing():
    pack = parse_pack(
        json.dumps({"directoryStructure": "logo.png\nkept.py", "files": {"kept.py": "x"}})
    )
    assert incomplete([pack]) == ""


def test_something_that_is_not_a_pack_is_left_to_the_uploads_own_error(alice_client):
    response = post(alice_client, b"just some words", "notes.txt")
    assert response.status_code == 400
    assert "no Repomix file markers" in response.content.decode()
