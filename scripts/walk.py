"""A new user's walk on a real project with the real default model, in Debian's chromium.

    .venv/bin/python scripts/walk.py PACK TASK_FILE [--second PACK2] [--out DIR] [--shots]

Serves the app as `make run` does (embedded defaults: SQLite, in-memory channel layer,
in-process jobs, the default local model, no keys) from a fresh data folder, then through the
pages: logs in, uploads PACK (a Repomix pack or a zip), starts a planning session with the
default profiles on the task in TASK_FILE, approves the checkpoint when it comes, and waits
for the end. With --second, PACK2 is uploaded right after the session starts, so a second job
(its indexing) runs beside the session, as on a shared machine.

Writes to --out (default var/walk-<pack name>): each page's visible text (session, plan,
codebase, Models), the plan's markdown download, `walk.json` (times, status, the plan's quality
line, the load average at each step), and screenshots of the session and plan pages. With
--shots the screenshots also replace the README's (docs/screenshots/walk-*.png).
Not a test: it reads what the real model wrote, for a person to judge.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.live import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    PASSWORD,
    USERNAME,
    _free_port,
    _wait_for_port,
    prepare,
)

WIDE = {"width": 1366, "height": 900}
NARROW = {"width": 390, "height": 844}
HOUR_MS = 3_600_000


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The app as scripts/run.sh serves it, on a free port, with its data in `folder`."""
    env = {**os.environ, "PLANAGENTS_DATA_DIR": str(folder), "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DJANGO_DEBUG": "0",
           "DJANGO_ALLOWED_HOSTS": "127.0.0.1"}  # fmt: skip
    for name in ("DJANGO_SETTINGS_MODULE", "REDIS_URL", "DATABASE_URL", "PLANAGENTS_FAKE_LLM"):
        env.pop(name, None)
    prepare(env)
    port = _free_port()
    log = open(folder / "server.log", "wb")  # noqa: SIM115 (lives as long as the server)
    daphne = str(Path(sys.executable).with_name("daphne"))
    proc = subprocess.Popen(
        [daphne, "-b", "127.0.0.1", "-p", str(port), "planagents.asgi:application"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    _wait_for_port(port, proc, folder / "server.log")
    return proc, f"http://127.0.0.1:{port}"


def upload(page: Any, url: str, pack: Path, name: str) -> None:
    page.goto(url + "/codebases/upload/")
    page.fill("input[name=name]", name)
    page.set_input_files("input[type=file]", str(pack))
    page.click("main form button[type=submit]")


def text_of(page: Any, out: Path, name: str) -> str:
    text = str(page.locator("main").inner_text())
    (out / f"{name}.txt").write_text(text)
    return text


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("pack", type=Path)
    parser.add_argument("task", type=Path)
    parser.add_argument("--second", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--shots", action="store_true")
    args = parser.parse_args()
    name = args.pack.stem
    out = args.out or ROOT / "var" / f"walk-{name}"
    out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="walk-", dir=ROOT / "var"))
    facts: dict[str, Any] = {"pack": str(args.pack), "task": args.task.read_text(), "loads": {}}
    proc, url = serve(folder)
    started = time.monotonic()

    def mark(step: str) -> None:
        facts["loads"][step] = {"at_s": round(time.monotonic() - started, 1), "load": load()}
        print(f"{facts['loads'][step]['at_s']:>7}s  {step}  (load average {load()})", flush=True)

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport=WIDE)  # type: ignore[arg-type]
            page = context.new_page()
            page.goto(url + "/accounts/login/")
            page.fill("input[name=username]", USERNAME)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            upload(page, url, args.pack, name)
            expect(page.locator("#codebase-status")).to_have_text("Ready", timeout=HOUR_MS)
            mark("codebase ready")
            codebase_url = page.url
            page.goto(url + "/sessions/new/")
            page.select_option("select[name=mode]", "planning")
            page.fill("textarea[name=task]", args.task.read_text())
            page.click("#new-session button[type=submit]")
            page.wait_for_url("**/sessions/*/")
            session_url = page.url
            mark("session started")
            if args.second:
                other = context.new_page()  # the same login
                upload(other, url, args.second, args.second.stem)
                mark("second upload sent (its indexing runs beside the session)")
            approve = page.locator("#checkpoint button[data-action=approve]")
            expect(approve).to_be_visible(timeout=HOUR_MS)
            mark("checkpoint")
            page.screenshot(path=str(out / "checkpoint-1366.png"), full_page=False)
            approve.click()
            badge = page.locator("#status-badge")
            expect(badge).to_have_text("Agents are working", timeout=60_000)
            expect(badge).not_to_have_text("Agents are working", timeout=HOUR_MS)
            facts["status"] = badge.inner_text().strip()
            mark(f"session ended: {facts['status']}")
            page.reload()
            text_of(page, out, "session")
            page.screenshot(path=str(out / "session-1366.png"), full_page=True)
            page.set_viewport_size(NARROW)  # type: ignore[arg-type]
            page.evaluate("window.scrollTo(0, 0)")  # a phone opens the page at its top
            page.screenshot(path=str(out / "session-390.png"), full_page=False)
            page.set_viewport_size(WIDE)  # type: ignore[arg-type]
            page.goto(session_url + "plan/")
            plan_text = text_of(page, out, "plan")
            page.screenshot(path=str(out / "plan-1366.png"), full_page=True)
            facts["quality"] = next(
                (line for line in plan_text.splitlines() if "steps ·" in line or "step ·" in line),
                "",
            )
            with page.expect_download() as download:
                page.locator("a[download], a[href$='.md']").first.click()
            download.value.save_as(str(out / "plan.md"))
            page.goto(codebase_url)
            text_of(page, out, "codebase")
            page.goto(url + "/sessions/models/")
            text_of(page, out, "models")
            browser.close()
    finally:
        facts["seconds"] = round(time.monotonic() - started, 1)
        (out / "walk.json").write_text(json.dumps(facts, indent=2))
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.copy(folder / "server.log", out / "server.log")
    if args.shots:
        shots = ROOT / "docs" / "screenshots"
        for picture in ("session-1366", "session-390", "plan-1366", "checkpoint-1366"):
            shutil.copy(out / f"{picture}.png", shots / f"walk-{picture}.png")
    print(f"walk: {facts.get('status')} in {facts['seconds']} s; pages in {out}")


if __name__ == "__main__":
    main()
