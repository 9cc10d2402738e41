"""A real daphne server for the API, started the way `make run` starts one (as
tests/planagents/test_daphne_limits.py does), with a user and tokens made in its database.
bench/api_load.py uses it too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKE_USER = (
    "from django.contrib.auth import get_user_model; from api.services import create_token, revoke_token; "
    "u = get_user_model().objects.create_user('api-' + __import__('uuid').uuid4().hex[:8]); "
    "w = create_token(u, 'write', 'write'); r = create_token(u, 'read', 'read'); "
    "x = create_token(u, 'revoked', 'write'); revoke_token(u, x.token.pk); "
    "print(w.secret, r.secret, x.secret)"
)


@dataclass
class Server:
    port: int
    write: str
    read: str
    revoked: str
    data: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout


@contextmanager
def daphne(data: Path, extra_env: dict[str, str] | None = None) -> Iterator[Server]:
    env = {**os.environ, "PLANAGENTS_DATA_DIR": str(data), "DJANGO_DEBUG": "0"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("DATABASE_URL", None)  # its own SQLite file, whatever the test pass
    env.update(extra_env or {})
    manage(env, "migrate", "--noinput")
    write, read, revoked = manage(env, "shell", "-c", MAKE_USER).split()[-3:]
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-e", "tcp:port=0:interface=127.0.0.1",
         "planagents.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # daphne says where it listens once it does
        seen.append(line)
        found = re.search(r"Listening on TCP address 127\.0\.0\.1:(\d+)", line)
        if found:
            break
    else:
        raise RuntimeError("daphne did not start:\n" + "".join(seen[-20:]))
    threading.Thread(target=process.stderr.read, daemon=True).start()
    try:
        yield Server(int(found.group(1)), write, read, revoked, data)
    finally:
        process.terminate()
        process.wait(timeout=30)
