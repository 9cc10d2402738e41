#!/usr/bin/env bash
# Make sure this machine's PostgreSQL and Redis are up (start them if stopped, as the machine
# page says) and that the database named in $1 (default: planagents) exists.
#
#   scripts/services.sh [DBNAME]
#
# Exits 3 when a service cannot be started (callers skip the scale-out tests then).
set -euo pipefail
DB="${1:-planagents}"

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    echo "services: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    echo "services: starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
    for _ in $(seq 1 30); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.2; done
fi
pg_isready -q -h 127.0.0.1 -p 5432 || { echo "services: PostgreSQL is not running" >&2; exit 3; }
redis-cli ping >/dev/null 2>&1 || { echo "services: Redis is not running" >&2; exit 3; }

if ! psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
    echo "services: creating database $DB"
    psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE \"$DB\""
fi
