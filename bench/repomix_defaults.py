"""How many ordinary Repomix packs of real repositories the upload refuses as incomplete (issue
19: a default `npx repomix` pack was refused because Repomix's security check had left out two
files its directory listing still names; the target is 0 refused).

    .venv/bin/python bench/repomix_defaults.py [--work /tmp/planagents-repomix-bench]
        [--repomix "npx --yes repomix"] [--src DIR ...] [NAME ...]

Each NAME is a PyPI project (or a requirement: `requests==2.5.0`) whose source distribution is fetched (`pip download --no-deps
--no-binary NAME`) and unpacked; each --src is a source folder already on disk (by default
the unpacked sdists under /work/corpus/src, one per project). Every tree is packed with
Repomix's DEFAULTS (XML style, security check on) and judged as the upload form judges it
(rag.completeness.incompleteness). Per pack it prints: files listed, files held, files the
security check left out (rag.parsers.listing.left_out), files rag.roles marks vendored (and
under which folders), and whether the upload would be refused, and why.

Needs the network for pip and npx (a bench, not a test). Packs are kept under --work/packs.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NAMES = ["requests", "flask", "click", "attrs", "idna", "jinja2", "pip", "setuptools"]
CORPUS = Path("/work/corpus/src")


def corpus_sources() -> list[Path]:
    """One unpacked sdist per project under /work/corpus/src (the newest version of each)."""
    if not CORPUS.is_dir():
        return []
    latest: dict[str, Path] = {}
    for folder in sorted(CORPUS.iterdir()):
        if folder.is_dir():
            latest[folder.name.rsplit("-", 1)[0]] = folder
    return list(latest.values())


def fetch(name: str, work: Path) -> Path:
    """The unpacked sdist of `name` (downloaded once into work/dl)."""
    downloads = work / "dl" / name
    if not downloads.exists() or not any(downloads.iterdir()):
        downloads.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        # --no-binary NAME, not :all:: the sdist's build tools may come as wheels.
        project = re.split(r"[=<>!~]", name)[0]
        sdist = [*pip, "--no-binary", project, "-d", str(downloads), name]
        if subprocess.run(sdist, check=False).returncode != 0:
            # An old sdist whose setup.py no longer runs (requests 2.5.0 on Python 3.11):
            # its wheel holds the same package tree.
            print(f"{name}: the sdist would not prepare, packing its wheel instead")
            subprocess.run([*pip, "-d", str(downloads), name], check=True)
    archive = next(downloads.iterdir())
    target = work / "src" / name
    if not target.exists():
        target.mkdir(parents=True)
        if archive.name.endswith((".zip", ".whl")):
            with zipfile.ZipFile(archive) as z:
                z.extractall(target)
        else:
            with tarfile.open(archive) as t:
                t.extractall(target, filter="data")
    inner = [p for p in target.iterdir() if p.is_dir()]
    return inner[0] if len(inner) == 1 else target


def pack(source: Path, repomix: list[str], out: Path) -> bytes:
    if not out.exists():
        subprocess.run([*repomix, "--quiet", "-o", str(out)], cwd=source, check=True)
    return out.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*", default=DEFAULT_NAMES)
    parser.add_argument("--work", type=Path, default=Path("/tmp/planagents-repomix-bench"))
    parser.add_argument("--repomix", default=os.environ.get("REPOMIX", "npx --yes repomix"))
    parser.add_argument("--src", type=Path, action="append", default=None)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from rag.completeness import incompleteness
    from rag.parsers.repomix import parse_pack
    from rag.roles import classify

    work = args.work
    (work / "packs").mkdir(parents=True, exist_ok=True)
    sources = [(p.name, p) for p in (args.src if args.src is not None else corpus_sources())]
    sources += [(name, fetch(name, work)) for name in args.names]
    refused = 0
    print(f"{'pack':<24} {'listed':>6} {'held':>6} {'left out':>8} {'vendored':>8}  verdict")
    for label, source in sources:
        data = pack(source, shlex.split(args.repomix), work / "packs" / f"{label}.xml")
        parsed = parse_pack(data)
        reason = incompleteness([data])
        refused += bool(reason)
        roles = classify([(f.path, f.content) for f in parsed.files])
        vendored = [
            f.path for f, role in zip(parsed.files, roles, strict=True) if role == "vendored"
        ]
        folders = Counter("/".join(p.split("/")[:-1][:3]) for p in vendored)
        listed = len(parsed.listed or []) + len(parsed.left_out)
        print(
            f"{label:<24} {listed:>6} {len(parsed.files):>6} {len(parsed.left_out):>8} "
            f"{len(vendored):>8}  {'REFUSED: ' + reason if reason else 'indexed'}"
        )
        if parsed.left_out:
            print(f"{'':<24} left out: {', '.join(parsed.left_out[:8])}")
        if folders:
            print(
                f"{'':<24} vendored under: {', '.join(f'{f}/ ({n})' for f, n in folders.most_common(6))}"
            )
    print(f"\n{refused} of {len(sources)} default packs refused")


if __name__ == "__main__":
    main()
