#!/usr/bin/env bash
# Set up (with test tools) and run every check: ruff, mypy, and the whole pytest suite
# (unit, websocket, real local model, real Chromium through Playwright).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy planagents rag agents conversations
.venv/bin/pytest -q "$@"
