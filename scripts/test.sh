#!/usr/bin/env bash
# Set up (with test tools) and run every check: ruff, mypy, and the whole pytest suite
# (unit, websocket, real local model, real Chromium through Playwright); then the suite again on
# PostgreSQL, with the scale-out tests (real Redis, Celery workers and daphne servers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy planagents rag agents conversations
# Two pytest workers (pytest-xdist), a test file each at a time: most of a test's time is spent
# waiting on a server, a socket, a browser or a subprocess, so two workers on two cores take the
# SQLite pass from ~46 to ~11 minutes. PLANAGENTS_TEST_WORKERS=0 runs it in one process.
WORKERS=(-n "${PLANAGENTS_TEST_WORKERS:-2}" --dist loadfile)

# A run of named tests may leave one PostgreSQL run with nothing to run (pytest's exit 5); the
# whole suite never may.
selected() {
    local status=0
    "$@" || status=$?
    if [ "$status" -eq 5 ] && [ "$PYTEST_ARGS" -gt 0 ]; then
        echo "test: (none of the tests named is in this run)"
        return 0
    fi
    return "$status"
}
PYTEST_ARGS=$#
.venv/bin/pytest -q "${WORKERS[@]}" "$@"

# The PostgreSQL pass. It leaves out the browser test (its server keeps its own SQLite) and the
# real-model test (the model does not care about the database); tests/scaleout runs only here.
# One pass at a time on this machine: the scale-out tests restart the shared Redis, so they run
# last, in one process, after the rest of the pass (two workers) is done.
if scripts/services.sh planagents; then
    echo "test: the suite again on PostgreSQL, with the scale-out tests"
    export DATABASE_URL="${PLANAGENTS_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/planagents}"
    exec 9> /tmp/planagents-postgres-pass.lock
    flock -w 1800 9
    selected .venv/bin/pytest -q "${WORKERS[@]}" -m "not browser and not llm and not scaleout" \
        -p no:cacheprovider "$@"
    echo "test: the scale-out tests (real Redis, Celery workers and daphne servers), one at a time"
    selected .venv/bin/pytest -q -m scaleout -p no:cacheprovider "$@"
    echo "test: both passes ran and passed: SQLite (whole suite) and PostgreSQL (with scale-out)"
elif [ "${CI:-}" = "true" ] || [ "${PLANAGENTS_REQUIRE_SERVICES:-}" = "1" ]; then
    # Under CI a missing service is a failure, not a skip: a pass that did not run did not pass.
    echo "test: FAILED: PostgreSQL or Redis could not be started, so the PostgreSQL pass and" \
        "the scale-out tests could not run (CI=true requires them)" >&2
    exit 1
else
    echo "test: only the SQLite pass ran: PostgreSQL or Redis could not be started, so the" \
        "PostgreSQL pass and the scale-out tests were NOT run (under CI=true this fails)" >&2
fi
