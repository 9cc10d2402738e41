"""The codebase page's file tree in a real browser: folders open in place, one level at a time,
and file names stay text."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from playwright.sync_api import sync_playwright

from rag.models import Codebase, CodeFile
from tests.browser.live import CHROMIUM, CHROMIUM_ARGS, needs_chromium

HOSTILE = '<img src=x onerror="alert(1)">.py'

pytestmark = needs_chromium()


def test_folders_open_in_place_and_names_stay_text(live_server, transactional_db):
    user = get_user_model().objects.create_user("walker", password="walker-pass-123")
    codebase = Codebase.objects.create(owner=user, name="tree", status="ready")
    CodeFile.objects.bulk_create(
        CodeFile(codebase=codebase, path=path, sha256="x", line_count=3, content="x\n")
        for path in ["README.md", "pkg/mod/deep.py", f"pkg/{HOSTILE}", "pkg/api.py"]
    )
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.set_default_timeout(10_000)
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{live_server.url}/accounts/login/?next=/codebases/{codebase.pk}/")
        page.fill("input[name=username]", "walker")
        page.fill("input[name=password]", "walker-pass-123")
        page.click("button[type=submit]")
        page.wait_for_selector("#file-tree")
        assert page.locator("#file-tree a", has_text="api.py").count() == 0

        page.click("details[data-folder='pkg/'] > summary")
        page.wait_for_selector("details[data-folder='pkg/'][data-loaded='yes']")
        folder = page.locator("details[data-folder='pkg/']")
        assert folder.locator("a", has_text="api.py").get_attribute("href") == (
            f"/codebases/{codebase.pk}/file/pkg/api.py"
        )
        assert folder.locator("a", has_text=HOSTILE).count() == 1
        assert page.locator("#file-tree img").count() == 0

        page.click("details[data-folder='pkg/mod/'] > summary")
        page.wait_for_selector("details[data-folder='pkg/mod/'][data-loaded='yes']")
        assert page.locator("details[data-folder='pkg/mod/'] a", has_text="deep.py").count() == 1
        browser.close()
    assert dialogs == []
