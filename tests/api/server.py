"""A real daphne server for the API, started the way `make run` starts one (as
tests/planagents/test_daphne_limits.py does), with a user and tokens made in its database.
bench/api_load.py uses it too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.daphne import daphne as running
from tests.daphne import manage, server_env

__all__ = ["MAKE_USER", "Server", "daphne", "manage"]
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


@contextmanager
def daphne(data: Path, extra_env: dict[str, str] | None = None) -> Iterator[Server]:
    env = server_env(data, DJANGO_DEBUG="0", **(extra_env or {}))
    manage(env, "migrate", "--noinput")
    write, read, revoked = manage(env, "shell", "-c", MAKE_USER).split()[-3:]
    with running(env) as port:
        yield Server(port, write, read, revoked, data)
