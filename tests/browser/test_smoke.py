"""A real browser walks the product: log in, upload a Repomix pack, plan, approve, get the plan.

The server is the real ASGI app under daphne in its own process (its own SQLite, in-memory
channel layer, in-process jobs); only the LLM is the scripted provider. A screenshot of the
finished session is saved under artifacts/."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--no-first-run", "--disable-component-update", "--disable-sync",
]  # fmt: skip

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make setup)"
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("browser-data")
    env = {
        **os.environ,
        "PLANAGENTS_DATA_DIR": str(data),
        "PLANAGENTS_FAKE_LLM": "1",
        "PLANAGENTS_FAKE_LLM_DELAY": "0.01",
        "PLANAGENTS_DEFAULT_PROFILE": "fake",
        "DJANGO_SUPERUSER_PASSWORD": "browser-pass-123",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True, capture_output=True)
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", "walker", "--email", "w@example.com"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    port = _free_port()
    log = open(data / "server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "planagents.asgi:application"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the server did not start: " + (data / "server.log").read_text()[-2000:])
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def test_a_new_user_uploads_plans_and_approves_in_a_real_browser(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    page.goto(server + "/")
    page.fill("input[name=username]", "walker")
    page.fill("input[name=password]", "browser-pass-123")
    page.click("button[type=submit]")
    expect(page.get_by_text("Log out walker")).to_be_visible()

    page.goto(server + "/codebases/upload/")
    page.fill("input[name=name]", "todo-api")
    page.set_input_files("input[type=file]", str(PACK))
    page.click("main form button[type=submit]")
    # The detail page shows progress, then the file tree once indexed.
    expect(page.locator(".tree")).to_be_visible(timeout=120_000)
    expect(page.get_by_text("todo-api").first).to_be_visible()

    page.goto(server + "/sessions/new/")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake")
    page.fill("textarea[name=task]", "Add rate limiting to the login endpoint")
    page.click("#new-session button[type=submit]")

    # Tokens stream into Agent A's first message, labelled with its node.
    first = page.locator("article.msg.agent-A").first
    expect(first.locator(".node")).to_have_text("analyze_codebase")
    expect(first.locator(".body")).not_to_be_empty()
    expect(page.locator("#conn")).to_have_text("live")

    approve = page.locator("#checkpoint button[data-action=approve]")
    expect(approve).to_be_visible(timeout=90_000)
    assert page.locator("article.msg.agent-B").count() >= 1
    expect(page.locator("article.msg.role-system").first).to_contain_text("Validation")
    approve.click()

    expect(page.locator("#status-badge")).to_have_text("Completed", timeout=90_000)
    expect(page.locator("#plan .plan-files li").first).to_contain_text("exists")
    expect(page.locator("#plan a[download]")).to_be_visible()
    expect(page.locator("#running")).to_be_hidden()

    # A reload shows the whole conversation again, from the database.
    count = page.locator("article.msg").count()
    page.reload()
    expect(page.locator("article.msg")).to_have_count(count)

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser-session.png"), full_page=True)

    # The full plan page renders every section, and the plan downloads as markdown.
    page.click("#plan a:has-text('Open')")
    for heading in ("Summary", "Decisions", "Steps", "Files", "Testing", "Risks", "Effort"):
        expect(page.locator(".plan-page h2", has_text=heading)).to_be_visible()
    with page.expect_download() as download:
        page.click(".plan-page a[download]")
    assert download.value.suggested_filename.endswith("-v1.md")
