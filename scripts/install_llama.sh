#!/usr/bin/env bash
# Install llama-cpp-python into a virtualenv from a cached wheel, building the wheel once.
#
#   scripts/install_llama.sh [VENV]            (default: .venv)
#
# The PyPI release is a source distribution: compiling llama.cpp takes ~10 minutes on two
# cores, so the wheel is kept in ${PLANAGENTS_WHEEL_CACHE:-~/.cache/planagents/wheels} and
# reused by every later install. GGML_NATIVE=OFF makes the wheel portable to any x86-64 CPU
# instead of only the one that built it. Running it again when the version is installed is
# a no-op.
set -euo pipefail

VERSION="0.3.36"
VENV="${1:-.venv}"
CACHE="${PLANAGENTS_WHEEL_CACHE:-$HOME/.cache/planagents/wheels}"
PY="$VENV/bin/python"

if [[ ! -x "$PY" ]]; then
    echo "install_llama: no virtualenv at '$VENV' (expected $PY)" >&2
    exit 2
fi

installed="$("$PY" - <<'EOF'
from importlib.metadata import PackageNotFoundError, version

try:
    print(version("llama-cpp-python"))
except PackageNotFoundError:
    print("")
EOF
)"
if [[ "$installed" == "$VERSION" ]]; then
    echo "install_llama: llama-cpp-python $VERSION is already installed in $VENV"
    exit 0
fi

find_wheel() {
    # The build is tagged py3-none-<platform> (llama.cpp is loaded with ctypes, not built
    # against one CPython), so any wheel of this version for this machine fits.
    local arch
    arch="$(uname -m)"
    ls -1t "$CACHE"/llama_cpp_python-"$VERSION"-*-linux_"$arch".whl 2>/dev/null | head -n 1 || true
}

mkdir -p "$CACHE"
wheel="$(find_wheel)"

if [[ -z "$wheel" ]]; then
    # Two builds into one cache would race on the same file name: take a lock first, then
    # look again in case another install finished the build while this one waited.
    exec 9>"$CACHE/.build.lock"
    if command -v flock >/dev/null 2>&1; then
        echo "install_llama: waiting for the build lock on $CACHE ..."
        flock 9
    fi
    wheel="$(find_wheel)"
    if [[ -z "$wheel" ]]; then
        echo "install_llama: building llama-cpp-python $VERSION (about 10 minutes on 2 cores)..."
        start=$(date +%s)
        CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" \
            "$PY" -m pip wheel --no-deps -w "$CACHE" "llama-cpp-python==$VERSION"
        echo "install_llama: built in $(( $(date +%s) - start ))s"
        wheel="$(find_wheel)"
    fi
fi

if [[ -z "$wheel" ]]; then
    echo "install_llama: the build finished but no wheel for this Python is in $CACHE" >&2
    exit 1
fi

echo "install_llama: installing $(basename "$wheel")"
# The wheel's own dependencies (numpy, jinja2, diskcache, typing-extensions) come from the
# index as usual; only llama-cpp-python itself must never be rebuilt from source here.
"$PY" -m pip install --only-binary llama-cpp-python "$wheel"
