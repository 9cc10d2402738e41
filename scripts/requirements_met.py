"""Exit 0 when this Python already has PlanAgents installed with every requirement that
pyproject.toml lists (and those of the given extras, e.g. `dev`) at an allowed version; 1
otherwise. scripts/setup.sh then skips pip, which would spend 15-30 s building the editable
install again to find nothing to do.

    python scripts/requirements_met.py [EXTRA ...]
"""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def met(text: str, extra: str = "") -> bool:
    """Whether requirement `text` (PEP 508) is installed at an allowed version, with the
    packages its extras add (one level: `celery[redis]` needs `redis`)."""
    from packaging.requirements import Requirement

    req = Requirement(text)
    if req.marker is not None and not req.marker.evaluate({"extra": extra}):
        return True  # not for this platform or this extra
    try:
        installed = version(req.name)
    except PackageNotFoundError:
        return False
    if not req.specifier.contains(installed, prereleases=True):
        return False
    for wanted in req.extras:
        for sub in requires(req.name) or []:
            marker = Requirement(sub).marker
            if marker is not None and marker.evaluate({"extra": wanted}) and not met(sub, wanted):
                return False
    return True


def all_met(pyproject: Path, extras: list[str]) -> bool:
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = [*project["dependencies"]]
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    try:
        version(project["name"])
    except PackageNotFoundError:
        return False
    # An install made before a console script was added lacks it (`planagents`).
    scripts = Path(sys.executable).parent
    if any(not (scripts / name).exists() for name in project.get("scripts", {})):
        return False
    return all(met(text) for text in wanted)


if __name__ == "__main__":
    try:
        ok = all_met(PYPROJECT, sys.argv[1:])
    except ImportError:  # a venv made a moment ago has no `packaging` yet: pip has work to do
        ok = False
    sys.exit(0 if ok else 1)
