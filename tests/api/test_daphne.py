"""The API inside daphne: a token is a login at the server's edge too, so an upload with a
live token may send more than the anonymous cap, and one without (or with a dead one) may not."""

from __future__ import annotations

import contextlib
import json
import socket
import urllib.request
from collections.abc import Iterator

import pytest

from tests.api.server import Server, daphne

KB = 1024
BOUNDARY = "api-test-boundary"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    with daphne(tmp_path_factory.mktemp("api-daphne")) as running:
        yield running


def upload(server: Server, authorization: str, size: int) -> tuple[int, bytes]:
    """POST a multipart upload of `size` bytes of blanks to /api/v1/codebases."""
    body = (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="pack"; filename="p.json"\r\n'
            "Content-Type: application/json\r\n\r\n"
        ).encode()
        + b" " * size
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    head = (
        f"POST /api/v1/codebases HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {len(body)}\r\n{authorization}\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head.encode())
        with contextlib.suppress(OSError):  # refused early: the server may close as we send
            sock.sendall(body)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    status, _, content = reply.partition(b"\r\n\r\n")
    return int(status.split(b" ", 2)[1]), content


def test_a_live_token_may_upload_more_than_the_anonymous_cap(server):
    status, content = upload(server, f"Authorization: Bearer {server.write}\r\n", 300 * KB)

    # It reached the upload service, which read the whole pack: all blanks.
    assert status == 400, content[:300]
    assert "is empty" in json.loads(content)["detail"]


@pytest.mark.parametrize("authorization", ["", "Authorization: Bearer pa_made-up\r\n", "revoked"])
def test_without_a_live_token_a_large_upload_is_refused_at_the_edge(server, authorization):
    if authorization == "revoked":
        authorization = f"Authorization: Bearer {server.revoked}\r\n"

    status, content = upload(server, authorization, 300 * KB)

    assert status == 413
    assert b"Log in first" in content


def test_the_api_answers_a_token_client_over_http(server):
    request = urllib.request.Request(
        f"{server.url}/api/v1/codebases", headers={"Authorization": f"Bearer {server.read}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        assert json.loads(response.read()) == {"items": [], "count": 0}
