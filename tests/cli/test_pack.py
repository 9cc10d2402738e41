"""Packing a directory the way Repomix would: what git would commit, text only, no secrets."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from cli.pack import STATE_FILE, PackError, pack_directory
from rag.parsers.archive import MAX_FILE_BYTES


def names(data: bytes) -> set[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return set(archive.namelist())


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def handler():\n    return 1\n")
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.py").write_text("generated = True\n")
    (tmp_path / "debug.log").write_text("a log line\n")
    (tmp_path / ".env").write_text("STRIPE_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n")
    return tmp_path


def test_it_packs_the_source_as_a_zip_of_relative_paths(repo):
    pack = pack_directory(repo)

    assert names(pack.data) == {"src/app.py", ".gitignore"}
    assert pack.files == [".gitignore", "src/app.py"]
    assert pack.text_bytes == sum(len((repo / f).read_bytes()) for f in pack.files)


def test_the_same_files_packed_twice_are_the_same_bytes(repo):
    first = pack_directory(repo).data
    (repo / "src" / "app.py").touch()  # a new mtime, the same content
    time.sleep(2.1)  # past zip's two-second clock

    assert pack_directory(repo).data == first


def test_it_leaves_out_what_gitignore_names(repo):
    pack = pack_directory(repo)

    assert "build/out.py" not in names(pack.data)
    assert "debug.log" not in names(pack.data)
    assert pack.ignored == 2  # the build folder and the log


def test_a_nested_gitignore_speaks_for_its_own_folder(repo):
    (repo / "src" / ".gitignore").write_text("secret_notes.py\n")
    (repo / "src" / "secret_notes.py").write_text("x = 1\n")
    (repo / "secret_notes.py").write_text("y = 2\n")

    packed = names(pack_directory(repo).data)

    assert "src/secret_notes.py" not in packed
    assert "secret_notes.py" in packed


def test_it_withholds_a_secret_and_says_why(repo):
    pack = pack_directory(repo)

    assert ".env" not in names(pack.data)
    assert [path for path, _ in pack.withheld] == [".env"]
    assert "environment file" in pack.withheld[0][1]


def test_it_withholds_a_key_found_in_a_source_file(repo):
    (repo / "src" / "settings.py").write_text('AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLF"\n')

    pack = pack_directory(repo)

    assert "src/settings.py" not in names(pack.data)
    assert "src/settings.py" in dict(pack.withheld)


def test_it_leaves_out_binaries_oversized_files_git_and_its_own_state(repo):
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (repo / "data.txt").write_text("x" * (MAX_FILE_BYTES + 1))
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text("[core]\n")
    (repo / STATE_FILE).write_text('{"codebase": 1}\n')

    pack = pack_directory(repo)

    assert names(pack.data) == {"src/app.py", ".gitignore"}
    assert "logo.png (binary)" in pack.skipped
    assert any(s.startswith("data.txt (larger than") for s in pack.skipped)


def test_a_missing_directory_is_a_pack_error(tmp_path):
    with pytest.raises(PackError, match="No such directory"):
        pack_directory(tmp_path / "nope")


def test_a_directory_with_nothing_to_pack_is_a_pack_error(tmp_path):
    (tmp_path / ".env").write_text("PASSWORD=hunter2hunter2\n")

    with pytest.raises(PackError, match="no text files to pack"):
        pack_directory(tmp_path)
