"""Inside daphne, the server `make run` starts: bodies are capped as they arrive, not after."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.daphne import daphne, manage, server_env

KB = 1024
LOG_IN = (
    "from django.contrib.auth import get_user_model; from django.test import Client; "
    "c = Client(); c.force_login(get_user_model().objects.create_user('walker-' + __import__('uuid').uuid4().hex[:8])); "
    "print(c.cookies['sessionid'].value)"
)


@dataclass
class Server:
    port: int
    session: str  # a logged-in user's session cookie value


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    env = server_env(tmp_path_factory.mktemp("daphne-data"), DJANGO_DEBUG="1")
    manage(env, "migrate", "--noinput")
    cookie = manage(env, "shell", "-c", LOG_IN).strip().splitlines()[-1]
    with daphne(env) as port:
        yield Server(port, cookie)


def request(
    port: int, head: str, body: bytes = b"", path: str = "/accounts/login/"
) -> tuple[int, bytes]:
    """Send a POST's head and `body` (possibly incomplete); return the reply's status and body.

    The timeout only turns a server that waits for more body into a failure instead of a hang."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{head}\r\n".encode()
            + body
        )
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    status, _, content = reply.partition(b"\r\n\r\n")
    return int(status.split(b" ", 2)[1]), content


def chunks(size: int) -> bytes:
    one = b"%x\r\n" % (8 * KB) + b"x" * (8 * KB) + b"\r\n"
    return one * (size // (8 * KB))


def test_an_oversized_anonymous_body_is_refused_before_any_of_it_is_sent(server):
    status, page = request(server.port, "Content-Length: 104857600\r\n")

    assert status == 413
    assert b"Log in first" in page


def test_an_endless_chunked_anonymous_body_is_cut_off_past_the_cap(server):
    # 128 KB of chunks and never the last one: only a server that counts as it reads answers.
    status, _ = request(server.port, "Transfer-Encoding: chunked\r\n", chunks(128 * KB))

    assert status == 413


def test_a_made_up_session_cookie_is_refused_before_its_body_is_sent(server):
    status, page = request(
        server.port, "Cookie: sessionid=made-up\r\nContent-Length: 10485760\r\n", path="/codebases/upload/"
    )  # fmt: skip

    assert status == 413
    assert b"Log in first" in page


def test_a_logged_in_user_may_send_more_than_the_anonymous_cap(server):
    cookie = f"Cookie: sessionid={server.session}\r\n"
    body = chunks(128 * KB) + b"0\r\n\r\n"

    status, _ = request(
        server.port, cookie + "Transfer-Encoding: chunked\r\n", body, path="/codebases/upload/"
    )

    assert status == 403  # it reached Django, whose CSRF check wants a token


def test_a_logged_in_users_body_still_gets_the_exact_cap_of_its_page(server):
    cookie = f"Cookie: sessionid={server.session}\r\n"
    size = 2 * 1024 * KB

    status, page = request(
        server.port, cookie + f"Content-Length: {size}\r\n", b"x" * size, path="/sessions/new/"
    )

    assert status == 413
    assert b"This page accepts at most 1.0" in page


def test_daphne_leaves_form_bodies_for_django_to_parse(server):
    # Twisted's own multipart parsing (whole body in memory, on the event loop) would answer
    # a malformed one with its 400; Django answers it with the CSRF failure.
    status, _ = request(
        server.port,
        "Content-Type: multipart/form-data; boundary=zz\r\nContent-Length: 7\r\n",
        b"garbage",
    )

    assert status == 403


def test_pages_are_served_after_bodies_are_refused(server):
    for _ in range(3):
        assert request(server.port, "Content-Length: 104857600\r\n")[0] == 413
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(
            b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200")
