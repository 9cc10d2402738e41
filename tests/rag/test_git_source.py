"""Fetching a commit of a git repository (rag.git_source): what is refused before git runs,
what git is allowed to do, the limits, and the errors a user reads."""

import io
import os
import socket
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from rag import git_source
from rag.git_source import (
    FetchTimedOut,
    RefusedSource,
    Source,
    TooLarge,
    UnknownRef,
    Unreachable,
    check_source,
    fetch,
)
from tests.rag.git_repos import Repo, git


@pytest.fixture
def local_on(settings):
    settings.PLANAGENTS_GIT_ALLOW_LOCAL = True
    return settings


@pytest.fixture
def repo(tmp_path):
    repo = Repo(tmp_path / "repo")
    repo.first = repo.commit({"src/app.py": "def hello():\n    return 1\n"}, "first")
    repo.second = repo.commit({"src/app.py": "def hello():\n    return 2\n"}, "second")
    git(repo.work, "tag", "v1", repo.first)
    git(repo.work, "push", "--quiet", "origin", "v1")
    return repo


def members(fetched):
    with zipfile.ZipFile(io.BytesIO(fetched.zip_bytes)) as archive:
        return {name: archive.read(name).decode() for name in archive.namelist()}


def test_a_file_url_is_refused_while_the_setting_is_off(settings, repo):
    settings.PLANAGENTS_GIT_ALLOW_LOCAL = False
    with pytest.raises(RefusedSource, match="file:// URLs are refused"):
        check_source(repo.bare.as_uri())


def test_a_local_path_is_refused_while_the_setting_is_off(settings, repo):
    settings.PLANAGENTS_GIT_ALLOW_LOCAL = False
    with pytest.raises(RefusedSource, match="Local paths are refused"):
        check_source(str(repo.bare))


def test_a_local_path_is_fetched_as_a_file_url_when_allowed(local_on, repo):
    source = check_source(str(repo.bare), "main")
    assert source.url == str(repo.bare)
    assert source.fetch_url == repo.bare.resolve().as_uri()


@pytest.mark.parametrize("ref", ["-h", "--upload-pack=touch /tmp/x", "-"])
def test_a_ref_starting_with_a_dash_is_refused(local_on, repo, ref):
    with pytest.raises(RefusedSource, match="starts with '-'"):
        check_source(str(repo.bare), ref)


@pytest.mark.parametrize("ref", ["main..other", "a b", "ma\nin", "HEAD@{1}", "x.lock"])
def test_a_ref_git_would_not_take_is_refused(local_on, repo, ref):
    with pytest.raises(RefusedSource):
        check_source(str(repo.bare), ref)


@pytest.mark.parametrize(
    "url",
    [
        "ext::sh -c touch% /tmp/pwned",
        "ext::sh",
        "fd::17",
        "fake::https://example.com/r.git",
        "https::https://example.com/r.git",
    ],
)
def test_a_transport_helper_url_is_refused(local_on, url):
    with pytest.raises(RefusedSource, match="Transport helpers"):
        check_source(url)


@pytest.mark.parametrize("url", ["--upload-pack=touch /tmp/x", "-oProxyCommand=x"])
def test_a_url_starting_with_a_dash_is_refused(local_on, url):
    with pytest.raises(RefusedSource, match="cannot start with '-'"):
        check_source(url)


@pytest.mark.parametrize("url", ["http://example.com/r.git", "git://example.com/r.git"])
def test_other_schemes_are_refused(url):
    with pytest.raises(RefusedSource, match="is not allowed"):
        check_source(url)


def test_a_password_in_the_url_is_refused():
    with pytest.raises(RefusedSource, match="carries a password"):
        check_source("https://me:hunter2@example.com/r.git")


@pytest.mark.parametrize(
    "url", ["https://github.com/owner/repo.git", "git@github.com:owner/repo.git", "ssh://h/r"]
)
def test_https_and_ssh_urls_are_taken_as_they_are(url):
    source = check_source(f"  {url} ", "v1.2")
    assert (source.url, source.fetch_url, source.ref) == (url, url, "v1.2")


def test_the_transport_allow_list_holds_even_past_the_checks(local_on, tmp_path):
    marker = tmp_path / "pwned"
    crafted = Source(url="x", fetch_url=f"ext::sh -c touch% {marker}", ref="")
    with pytest.raises(git_source.GitSourceError):
        fetch(crafted)
    assert not marker.exists()


def test_it_fetches_the_tip_of_a_branch(local_on, repo):
    fetched = fetch(check_source(str(repo.bare), "main"))
    assert fetched.commit == repo.second
    assert members(fetched) == {"origin/src/app.py": "def hello():\n    return 2\n"}
    assert fetched.label == f"origin@{repo.second[:12]}.zip"


def test_it_fetches_the_default_branch_when_no_ref_is_given(local_on, repo):
    assert fetch(check_source(repo.bare.as_uri())).commit == repo.second


def test_it_fetches_a_tag_or_an_older_commit(local_on, repo):
    assert fetch(check_source(str(repo.bare), "v1")).commit == repo.first
    fetched = fetch(check_source(str(repo.bare), repo.first))
    assert fetched.commit == repo.first
    assert members(fetched)["origin/src/app.py"] == "def hello():\n    return 1\n"


def test_the_fetch_is_shallow(local_on, repo, monkeypatch):
    shallow = []
    real = git_source._blobs

    def spy(listing, limit):  # while the fetched repository is still there
        (tmp,) = Path(tempfile.gettempdir()).glob("planagents-git-*")
        shallow.append((tmp / "repo" / "shallow").read_text().split())
        return real(listing, limit)

    monkeypatch.setattr(git_source, "_blobs", spy)
    fetch(check_source(str(repo.bare), "main"))
    assert shallow == [[repo.second]]


def test_an_unknown_ref_says_so(local_on, repo):
    with pytest.raises(UnknownRef, match="no branch, tag or commit named 'nope'"):
        fetch(check_source(str(repo.bare), "nope"))


def test_a_missing_local_repository_says_so(local_on, tmp_path):
    with pytest.raises(Unreachable, match="There is no folder"):
        check_source(str(tmp_path / "gone.git"))


def test_an_unreachable_host_says_so():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nobody listens there
    with pytest.raises(Unreachable, match="cannot be reached"):
        fetch(check_source(f"https://127.0.0.1:{port}/owner/repo.git"))


def test_a_fetch_past_the_time_limit_is_stopped(settings):
    settings.PLANAGENTS_GIT_TIMEOUT_SECONDS = 1
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held = []
    threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(FetchTimedOut, match="longer than 1 seconds"):
            fetch(check_source(f"https://127.0.0.1:{server.getsockname()[1]}/slow.git"))
    finally:
        server.close()
        for conn, _ in held:
            conn.close()
    assert time.monotonic() - started < 5


def test_a_repository_over_the_size_limit_is_refused(local_on, tmp_path):
    settings = local_on
    settings.PLANAGENTS_GIT_MAX_BYTES = 32 * 1024
    big = Repo(tmp_path / "big")
    # Random bytes do not compress: the download itself passes the limit.
    big.commit({"data.txt": os.urandom(96 * 1024).hex()}, "big")
    with pytest.raises(TooLarge, match="larger than 0.0 MB"):
        fetch(check_source(str(big.bare)))


def test_files_that_add_up_past_the_limit_are_refused_before_they_are_read():
    listing = b"".join(b"100644 blob %s %7d\tf%d.txt\0" % (b"a" * 40, 600, n) for n in range(3))
    assert len(git_source._blobs(listing, 1800)[0]) == 3
    with pytest.raises(TooLarge):
        git_source._blobs(listing, 1799)


def test_symbolic_links_and_submodules_are_left_out(local_on, tmp_path):
    repo = Repo(tmp_path / "links")
    repo.commit({"real.py": "x = 1\n"}, "one")
    (repo.work / "link.py").symlink_to("real.py")
    repo.commit({}, "a link")
    fetched = fetch(check_source(str(repo.bare)))
    assert list(members(fetched)) == ["origin/real.py"]
    assert fetched.left_out == ["link.py"]
