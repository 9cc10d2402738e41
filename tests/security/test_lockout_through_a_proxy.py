"""Through a real proxy hop into daphne, the server `make run` starts: the proxy appends each
client's address to X-Forwarded-For, and a lockout holds the guesser, not the others behind the
same proxy; a client reaching daphne directly cannot pick its address with that header.

Clients are told apart by their source address on the loopback network (127.0.0.2, 127.0.0.3);
the proxy reaches daphne from 127.0.0.1, the one trusted proxy."""

from __future__ import annotations

import http.client
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

import pytest

from tests.daphne import daphne, manage, server_env

RIGHT = "correct horse battery staple"
LIMIT = 3
MAKE_USER = (
    "from django.contrib.auth import get_user_model; "
    f"get_user_model().objects.create_user('alice', password={RIGHT!r})"
)
GUESSER, OWNER, FORGER = "127.0.0.2", "127.0.0.3", "127.0.0.4"


@dataclass
class Servers:
    daphne: int
    proxy: int


def start_proxy(upstream: int) -> ThreadingHTTPServer:
    """A reverse proxy as nginx's `proxy_add_x_forwarded_for` does it: the client's address
    appended to whatever X-Forwarded-For the client sent."""

    class Forward(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() != "x-forwarded-for"}
            sent = self.headers.get("X-Forwarded-For")
            client = self.client_address[0]
            headers["X-Forwarded-For"] = f"{sent}, {client}" if sent else client
            upstream_conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=30)
            upstream_conn.request(self.command, self.path, body=body, headers=headers)
            reply = upstream_conn.getresponse()
            content = reply.read()
            self.send_response(reply.status)
            for name, value in reply.getheaders():
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)
            upstream_conn.close()

        do_GET = do_POST = _forward

        def log_message(self, *args: object) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    return proxy


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> Iterator[Servers]:
    env = server_env(
        tmp_path_factory.mktemp("proxy-data"),
        DJANGO_DEBUG="1",
        PLANAGENTS_TRUSTED_PROXIES="127.0.0.1",
        PLANAGENTS_LOGIN_FAILURE_LIMIT=str(LIMIT),
    )
    manage(env, "migrate", "--noinput")
    manage(env, "shell", "-c", MAKE_USER)
    with daphne(env) as port:
        proxy = start_proxy(port)
        yield Servers(port, proxy.server_address[1])
        proxy.shutdown()


def log_in(port: int, source: str, password: str, forwarded: str | None = None) -> int:
    """The login page's status after posting `password` for alice from `source`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    extra = {"X-Forwarded-For": forwarded} if forwarded else {}
    conn.request("GET", "/accounts/login/", headers=extra)
    page = conn.getresponse()
    html = page.read().decode()
    cookie = re.search(r"csrftoken=([^;]+)", page.getheader("Set-Cookie") or "")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert cookie and token, html[:500]
    form = {"username": "alice", "password": password, "csrfmiddlewaretoken": token.group(1)}
    conn.request(
        "POST", "/accounts/login/", body=urlencode(form),
        headers={"Content-Type": "application/x-www-form-urlencoded",
                 "Cookie": f"csrftoken={cookie.group(1)}", **extra},
    )  # fmt: skip
    reply = conn.getresponse()
    reply.read()
    conn.close()
    return reply.status


def test_through_the_proxy_the_guesser_is_locked_out_and_the_owner_is_not(servers):
    for _ in range(LIMIT + 1):
        assert log_in(servers.proxy, GUESSER, "wrong guess") in (200, 429)

    assert log_in(servers.proxy, GUESSER, RIGHT) == 429
    assert log_in(servers.proxy, OWNER, RIGHT) == 302


def test_a_client_that_writes_its_own_forwarded_for_through_the_proxy_is_still_itself(servers):
    # The guesser writes a new address before the one the proxy appends on every try.
    for n in range(LIMIT + 1):
        log_in(servers.proxy, FORGER, "wrong guess", forwarded=f"192.0.2.{n}")

    assert log_in(servers.proxy, FORGER, RIGHT, forwarded="192.0.2.200") == 429


def test_a_forwarded_for_sent_straight_to_daphne_is_ignored(servers):
    # Not through the proxy: the header comes from no trusted address, so every try counts
    # against the guesser's own address, whatever it claims.
    for n in range(LIMIT + 1):
        log_in(servers.daphne, OWNER, "wrong guess", forwarded=f"198.51.100.{n}")

    assert log_in(servers.daphne, OWNER, RIGHT, forwarded="198.51.100.200") == 429
