#!/usr/bin/env bash
# The scaled topology on one machine: two ASGI servers and two Celery workers sharing this
# machine's PostgreSQL and Redis. Ctrl-C stops them all.
#
#   make scaled          (or scripts/scaled.sh)
#
#   web 1  http://127.0.0.1:${PLANAGENTS_WEB1_PORT:-8001}     daphne
#   web 2  http://127.0.0.1:${PLANAGENTS_WEB2_PORT:-8002}     daphne
#   worker w1@host, w2@host                                   celery -A planagents worker
#   model  http://127.0.0.1:${PLANAGENTS_LLM_PORT:-8090}+n    manage.py llm_server (one copy of
#          each local model for every process here: PLANAGENTS_LLM_SERVER)
#
# A browser on either server sees tokens produced on either worker (through Redis); kill a
# worker (kill -9) and the other takes its sessions over once their lease runs out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/planagents}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
# Its own data folder (uploads, indexes, first login), so it never mixes with `make run`'s;
# the local model's weights are shared.
export PLANAGENTS_DATA_DIR="${PLANAGENTS_DATA_DIR:-$PWD/var/scaled}"
export PLANAGENTS_MODEL_DIR="${PLANAGENTS_MODEL_DIR:-$PWD/var/models}"
DB_NAME="$(basename "${DATABASE_URL%%\?*}")"
scripts/services.sh "$DB_NAME"

PY=.venv/bin/python
$PY manage.py migrate --noinput
$PY manage.py bootstrap

HOST="${PLANAGENTS_HOST:-127.0.0.1}"
PORTS=("${PLANAGENTS_WEB1_PORT:-8001}" "${PLANAGENTS_WEB2_PORT:-8002}")
CONCURRENCY="${PLANAGENTS_WORKER_CONCURRENCY:-2}"
LOGS="$PLANAGENTS_DATA_DIR/logs"
mkdir -p "$LOGS"

pids=()
stop() {
    trap - INT TERM EXIT
    echo "scaled: stopping"
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
}
trap stop INT TERM EXIT

# One model server for the machine: the web servers and workers reach the local models there
# instead of each loading its own copy (issue 20). Its key is written in the data folder.
LLM_PORT="${PLANAGENTS_LLM_PORT:-8090}"
export PLANAGENTS_LLM_SERVER="${PLANAGENTS_LLM_SERVER:-http://127.0.0.1:$LLM_PORT}"
$PY manage.py llm_server --port "$LLM_PORT" >"$LOGS/llm.log" 2>&1 &
llm_pid=$!
pids+=($llm_pid)
until grep -q "llm_server: ready" "$LOGS/llm.log"; do
    if ! kill -0 "$llm_pid" 2>/dev/null; then
        echo "scaled: the model server exited; see $LOGS/llm.log" >&2
        tail -5 "$LOGS/llm.log" >&2
        exit 1
    fi
    sleep 1
done
grep "llm_server:" "$LOGS/llm.log"

for i in 0 1; do
    .venv/bin/daphne -b "$HOST" -p "${PORTS[$i]}" planagents.asgi:application \
        >"$LOGS/web$((i + 1)).log" 2>&1 &
    pids+=($!)
done
for name in w1 w2; do
    .venv/bin/celery -A planagents worker -n "$name@%h" -c "$CONCURRENCY" -l INFO \
        --without-mingle --without-gossip >"$LOGS/$name.log" 2>&1 &
    pids+=($!)
done

echo "scaled: web on http://$HOST:${PORTS[0]} and http://$HOST:${PORTS[1]}," \
    "workers w1 and w2 ($CONCURRENCY processes each), one model server at" \
    "$PLANAGENTS_LLM_SERVER; logs in $LOGS/ (Ctrl-C to stop)"
# Stop everything as soon as any one of them exits: a half topology hides problems.
wait -n "${pids[@]}"
echo "scaled: a process exited; see $LOGS/" >&2
exit 1
