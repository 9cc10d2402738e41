"""Zip uploads: a normal repository zip indexes; hostile ones are refused with a reason."""

import io
import random
import stat
import struct
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.indexing import index_codebase
from rag.parsers import archive, check_upload
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


def test_a_small_member_that_expands_hundreds_of_times_is_refused():
    # 200 KB of one letter deflates to a few hundred bytes: under the old "> 1 MB" guard.
    data = make_zip([("main.py", "x = 1\n"), ("blob.py", "a" * 200_000)])
    member = zipfile.ZipFile(io.BytesIO(data)).getinfo("blob.py")
    assert member.compress_size < 5_000
    with pytest.raises(PackError, match=r"expands more than 100×.*zip bomb"):
        read_zip(data)


def test_members_that_each_pass_the_ratio_cannot_add_up_to_a_bomb():
    rng = random.Random(8)
    text = lambda: "".join("a" * 200 + rng.choice("bcdefghij") for _ in range(200))  # noqa: E731
    data = make_zip([(f"f{n}.py", text()) for n in range(60)])
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    assert all(i.file_size < archive.MAX_RATIO * i.compress_size for i in infos)
    assert sum(i.file_size for i in infos) > archive.MAX_TOTAL_RATIO * len(data)
    with pytest.raises(PackError, match="unpacks to more than 1 MB .*zip bomb"):
        read_zip(data)


def test_the_total_cap_counts_inflated_bytes_not_claimed_ones(monkeypatch):
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 2_000)
    monkeypatch.setattr(archive, "MAX_TOTAL_RATIO", 10**6)
    data = make_zip([(f"f{n}.py", f"x = {n}\n" * 100) for n in range(5)])
    with pytest.raises(PackError, match="unpacks to more than"):
        read_zip(data)


def test_it_refuses_an_entry_with_an_empty_name():
    # Found by bench/fuzz/parsers.py: zipfile's is_dir() raised IndexError on it.
    data = make_zip([("ok.py", "x = 1"), (zipfile.ZipInfo(""), "boom")])
    with pytest.raises(PackError, match="empty name"):
        read_zip(data)


def patch_directory(data: bytes, name: str, field: int, value: int) -> bytes:
    """`data` with one field of `name`'s central-directory entry set to `value` (a crafted header).
    Fields: 20 compressed size, 24 uncompressed size, 42 offset of the local header."""
    out = bytearray(data)
    entry = out.index(b"PK\x01\x02")
    while True:
        name_length = struct.unpack_from("<H", out, entry + 28)[0]
        if out[entry + 46 : entry + 46 + name_length] == name.encode():
            struct.pack_into("<I", out, entry + field, value)
            return bytes(out)
        entry = out.index(b"PK\x01\x02", entry + 4)


@pytest.fixture
def inflated(monkeypatch):
    """Bytes actually inflated from any zip member while the test runs (an observer: the reads
    themselves are the real ones)."""
    seen = [0]
    real = zipfile.ZipExtFile.read

    def read(self, n=-1):
        block = real(self, n)
        seen[0] += len(block)
        return block

    monkeypatch.setattr(zipfile.ZipExtFile, "read", read)
    return seen


def test_the_total_cap_stops_inflating_within_one_block(monkeypatch, inflated):
    # One member well inside its own caps: only the running total can stop it early.
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 100_000)
    monkeypatch.setattr(archive, "MAX_TOTAL_RATIO", 10**6)
    monkeypatch.setattr(archive, "MAX_RATIO", 10**6)
    data = make_zip([("big.py", "x = 1\n" * 250_000)])  # 1.5 MB
    with pytest.raises(PackError, match="unpacks to more than"):
        read_zip(data)
    assert inflated[0] <= 100_000 + archive._READ


def test_the_budget_counts_binary_and_gitignore_members_too(monkeypatch):
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 50_000)
    monkeypatch.setattr(archive, "MAX_TOTAL_RATIO", 10**6)
    blob = bytes(range(256)) * 150  # 38 KB of binary: inflated, then skipped
    rng = random.Random(3)
    # 32 KB of rules that leave the .gitignore itself out: read for its rules only.
    ignore = "".join(f"# {rng.random()}\n" for _ in range(1500)) + ".gitignore\n"
    data = make_zip([("main.py", "x = 1\n"), ("logo.png", blob), (".gitignore", ignore)])
    with pytest.raises(PackError, match="unpacks to more than"):
        read_zip(data)


def test_reading_a_zip_says_what_it_inflated():
    data = make_zip([("a.py", "x = 1\n" * 100), ("logo.png", b"\x89PNG\x00" * 100)])
    assert read_zip(data).inflated == 600 + 500


def test_a_header_claiming_a_neighbours_bytes_is_refused_before_inflating(inflated):
    # blob.py deflates 800× (refused as it is); claiming the padding after it as its own
    # compressed bytes would give it room for 100× that much.
    data = make_zip([("blob.py", "a" * 200_000), ("pad.bin", random.Random(1).randbytes(60_000))])
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        blob_data = zf.getinfo("blob.py").header_offset + 30 + len("blob.py")
        lying = patch_directory(data, "blob.py", 20, zf.start_dir - blob_data)
    with pytest.raises(PackError, match="claims more bytes than it takes up"):
        check_upload([("lying.zip", lying)])
    with pytest.raises(PackError, match="claims more bytes than it takes up"):
        read_zip(lying)
    assert inflated[0] == 0


def test_entries_sharing_their_bytes_are_refused(inflated):
    # The densest zip bombs point many directory entries at one block of compressed bytes.
    data = make_zip([("a.py", "x = 1\n" * 1000), ("b.py", "y = 2\n" * 1000)])
    overlapping = patch_directory(data, "b.py", 42, 0)
    with pytest.raises(PackError, match="overlap"):
        read_zip(overlapping)
    assert inflated[0] == 0


def test_a_header_understating_a_size_never_yields_more_than_it_claims(inflated):
    data = make_zip([("a.py", "x = 1\n" * 10_000)])
    lying = patch_directory(data, "a.py", 24, 600)
    with pytest.raises(PackError, match="cannot be read"):
        read_zip(lying)
    assert inflated[0] <= 600
