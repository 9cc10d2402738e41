"""A pasted or uploaded unified diff, read and applied to the code a plan was written on.

    paths = read(diff)                      # DiffRefused: too big, binary, paths leaving the tree
    after = apply(diff, before)             # {path: new text, or None when the diff deletes it}

The diff is someone's input: it is capped, refused when it is binary or names a path outside
the tree, and applied by `git apply` in a child process (CPU, memory, output and time limits)
on a temporary folder holding only the files it touches. `git apply` applies all or nothing
and says why not; that sentence is what the user is shown.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rag.paths import InvalidPath, clean

MAX_DIFF_BYTES = 900_000
"""A diff larger than this is refused: under the 1 MB a page may post (planagents.limits)."""
MAX_DIFF_FILES = 300
"""Files one diff may touch."""
APPLY_SECONDS = 30
"""How long `git apply` may run before it is stopped."""
_CHILD_MEMORY = 1024 * 1024 * 1024
_CHILD_OUTPUT = 256 * 1024 * 1024


class DiffRefused(Exception):
    """A diff that cannot be checked, with a sentence the user can act on."""


@dataclass(frozen=True)
class Touched:
    """One file a diff touches: its path before and after (None for /dev/null)."""

    old: str | None
    new: str | None

    @property
    def path(self) -> str:
        return self.new or self.old or ""


_GIT_HEADER = re.compile(r"^diff --git (\S+) (\S+)$")
_BINARY = re.compile(r"^(GIT binary patch|Binary files .* differ)$")
_MODE = re.compile(r"^(?:new file |deleted file |new |old )?mode\s+(\S+)")
_FILE_MODES = frozenset({"100644", "100755", "644", "755"})
"""The modes of a plain file. Any other (a symbolic link, 120000; a submodule, 160000) is
refused: `git apply` would make a link that the check then reads through (`/etc/passwd` as a
file's new text)."""
_COPY = re.compile(r"^(?:copy|rename) (?:from|to) |^(?:dis)?similarity index ")
"""A copy or a rename: git takes its source from any path it is given (`copy from
/etc/hostname` was applied, and the file's text read back), with no --- and +++ lines to judge
it by. Refused; `git diff --no-renames` writes a rename as a deletion and an addition."""


def _side(raw: str, strip: bool) -> str | None:
    written = raw.split("\t", 1)[0].strip()
    if written == "/dev/null":
        return None
    if strip:
        if not written.startswith(("a/", "b/")):
            raise DiffRefused(f"`{written[:200]}` has no a/ or b/ prefix like the other paths.")
        written = written[2:]
    if written.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:", written):
        raise DiffRefused(f"`{written[:200]}` is an absolute path: a diff names files in the tree.")
    try:
        return clean(written)
    except InvalidPath as exc:
        raise DiffRefused(f"The diff names a path no file can have: {exc}") from None


def decode(data: bytes | str) -> str:
    """The diff as text, or DiffRefused when it is too big or not text."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_DIFF_BYTES:
        raise DiffRefused(
            f"The diff is {len(raw):,} bytes; at most {MAX_DIFF_BYTES:,} can be checked."
        )
    if b"\x00" in raw:
        raise DiffRefused("The diff holds NUL bytes: it is binary, not a unified diff.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DiffRefused("The diff is not UTF-8 text.") from None


def read(text: str) -> list[Touched]:
    """The files a unified diff touches, in order. DiffRefused when it touches none, more than
    MAX_DIFF_FILES, a binary file, or a path outside the tree."""
    lines = text.splitlines()
    strip = _strips(lines)
    found: list[Touched] = []
    old: str | None = None
    have_old = False
    for number, line in enumerate(lines):
        if _BINARY.match(line):
            raise DiffRefused("The diff changes a binary file; only text changes can be checked.")
        mode = _MODE.match(line)
        if mode and mode[1].lstrip("0") not in _FILE_MODES:
            raise DiffRefused(
                "The diff makes or changes a symbolic link or a submodule; only text files can "
                "be checked."
            )
        if _COPY.match(line):
            raise DiffRefused(
                "The diff copies or renames a file; write it without (`git diff --no-renames`) "
                "to have it checked."
            )
        if (
            line.startswith("--- ")
            and number + 1 < len(lines)
            and lines[number + 1].startswith("+++ ")
        ):
            old, have_old = _side(line[4:], strip), True
        elif line.startswith("+++ ") and have_old:
            found.append(Touched(old, _side(line[4:], strip)))
            have_old = False
            if len(found) > MAX_DIFF_FILES:
                raise DiffRefused(f"The diff touches more than {MAX_DIFF_FILES} files.")
        elif _GIT_HEADER.match(line):
            have_old = False
    if not found:
        raise DiffRefused(
            "No file changes found: paste a unified diff (`git diff` or `diff -u` output, "
            "with --- and +++ lines)."
        )
    return found


def _strips(lines: list[str]) -> bool:
    """Whether the diff's paths carry git's a/ and b/ prefixes (applied with -p1)."""
    return any(line.startswith(("--- a/", "+++ b/")) for line in lines)


def _limits() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_CPU, (APPLY_SECONDS, APPLY_SECONDS))
    resource.setrlimit(resource.RLIMIT_AS, (_CHILD_MEMORY, _CHILD_MEMORY))
    resource.setrlimit(resource.RLIMIT_FSIZE, (_CHILD_OUTPUT, _CHILD_OUTPUT))


def apply(text: str, before: dict[str, str], *, reverse: bool = False) -> dict[str, str | None]:
    """Apply the diff to `before` (path → text of every file it touches that exists) in a child
    process; the touched files' new text (None: deleted). DiffRefused, with git's words, when
    it does not apply. `reverse` takes the diff out instead (`git apply -R`: the bench's way
    back from a release that already holds a fix to the code before it)."""
    touched = read(text)
    git = shutil.which("git")
    if git is None:
        raise DiffRefused("This server cannot apply diffs: git is not installed.")
    with tempfile.TemporaryDirectory(prefix="planagents-diff-") as folder:
        root = Path(folder) / "tree"
        root.mkdir()
        for path, content in before.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8", newline="")
        patch = Path(folder) / "change.diff"
        patch.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        strip = "-p1" if _strips(text.splitlines()) else "-p0"
        env = {
            "PATH": f"{os.path.dirname(git)}:/usr/bin:/bin",
            "HOME": folder,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "LC_ALL": "C",
        }
        try:
            done = subprocess.run(
                [git, "apply", strip, "--whitespace=nowarn", *(["-R"] * reverse), str(patch)],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=APPLY_SECONDS,
                preexec_fn=_limits,
            )
        except subprocess.TimeoutExpired:
            raise DiffRefused(f"Applying the diff took longer than {APPLY_SECONDS} s.") from None
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())[:600]
            raise DiffRefused(f"The diff does not apply to the plan's version of the code: {said}")
        after: dict[str, str | None] = {}
        for path in dict.fromkeys(p for item in touched for p in (item.old, item.new) if p):
            parts = Path(path).parts
            if any(root.joinpath(*parts[:n]).is_symlink() for n in range(1, len(parts) + 1)):
                raise DiffRefused(f"`{path}` is a symbolic link after the diff.")
            try:
                after[path] = (root / path).read_text(encoding="utf-8")
            except FileNotFoundError:
                after[path] = None
            except UnicodeDecodeError:
                raise DiffRefused(f"`{path}` is not UTF-8 text after the diff.") from None
        return after
