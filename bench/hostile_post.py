"""Can one anonymous client with a huge POST stall everyone else? Page latency of a second client,
idle and while an attacker sends oversized bodies, against the server `make run` starts.

    .venv/bin/python bench/hostile_post.py [--mb 100] [--seconds 6]

Starts scripts/run.sh (the real entry point: migrate, bootstrap, daphne) on a free port with its
own data folder, then measures GET /accounts/login/ every 20 ms from one thread:

- `idle`: nobody else is talking to the server;
- `content-length`: another thread sends anonymous multipart POSTs (a --mb MB file, with the
  CSRF cookie and token anyone can get, so Django would parse it) and an honest
  Content-Length, back to back, for --seconds;
- `chunked`: the same bodies with Transfer-Encoding: chunked (no length known up front);
- `forged-cookie`: the content-length attack on the upload page with a made-up session cookie.

It prints the page latency (median, p95, max) for each, and what the attacker got back.
Not a test: numbers depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = "/accounts/login/"
GAP = 0.02  # seconds between page requests
BLOCK = b"x" * (1024 * 1024)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(port: int, data_dir: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PLANAGENTS_PORT": str(port),
        "PLANAGENTS_DATA_DIR": str(data_dir),
        # No model is needed to serve pages: keep bootstrap from assembling the GGUF weights.
        "PLANAGENTS_FAKE_LLM": "1",
        "PLANAGENTS_DEFAULT_PROFILE": "fake",
    }
    log = (data_dir / "server.log").open("wb")
    return subprocess.Popen(
        [str(ROOT / "scripts" / "run.sh")],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def get_page(port: int) -> tuple[int, float]:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", PAGE)
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - start
    finally:
        conn.close()


def wait_until_up(port: int, server: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}; see its server.log")
        try:
            if get_page(port)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("the server did not answer within the deadline")


@dataclass(frozen=True)
class Phase:
    """One way to attack: where to, with what framing, with what extra cookie."""

    name: str
    target: str = "/accounts/login/"
    chunked: bool = False
    cookie: str = ""


PHASES = [
    Phase("idle"),
    Phase("content-length"),
    Phase("chunked", chunked=True),
    # A made-up session cookie gets past daphne's anonymous cap to the upload page's; the
    # ASGI guard then finds no login behind it.
    Phase("forged-cookie", target="/codebases/upload/", cookie="; sessionid=forged"),
]


@dataclass
class Attack:
    """What the attacker saw: one entry per POST."""

    statuses: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    sent_mb: list[float] = field(default_factory=list)


def read_status(sock: socket.socket) -> str:
    sock.settimeout(120)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        return f"no reply ({type(exc).__name__})"
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    return line.split(" ", 2)[1] if line.startswith("HTTP/") else "no reply (closed)"


def csrf_token(port: int) -> str:
    """A CSRF cookie anyone gets from the login page: with it Django parses the body it is sent."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", PAGE)
        response = conn.getresponse()
        response.read()
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            if name.strip() == "csrftoken":
                return rest.split(";", 1)[0]
    finally:
        conn.close()
    raise SystemExit("the login page set no csrftoken cookie")


def multipart(token: str, size: int) -> tuple[bytes, bytes, int]:
    """(head, tail, total length) of a form with the CSRF token and one `size`-byte file."""
    boundary = "hostilepostboundary"
    head = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n'
        f"{token}\r\n"
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="pack"; filename="big.xml"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return head, tail, len(head) + size + len(tail)


def hostile_post(port: int, size: int, phase: Phase) -> tuple[str, float, float]:
    """One anonymous multipart POST with a `size`-byte file and a valid CSRF cookie and token.

    Returns (status, seconds, MB sent before the server stopped reading)."""
    token = csrf_token(port)
    start = time.perf_counter()
    head, tail, total = multipart(token, size)
    chunked = phase.chunked
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    request = (
        f"POST {phase.target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Cookie: csrftoken={token}{phase.cookie}\r\n"
        "Content-Type: multipart/form-data; boundary=hostilepostboundary\r\n"
    )
    request += "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {total}\r\n"
    parts = [head] + [BLOCK] * (size // len(BLOCK)) + [BLOCK[: size % len(BLOCK)], tail]
    sent = 0
    try:
        sock.sendall((request + "\r\n").encode())
        for part in parts:
            if not part:
                continue
            sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n" if chunked else part)
            sent += len(part)
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server stopped reading and closed: what a cap should do
    status = read_status(sock)
    sock.close()
    return status, time.perf_counter() - start, sent / 1e6


def attacker(port: int, size: int, phase: Phase, stop: threading.Event, out: Attack) -> None:
    for _ in range(5000):  # bounded in count, and by the phase's length
        if stop.is_set():
            return
        status, seconds, sent = hostile_post(port, size, phase)
        out.statuses.append(status)
        out.seconds.append(seconds)
        out.sent_mb.append(sent)


def probe(port: int, seconds: float, attack: Attack | None, size: int, phase: Phase) -> list[float]:
    """Page latencies for `seconds`, with an attacker running alongside when `attack` is given."""
    stop = threading.Event()
    thread = None
    if attack is not None:
        thread = threading.Thread(
            target=attacker, args=(port, size, phase, stop, attack), daemon=True
        )
        thread.start()
    latencies: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        status, latency = get_page(port)
        if status != 200:
            raise SystemExit(f"the page answered {status} under attack")
        latencies.append(latency)
        time.sleep(GAP)
    stop.set()
    if thread is not None:
        thread.join(timeout=300)
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="size of each hostile body in MB")
    parser.add_argument("--seconds", type=float, default=6.0, help="length of each phase")
    args = parser.parse_args()
    size = args.mb * 1024 * 1024

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="hostile-post-") as tmp:
        server = start_server(port, Path(tmp))
        try:
            wait_until_up(port, server, time.monotonic() + 600)
            for _ in range(20):  # warm up: first renders compile templates
                get_page(port)
            rows = []
            for phase in PHASES:
                attack = None if phase.name == "idle" else Attack()
                latencies = probe(port, args.seconds, attack, size, phase)
                rows.append((phase.name, latencies, attack))
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)

    print(f"page GET {PAGE} every {GAP * 1000:.0f} ms; attacker: anonymous POSTs of {args.mb} MB")
    print(f"{'phase':<15} {'pages':>5} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}  attacker")
    for name, latencies, attack in rows:
        seen = "-"
        if attack is not None and attack.statuses:
            counts = {s: attack.statuses.count(s) for s in dict.fromkeys(attack.statuses)}
            seen = (
                f"{len(attack.statuses)} POSTs, replies {counts}, "
                f"median {statistics.median(attack.seconds) * 1000:.0f} ms each, "
                f"sent median {statistics.median(attack.sent_mb):.1f} MB"
            )
        print(
            f"{name:<15} {len(latencies):>5} {statistics.median(latencies) * 1000:>10.1f} "
            f"{percentile(latencies, 0.95) * 1000:>8.1f} {max(latencies) * 1000:>8.1f}  {seen}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
