"""Codebases from git in a real browser against a real server: Add from git on the upload page
indexes the repository's commit with its secret withheld, and Sync after a new commit makes
version 2 naming the changed file."""

from __future__ import annotations

import pytest

from tests.browser.live import log_in, needs_chromium, serve
from tests.rag.git_repos import Repo

pytestmark = needs_chromium()

WAIT = 120_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLANAGENTS_GIT_ALLOW_LOCAL", "1")  # the repository is a local path
        with serve(tmp_path_factory.mktemp("live-git")) as running:
            yield running


def test_a_repository_is_added_from_git_and_synced(server, browser, tmp_path):
    from playwright.sync_api import expect

    repo = Repo(tmp_path / "shop")
    repo.commit(
        {
            "shop/auth.py": "def login(user):\n    return True\n",
            ".env": "STRIPE_SECRET_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n",
        },
        "first",
    )
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    log_in(page, server)
    page.goto(server.url + "/codebases/upload/")
    form = page.locator("#add-from-git form")
    form.locator("input[name=url]").fill(str(repo.bare))
    form.locator("input[name=ref]").fill("main")
    form.locator("button[type=submit]").click()

    expect(page.locator(".tree")).to_be_visible(timeout=WAIT)
    expect(page.locator("#git-source")).to_contain_text(str(repo.bare))
    expect(page.locator("main")).to_contain_text("Withheld from the agents (1)")
    expect(page.locator("main")).to_contain_text(".env")
    page.screenshot(path=str(server.folder / "git-added.png"), full_page=True)

    third = repo.commit({"shop/auth.py": "def login(user, ip):\n    return True\n"}, "ip")
    page.locator("#sync button[type=submit]").click()
    expect(page.locator("main")).to_contain_text("Versions (2)", timeout=WAIT)
    expect(page.locator("#git-source")).to_contain_text(third[:12])
    expect(page.locator("main")).to_contain_text("shop/auth.py")
    page.screenshot(path=str(server.folder / "git-synced.png"), full_page=True)
    print("screenshots in", server.folder)
    page.close()
