"""Zip uploads: a normal repository zip indexes; hostile ones are refused with a reason."""

import io
import stat
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.indexing import index_codebase
from rag.parsers import archive
from rag.parsers.archive import read_zip
from rag.parsers.repomix import PackError
from rag.services import UploadError, create_codebase_from_upload

ZIPS = Path(__file__).resolve().parent.parent / "fixtures" / "zips"


def make_zip(entries, compression=zipfile.ZIP_DEFLATED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def test_it_reads_a_repository_zip_and_strips_its_top_folder():
    contents = read_zip((ZIPS / "sample_project.zip").read_bytes())
    paths = {f.path for f in contents.files}
    assert "todo/api.py" in paths and "docs/usage.md" in paths
    assert not any(p.startswith("sample_project/") for p in paths)


def test_it_skips_binary_members():
    data = make_zip([("main.py", "print('hi')\n"), ("app/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00")])
    contents = read_zip(data)
    assert [f.path for f in contents.files] == ["main.py"]
    assert contents.skipped == ["app/logo.png (binary)"]


def test_it_refuses_a_zip_bomb():
    data = make_zip([("bomb.txt", b"0" * (30 * 1024 * 1024))])
    assert len(data) < 100 * 1024
    with pytest.raises(PackError, match="zip bomb|expands"):
        read_zip(data)


def test_it_never_inflates_a_member_past_its_cap_whatever_the_header_says(monkeypatch):
    monkeypatch.setattr(archive, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(archive, "MAX_RATIO", 10**9)
    data = make_zip([("small.py", "x = 1\n"), ("big.py", "y = 2\n" * 5000)])
    contents = read_zip(data)
    assert [f.path for f in contents.files] == ["small.py"]
    assert contents.skipped[0].startswith("big.py (larger than")


@pytest.mark.parametrize("name", ["../evil.py", "a/../../evil.py", "/etc/passwd", "C:/x.py"])
def test_it_refuses_paths_that_escape(name):
    with pytest.raises(PackError, match="absolute path|climbs out"):
        read_zip(make_zip([("ok.py", "x = 1"), (name, "boom")]))


def test_it_refuses_symlinks():
    link = zipfile.ZipInfo("link.py")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with pytest.raises(PackError, match="symbolic link"):
        read_zip(make_zip([("ok.py", "x = 1"), (link, "/etc/passwd")]))


def test_it_refuses_too_many_members(monkeypatch):
    monkeypatch.setattr(archive, "MAX_MEMBERS", 5)
    with pytest.raises(PackError, match="6 entries; the limit is 5"):
        read_zip(make_zip([(f"f{n}.py", "x = 1") for n in range(6)]))


def test_it_says_when_a_zip_is_corrupt():
    with pytest.raises(PackError, match="cannot be read"):
        read_zip(archive.ZIP_MAGIC + b"garbage" * 10)


@pytest.mark.django_db
def test_the_upload_service_indexes_a_zip(alice, monkeypatch):
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: None)
    upload = SimpleUploadedFile("sample_project.zip", (ZIPS / "sample_project.zip").read_bytes())
    codebase = create_codebase_from_upload(alice, "", [upload])
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.name == "sample_project"
    assert codebase.status == "ready", codebase.error
    assert codebase.source_format == "zip"
    assert codebase.files.filter(path="todo/auth.py", role="source").exists()


@pytest.mark.django_db
def test_the_upload_service_refuses_a_bad_zip_before_keeping_it(alice, monkeypatch):
    monkeypatch.setattr("rag.services.dispatch", lambda job, *ids: None)
    upload = SimpleUploadedFile("evil.zip", make_zip([("../evil.py", "boom")]))
    with pytest.raises(UploadError, match="evil.zip: .*climbs out"):
        create_codebase_from_upload(alice, "", [upload])
    assert not alice.codebases.exists()
