#!/usr/bin/env bash
# Set up (if needed) and serve PlanAgents on http://127.0.0.1:8000 with the embedded defaults:
# SQLite, in-memory channel layer, in-process jobs, the local Qwen2.5-Coder 0.5B model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=.venv/bin/python
$PY manage.py migrate --noinput
$PY manage.py bootstrap
HOST="${PLANAGENTS_HOST:-127.0.0.1}"
PORT="${PLANAGENTS_PORT:-8000}"
echo "PlanAgents: serving on http://$HOST:$PORT (Ctrl-C to stop)"
exec .venv/bin/daphne -b "$HOST" -p "$PORT" planagents.asgi:application
