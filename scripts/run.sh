#!/usr/bin/env bash
# Set up (if needed) and serve PlanAgents on http://127.0.0.1:8000 with the embedded defaults:
# SQLite, in-memory channel layer, in-process jobs, the local Qwen2.5-Coder 1.5B model (and the
# 0.5B one as the fast profile and the fallback).
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
$PY manage.py bootstrap --skip-model --url "http://$HOST:$PORT"
# The default and fallback models unpacked and sha256-checked now, not in the first session.
$PY manage.py prepare_models
echo "PlanAgents: development server (DJANGO_DEBUG=$DJANGO_DEBUG), not for production;" \
    "serving on http://$HOST:$PORT (Ctrl-C to stop)"
case "$HOST" in
127.* | localhost | ::1) ;;
*) [[ -n "${DJANGO_ALLOWED_HOSTS:-}" ]] ||
    echo "PlanAgents: bound to $HOST; set DJANGO_ALLOWED_HOSTS to the names clients use" >&2 ;;
esac
exec .venv/bin/daphne -b "$HOST" -p "$PORT" planagents.asgi:application
