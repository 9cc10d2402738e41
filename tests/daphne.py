"""A real daphne serving the app as `make run` does (embedded defaults, its own SQLite file in
a data folder, whatever the test pass), for the tests and benches that meet the server itself:
its body limits, a proxy in front of it, the API, MCP and the CLI over HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def server_env(data: Path, **extra: str) -> dict[str, str]:
    """The environment of a server whose data folder is `data`, plus `extra` settings. Its
    own SQLite file: in the PostgreSQL pass DATABASE_URL names the shared database, where
    what an earlier run left (a user of the same name) would get in the way."""
    env = {**os.environ, "PLANAGENTS_DATA_DIR": str(data), **extra}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("DATABASE_URL", None)
    return env


def manage(env: dict[str, str], *args: str) -> str:
    """`manage.py *args` in `env`; its output, or an error holding what it printed."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout


@contextmanager
def daphne(env: dict[str, str], interface: str = "127.0.0.1") -> Iterator[int]:
    """A daphne on a free port of `interface` (the database migrated first); its port."""
    manage(env, "migrate", "--noinput")
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-e", f"tcp:port=0:interface={interface}",
         "planagents.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # daphne says where it listens once it does
        seen.append(line)
        found = re.search(rf"Listening on TCP address {re.escape(interface)}:(\d+)", line)
        if found:
            break
    else:
        process.wait(timeout=30)
        raise RuntimeError("daphne did not start:\n" + "".join(seen[-20:]))
    # Keep reading its log so a full pipe never blocks it.
    threading.Thread(target=process.stderr.read, daemon=True).start()
    try:
        yield int(found.group(1))
    finally:
        process.terminate()
        process.wait(timeout=30)
