"""The small fixture projects the profile, symbol and navigation tests read."""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "profile"


def project(name: str) -> dict[str, str]:
    """path → text of every file in tests/fixtures/profile/<name>."""
    root = FIXTURES / name
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
