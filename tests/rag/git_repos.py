"""Local git repositories made with the git CLI, for the tests of codebases from git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.com",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.com",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


class Repo:
    """A working repository and the bare one it pushes to (what a server would hold)."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.bare = root / "origin.git"
        self.work.mkdir(parents=True)
        git(self.work, "init", "--quiet", "--initial-branch=main")
        git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(self.bare))
        git(self.work, "remote", "add", "origin", str(self.bare))

    def commit(self, files: dict[str, str | bytes | None], message: str) -> str:
        """Write (or, for None, delete) `files`, commit them, push to the bare repository;
        the commit's id."""
        for path, content in files.items():
            target = self.work / path
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
        git(self.work, "add", "--all", "--force")  # ignored files too: the reader must drop them
        git(self.work, "commit", "--quiet", "-m", message)
        git(self.work, "push", "--quiet", "origin", "HEAD:main")
        return git(self.work, "rev-parse", "HEAD")
