"""How long a git sync takes on a repository with 1,000 commits (issue 23, codebases from git).

    nice -n 19 .venv/bin/python bench/git_sync.py [--commits 1000] [--files 200]

Makes a local repository of --commits commits over --files Python files with `git
fast-import` (each commit edits one file), adds it as a codebase from git in a throwaway
database and data folder (PLANAGENTS_GIT_ALLOW_LOCAL on: it is a local path), then commits
once more and syncs. Prints the seconds of: the shallow fetch alone (rag.git_source.fetch:
fetch, list, read, zip), the first add (fetch + index, until ready and until every vector is
in), and the sync (fetch + re-index of what changed, the same two marks), and the load average
around it. Jobs run in process, as in the embedded default. Not a test: numbers depend on the
machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def module(n: int, version: int) -> str:
    """A plausible small module: a class with a few methods, one of them edited per commit."""
    return (
        f'"""Module {n}."""\n\n\nclass Service{n}:\n'
        f'    """Does the work of part {n}."""\n\n'
        f"    def __init__(self, limit: int = {n}) -> None:\n        self.limit = limit\n\n"
        f"    def run(self, items: list[int]) -> list[int]:\n"
        f"        return [i * {version} for i in items if i < self.limit]\n\n"
        f"    def describe(self) -> str:\n        return f'service {n} v{version}'\n"
    )


def make_repo(bare: Path, commits: int, files: int) -> None:
    """`commits` commits on main: the first adds every file, each later one edits one."""
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(bare)],
                   env=GIT_ENV, check=True)  # fmt: skip
    stream: list[bytes] = []
    for c in range(commits):
        changed = range(files) if c == 0 else [c % files]
        when = 1_700_000_000 + c * 60
        message = f"commit {c}".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"committer Bench <bench@example.com> %d +0000\n" % when)
        stream.append(b"data %d\n%s\n" % (len(message), message))
        for n in changed:
            body = module(n, c).encode()
            stream.append(b"M 100644 inline pkg/mod%03d.py\ndata %d\n%s\n" % (n, len(body), body))
    stream.append(b"M 100644 inline README.md\ndata 7\n# Bench\n\n")
    subprocess.run(["git", "-C", str(bare), "fast-import", "--quiet"], input=b"".join(stream),
                   env=GIT_ENV, check=True)  # fmt: skip


def one_more_commit(bare: Path, version: int) -> None:
    body = module(0, version).encode()
    stream = (
        b"commit refs/heads/main\ncommitter Bench <bench@example.com> 1800000000 +0000\n"
        b"data 4\nsync\nfrom refs/heads/main^0\n"
        b"M 100644 inline pkg/mod000.py\ndata %d\n%s\n" % (len(body), body)
    )
    subprocess.run(["git", "-C", str(bare), "fast-import", "--quiet"], input=stream,
                   env=GIT_ENV, check=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="planagents-git-bench-"))
    os.environ["PLANAGENTS_DATA_DIR"] = str(work / "data")
    os.environ["PLANAGENTS_GIT_ALLOW_LOCAL"] = "1"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from rag import git_source, git_sync
    from rag.models import Codebase
    from rag.services import IndexHandle

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="x")
    load_before = os.getloadavg()

    bare = work / "repo.git"
    started = time.monotonic()
    make_repo(bare, args.commits, args.files)
    made = time.monotonic() - started
    count = subprocess.run(["git", "-C", str(bare), "rev-list", "--count", "main"],
                           env=GIT_ENV, capture_output=True, text=True, check=True)  # fmt: skip
    print(
        f"repository: {count.stdout.strip()} commits, {args.files + 1} files, made in {made:.2f} s"
    )

    source = git_source.check_source(str(bare), "main")
    started = time.monotonic()
    fetched = git_source.fetch(source)
    print(f"fetch alone: {time.monotonic() - started:.2f} s ({fetched.files} files, "
          f"{len(fetched.zip_bytes) // 1024} KB zip)")  # fmt: skip

    def timed(start: float, handle: IndexHandle) -> tuple[float, float]:
        handle.wait(600)
        ready = time.monotonic() - start
        handle.wait(600, vectors=True)
        return ready, time.monotonic() - start

    started = time.monotonic()
    codebase = git_sync.add_from_git(user, "bench", source)  # dispatched after the commit
    ready, vectors = timed(started, IndexHandle(codebase.pk))
    print(f"add from git: ready in {ready:.2f} s, every vector in {vectors:.2f} s")

    one_more_commit(bare, args.commits + 1)
    codebase = Codebase.objects.get(pk=codebase.pk)
    started = time.monotonic()
    handle = git_sync.sync(codebase)
    ready, vectors = timed(started, handle)
    codebase.refresh_from_db()
    latest = codebase.versions.order_by("-number").first()
    assert latest is not None and latest.number == 2, "the sync made no new version"
    print(f"sync after one more commit: ready in {ready:.2f} s, every vector in {vectors:.2f} s "
          f"(version {latest.number}: {latest.changed_count} file changed)")  # fmt: skip
    load_after = os.getloadavg()
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*load_before))
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*load_after))


if __name__ == "__main__":
    main()
