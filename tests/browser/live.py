"""What the browser tests share: the real ASGI app under daphne in its own process (its own
SQLite, in-memory channel layer, in-process jobs; only the LLM is the scripted provider), and
how to reach it from Debian's chromium."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--no-first-run", "--disable-component-update", "--disable-sync",
]  # fmt: skip
USERNAME, PASSWORD = "walker", "browser-pass-123"  # a superuser, so the admin is reachable too
STARTUP_SECONDS = 60
PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
"""The fixture pack the browser walks upload."""
WAIT = 120_000  # ms any one condition may take on two busy cores
LAUNCHER = Path(__file__).with_name("scripted_server.py")


def needs_chromium() -> list[Any]:
    """The marks every browser test module carries. Without chromium they skip, except under
    CI=true, where a skipped browser test fails (tests/conftest.py)."""
    return [
        pytest.mark.browser,
        pytest.mark.skipif(
            not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make setup)"
        ),
    ]


@dataclass(frozen=True)
class Server:
    url: str
    folder: Path  # the server's data; the files of held replies live here too

    def reached(self, hold: str) -> bool:
        """Whether the held reply `hold` has streamed up to its hold."""
        return (self.folder / f"{hold}.reached").exists()

    def release(self, hold: str) -> None:
        (self.folder / f"{hold}.release").touch()


def _env(folder: Path, delay: float) -> dict[str, str]:
    env = {
        **os.environ,
        "PLANAGENTS_DATA_DIR": str(folder),
        "PLANAGENTS_FAKE_LLM": "1",
        "PLANAGENTS_FAKE_LLM_DELAY": str(delay),
        "PLANAGENTS_DEFAULT_PROFILE": "fake",
        "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    for name in ("DJANGO_SETTINGS_MODULE", "REDIS_URL", "DATABASE_URL"):
        env.pop(name, None)  # the embedded default: one process serves everything
    return env


def django_shell(server: Server, code: str) -> str:
    """Run `code` in `manage.py shell` on the server's own database; what it printed. For
    rows no page makes quickly (a long history), written behind the server's back: nothing
    is published to the pages open on them."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "--verbosity", "0", "-c", code],
        env=_env(server.folder, 0), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def prepare(env: dict[str, str]) -> None:
    """A fresh data folder (env's PLANAGENTS_DATA_DIR) migrated, with the walker's login."""
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True, capture_output=True)
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", USERNAME, "--email", "w@example.com"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(
    folder: Path, *, script: dict[str, dict[str, list[Any]]] | None = None, delay: float = 0.01
) -> Iterator[Server]:
    """The app on a free port with `script` queued in the scripted provider (see
    scripted_server.py) and `delay` seconds between its streamed pieces."""
    env = _env(folder, delay)
    prepare(env)
    script_path = folder / "script.json"
    script_path.write_text(json.dumps(script or {}))
    port = _free_port()
    log_path = folder / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(LAUNCHER), str(script_path), str(port)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            _wait_for_port(port, proc, log_path)
            yield Server(f"http://127.0.0.1:{port}", folder)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail("the server did not start: " + log_path.read_text()[-2000:])


def log_in(page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    page.goto(server.url + "/accounts/login/")
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_text(f"Log out {USERNAME}")).to_be_visible()


def start_planning(page: Any, server: Server, task: str, *, pack_name: str = "walk-pack") -> int:
    """Log in if needed, upload the fixture pack as `pack_name` unless it is there already,
    and start a planning session on it with the scripted profile for both agents, as a user
    does through the forms; the new session's id."""
    from playwright.sync_api import expect

    if not page.url.startswith(server.url):
        log_in(page, server)
    page.goto(server.url + "/codebases/")
    if page.locator("a", has_text=pack_name).count() == 0:
        page.goto(server.url + "/codebases/upload/")
        page.fill("input[name=name]", pack_name)
        page.set_input_files("input[type=file]", str(PACK))
        page.click("main form button[type=submit]")
        expect(page.locator(".tree")).to_be_visible(timeout=WAIT)
    page.goto(server.url + "/sessions/new/")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake")
    page.fill("textarea[name=task]", task)
    page.click("#new-session button[type=submit]")
    page.wait_for_url("**/sessions/*/")
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def reach(page: Any, server: Server, hold: str) -> None:
    """Let the page take its frames until the job is parked at the hold `hold`."""
    for _ in range(WAIT // 20):
        if server.reached(hold):
            return
        page.wait_for_timeout(20)
    raise AssertionError(f"the {hold} hold was never reached")
