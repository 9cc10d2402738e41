"""Fetch one commit of a git repository and pack its tree as a zip, for the zip pipeline.

A git URL is a request to make the server talk to a host a user chose, so the fetch is
fenced: the git CLI runs in a child process group, with no user or system config, no
credential prompt or helper, no ssh key or agent of the server's, only the transports
allowed (https and ssh; `file` when PLANAGENTS_GIT_ALLOW_LOCAL is on), a time limit and a
size limit (what it downloads, watched on disk while it runs, and the files of the tree).
Nothing is checked out: the tree is listed and its blobs read from the object store, so no
filter, hook or path in the repository ever touches the disk outside the clone's .git.

What comes out is a zip of the commit's regular files (symbolic links and submodules left
out), stored uncompressed, under one top folder: `rag.parsers.read_zip` then does to it
exactly what it does to an uploaded zip (.gitignore, VCS folders, binaries, sizes), and
`secret_reason` withholds the same files. One ingestion path, whatever the source.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from django.conf import settings

from rag.parsers.archive import MAX_TOTAL_BYTES

POLL_SECONDS = 0.1
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where git and ssh are looked for: the system's, not whatever the server's PATH holds."""
MAX_URL_CHARS = 2000
MAX_REF_CHARS = 200
ALLOWED_SCHEMES = ("https", "ssh")
_SCP_LIKE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:(?!//)[^\s]+$")
"""`git@host:owner/repo.git`: git's scp-like ssh form (no scheme, a colon after the host)."""
_REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")


class GitSourceError(Exception):
    """The repository cannot be fetched; the message says what the user can do about it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RefusedSource(GitSourceError):
    """The URL, path or ref is refused before anything runs (a dangerous or disabled form)."""


class UnknownRef(GitSourceError):
    """The repository has no branch, tag or commit of that name."""


class Unreachable(GitSourceError):
    """The host cannot be reached, or there is no public repository at the URL."""


class FetchTimedOut(GitSourceError):
    """The fetch took longer than PLANAGENTS_GIT_TIMEOUT_SECONDS."""


class TooLarge(GitSourceError):
    """The repository (what it downloads, or its files) is over PLANAGENTS_GIT_MAX_BYTES."""


@dataclass(frozen=True)
class Source:
    """A checked place to fetch from: what the user typed, and the URL git is given."""

    url: str
    """As the user wrote it (a local path stays a path): what the codebase remembers."""
    fetch_url: str
    """What git fetches: the same URL, or a local path as a file:// URL (shallow works there)."""
    ref: str
    """The branch, tag or commit; "" for the repository's default branch."""

    @property
    def name(self) -> str:
        """The repository's name, for the codebase and the zip's top folder."""
        tail = self.url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return re.sub(r"[^\w.-]+", "_", tail.removesuffix(".git"))[:100] or "repository"


@dataclass(frozen=True)
class Fetched:
    """One commit's tree, packed as a zip the upload pipeline reads."""

    commit: str
    """The full commit id fetched."""
    label: str
    """The zip's file name, `<name>@<short commit>.zip`."""
    zip_bytes: bytes
    files: int
    """Regular files packed."""
    left_out: list[str]
    """Symbolic links and submodules, which a zip of the tree cannot hold."""


def check_source(url: str, ref: str = "") -> Source:
    """The URL (or local path) and ref, checked; RefusedSource naming what is wrong."""
    url, ref = url.strip(), ref.strip()
    if not url:
        raise RefusedSource("Give the repository's URL (https://… or git@host:owner/repo.git).")
    if url.startswith("-"):
        raise RefusedSource("A URL cannot start with '-' (git would read it as an option).")
    if "::" in url:
        # `ext::sh -c …` runs a command, `fd::` reads a descriptor; any `<helper>::` is refused.
        raise RefusedSource(
            "Transport helpers (ext::, fd::, <helper>::…) are refused; give an https:// or ssh URL."
        )
    if len(url) > MAX_URL_CHARS or any(c.isspace() or ord(c) < 32 or c == "\x7f" for c in url):
        raise RefusedSource("That URL holds spaces or control characters; paste it again.")
    return Source(url=url, fetch_url=_fetch_url(url), ref=check_ref(ref))


def check_ref(ref: str) -> str:
    if not ref:
        return ""
    if ref.startswith("-"):
        raise RefusedSource(
            f"The ref {ref!r} starts with '-' (git would read it as an option); "
            "give a branch, tag or commit name."
        )
    if len(ref) > MAX_REF_CHARS or not _REF.match(ref) or ".." in ref or ref.endswith(".lock"):
        raise RefusedSource(
            f"{ref!r} is not a branch, tag or commit name git accepts "
            "(letters, digits and . _ / + - only)."
        )
    return ref


def _fetch_url(url: str) -> str:
    local = settings.PLANAGENTS_GIT_ALLOW_LOCAL
    if url.lower().startswith("file:"):
        if not local:
            raise RefusedSource(
                "file:// URLs are refused on this server (PLANAGENTS_GIT_ALLOW_LOCAL is off); "
                "give an https:// or ssh URL, or upload a zip."
            )
        return url
    if "://" not in url and _SCP_LIKE.match(url) and not url.startswith((".", "/", "~")):
        return url
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme:
        if scheme not in ALLOWED_SCHEMES:
            raise RefusedSource(
                f"{scheme}:// is not allowed; give an https:// or ssh URL of a public repository."
            )
        if urlsplit(url).password is not None:
            raise RefusedSource(
                "That URL carries a password; only public repositories can be added, and "
                "credentials are never stored. Remove it from the URL."
            )
        if not urlsplit(url).hostname:
            raise RefusedSource("That URL names no host.")
        return url
    if not local:
        raise RefusedSource(
            "Local paths are refused on this server (PLANAGENTS_GIT_ALLOW_LOCAL is off); give "
            "an https:// or ssh URL, or upload a zip."
        )
    path = Path(url).expanduser()
    if not path.is_absolute():
        raise RefusedSource("Give a local repository as an absolute path.")
    if not path.is_dir():
        raise Unreachable(f"There is no folder at {url}.")
    # `--depth` is ignored for a plain path (git copies the objects); as file:// it is shallow.
    return path.resolve().as_uri()


def fetch(source: Source) -> Fetched:
    """Fetch `source`'s commit shallowly and pack its tree; a GitSourceError otherwise."""
    deadline = time.monotonic() + settings.PLANAGENTS_GIT_TIMEOUT_SECONDS
    limit = settings.PLANAGENTS_GIT_MAX_BYTES
    with tempfile.TemporaryDirectory(prefix="planagents-git-") as tmp:
        home = Path(tmp) / "home"
        repo = Path(tmp) / "repo"
        home.mkdir()
        env = _clean_env(home)
        git = ["git", "-C", str(repo)]
        _run(["git", "init", "--quiet", "--bare", str(repo)], env, deadline)
        wanted = source.ref or "HEAD"
        _run(
            [*git, "fetch", "--quiet", "--depth=1", "--no-tags", "--no-recurse-submodules",
             "--end-of-options", source.fetch_url, wanted],
            env, deadline, watch=repo, limit=limit, source=source,
        )  # fmt: skip
        commit = _run([*git, "rev-parse", "--verify", "FETCH_HEAD^{commit}"], env, deadline)
        commit_id = commit.decode().strip()
        listing = _run([*git, "ls-tree", "-r", "-l", "-z", "--full-tree", commit_id], env, deadline)
        blobs, left_out = _blobs(listing, min(limit, MAX_TOTAL_BYTES))
        data = _run(
            [*git, "cat-file", "--batch"],
            env,
            deadline,
            stdin="".join(f"{sha}\n" for _, sha in blobs).encode(),
        )
    label = f"{source.name}@{commit_id[:12]}.zip"
    return Fetched(commit_id, label, _zip(source.name, blobs, data), len(blobs), left_out)


def _clean_env(home: Path) -> dict[str, str]:
    """No config but ours, no prompt, no helper, no key: git as an anonymous stranger."""
    transports = ":".join(
        (*ALLOWED_SCHEMES, "file") if settings.PLANAGENTS_GIT_ALLOW_LOCAL else ALLOWED_SCHEMES
    )
    ssh = (
        "ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile=/dev/null "
        "-o IdentityAgent=none -o StrictHostKeyChecking=accept-new "
        f"-o UserKnownHostsFile={home / 'known_hosts'} -o ConnectTimeout=15"
    )
    return {
        "PATH": SYSTEM_PATH,
        "HOME": str(home),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_ALLOW_PROTOCOL": transports,
        "GIT_SSH_COMMAND": ssh,
        "GIT_LFS_SKIP_SMUDGE": "1",
        # A credential helper is configuration, and there is none; this says so once more.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "credential.helper",
        "GIT_CONFIG_VALUE_0": "",
    }


def _run(
    argv: list[str],
    env: dict[str, str],
    deadline: float,
    *,
    stdin: bytes | None = None,
    watch: Path | None = None,
    limit: int = 0,
    source: Source | None = None,
) -> bytes:
    """Run git in its own process group, killed whole at the deadline or when `watch` grows
    past `limit` bytes; its stdout, or the GitSourceError its stderr means."""
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    with contextlib.suppress(OSError):  # below the web server; its children inherit it
        os.setpriority(os.PRIO_PROCESS, proc.pid, 10)
    while True:
        try:
            out, err = proc.communicate(stdin, timeout=POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                _kill(proc)
                raise FetchTimedOut(
                    f"Fetching the repository took longer than "
                    f"{settings.PLANAGENTS_GIT_TIMEOUT_SECONDS:g} seconds, so it was stopped. "
                    "Try again later, or pick a smaller repository or a nearer mirror."
                ) from None
            if watch is not None and _size(watch) > limit:
                _kill(proc)
                raise _too_large(limit) from None
    if proc.returncode != 0:
        raise _meaning(err.decode("utf-8", "replace"), source)
    return out


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def _size(folder: Path) -> int:
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):  # git renames its temporary packs as it goes
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _too_large(limit: int) -> TooLarge:
    return TooLarge(
        f"The repository is larger than {limit / (1024 * 1024):.1f} MB "
        "(PLANAGENTS_GIT_MAX_BYTES), so the fetch was stopped. Add a smaller repository, "
        "or zip only its source and upload that."
    )


def _meaning(stderr: str, source: Source | None) -> GitSourceError:
    """What git's complaint means for the user (its own last line kept for the details)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = lines[-1][:300] if lines else "no message"
    low = stderr.lower()
    where = source.url if source else "the repository"
    if source is not None and (
        "couldn't find remote ref" in low
        or "not our ref" in low
        or "unadvertised object" in low
        or ("no such remote ref" in low)
    ):
        what = repr(source.ref) if source.ref else "its default branch"
        return UnknownRef(
            f"{where} has no branch, tag or commit named {what}. Check the name "
            "(a commit must be pushed to a branch or tag of that repository)."
        )
    if any(s in low for s in ("terminal prompts disabled", "authentication failed",
                              "could not read username", "permission denied")):  # fmt: skip
        return Unreachable(
            f"{where} asks for a login. Only public repositories can be added: no "
            "credentials are sent or stored."
        )
    if any(s in low for s in ("could not resolve host", "failed to connect", "connection refused",
                              "connection timed out", "could not read from remote",
                              "unable to access", "does not appear to be a git repository",
                              "not found", "network is unreachable", "no route to host")):  # fmt: skip
        return Unreachable(
            f"Could not fetch {where}: the host cannot be reached or has no public repository "
            f"there. git said: {said}"
        )
    if "transport" in low and "not allowed" in low:
        return RefusedSource(f"That transport is not allowed on this server. git said: {said}")
    return GitSourceError(f"git could not fetch {where}: {said}")


def _blobs(listing: bytes, limit: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(path, blob id) of every regular file in `git ls-tree -r -l -z` output, and the paths
    left out; TooLarge when the files add up past `limit` bytes."""
    blobs: list[tuple[str, str]] = []
    left_out: list[str] = []
    total = 0
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, sha, size = meta.split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind != b"blob" or mode not in (b"100644", b"100755"):
            left_out.append(path)
            continue
        total += int(size)
        if total > limit:
            raise _too_large(limit)
        blobs.append((path, sha.decode()))
    if not blobs:
        raise GitSourceError("That commit holds no files.")
    return blobs, left_out


def _zip(top: str, blobs: list[tuple[str, str]], batch: bytes) -> bytes:
    """The blobs `git cat-file --batch` wrote, in order, as a zip under `top/`. Stored, not
    deflated: the bytes are bounded by the size limit already, and a highly compressible
    file would otherwise trip the zip reader's bomb ratio."""
    out = io.BytesIO()
    at = 0
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for path, sha in blobs:
            end = batch.index(b"\n", at)
            header = batch[at:end].split()
            if len(header) != 3 or header[0].decode() != sha:
                raise GitSourceError(f"git returned an unexpected object for {path}.")
            size = int(header[2])
            content = batch[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
            name = str(PurePosixPath(top) / path)
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            archive.writestr(info, content)
    return out.getvalue()
