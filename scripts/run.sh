#!/usr/bin/env bash
# Set up (if needed) and serve PlanAgents on http://127.0.0.1:8000 with the embedded defaults:
# SQLite, in-memory channel layer, in-process jobs, the local Qwen2.5-Coder 0.5B model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# A development server: Django's debug pages on (settings default to off). Set DJANGO_DEBUG=0
# to try it as a deploy would run.
export DJANGO_DEBUG="${DJANGO_DEBUG:-1}"
PY=.venv/bin/python
$PY manage.py migrate --noinput
HOST="${PLANAGENTS_HOST:-127.0.0.1}"
PORT="${PLANAGENTS_PORT:-8000}"
$PY manage.py bootstrap --url "http://$HOST:$PORT"
echo "PlanAgents: development server (DJANGO_DEBUG=$DJANGO_DEBUG), not for production;" \
    "serving on http://$HOST:$PORT (Ctrl-C to stop)"
case "$HOST" in
127.* | localhost | ::1) ;;
*) [[ -n "${DJANGO_ALLOWED_HOSTS:-}" ]] ||
    echo "PlanAgents: bound to $HOST; set DJANGO_ALLOWED_HOSTS to the names clients use" >&2 ;;
esac
exec .venv/bin/daphne -b "$HOST" -p "$PORT" planagents.asgi:application
