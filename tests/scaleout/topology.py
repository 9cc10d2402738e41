"""Start and stop the processes of the scaled topology: ASGI servers (daphne) and Celery
workers, each a real OS process sharing one PostgreSQL database and one Redis. Used by the
scale-out tests and by bench/scaleout/load.py."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:
        return False


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int = 0

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def terminate(self) -> None:
        """SIGTERM to the main process only (a Celery worker then shuts its pool down)."""
        if self.popen.poll() is None:
            self.popen.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=20)
        self.kill()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group: a Celery worker's pool children die with it."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
        try:
            self.popen.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)


@dataclass
class Topology:
    """Processes started with one environment (DATABASE_URL, REDIS_URL, …)."""

    env: dict[str, str]
    logs: Path
    procs: list[Proc] = field(default_factory=list)
    procs_seen: list[Proc] = field(default_factory=list)

    def _start(self, name: str, argv: list[str], port: int = 0) -> Proc:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                argv,
                cwd=ROOT,
                # As in tests/conftest.py: the scripted sessions here script no evidence plan.
                env={**os.environ, "PLANAGENTS_EVIDENCE_STEPS": "0", **self.env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so kill() reaches children
            )
        proc = Proc(name, popen, log, port)
        self.procs.append(proc)
        self.procs_seen.append(proc)
        return proc

    def server(self, name: str = "web", port: int | None = None) -> Proc:
        port = port or free_port()
        argv = [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port)]
        proc = self._start(name, [*argv, "planagents.asgi:application"], port)
        _wait(lambda: _listening(port), proc, f"{name} listening on {port}")
        return proc

    def worker(self, name: str = "worker", concurrency: int = 1) -> Proc:
        argv = [str(BIN / "celery"), "-A", "planagents", "worker", "-n", f"{name}@%h"]
        argv += ["--pool", "prefork", "-c", str(concurrency), "-l", "INFO", "--without-mingle"]
        argv += ["--without-gossip"]
        proc = self._start(name, argv)
        _wait(lambda: " ready." in proc.text(), proc, f"{name} ready")
        return proc

    def llm_server(self, profiles: str = "local-tiny") -> tuple[Proc, str]:
        """The machine's one model server (manage.py llm_server) and its base address, which
        the processes started after it reach (PLANAGENTS_LLM_SERVER in their environment)."""
        base = free_port()
        argv = [sys.executable, "manage.py", "llm_server", "--profiles", profiles]
        proc = self._start("llm", [*argv, "--port", str(base)])
        _wait(lambda: "llm_server: ready" in proc.text(), proc, "llm_server ready", 300)
        url = f"http://127.0.0.1:{base}"
        self.env["PLANAGENTS_LLM_SERVER"] = url
        return proc, url

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        self.procs.clear()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait(ready, proc: Proc, what: str, timeout: float = 90) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if proc.popen.poll() is not None:
            raise RuntimeError(
                f"{proc.name} exited ({proc.popen.returncode}):\n{proc.text()[-3000:]}"
            )
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}:\n{proc.text()[-3000:]}")
