"""Issue 19 in a real browser: the pages say only what happened and fit a phone. A greeting
ends "Answered" with no workflow panel, task analysis or Plan card talk; at 390 px the codebase
page, the new-session form and the session page fit without sideways scrolling, the form asks
for debate exchanges only in debate mode, and the session page opens on its conversation, not
on the sidebar stacked below it; after logout the page says it is signed out and stops
retrying."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser.live import WAIT, log_in, needs_chromium, serve, start_planning

pytestmark = needs_chromium()
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("truthful-data")) as running:
        yield running


def page_width(page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_a_greeting_ends_answered_with_no_workflow_analysis_or_plan_card(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(WAIT)
    start_planning(page, server, "hi")

    expect(page.locator("#status-badge")).to_have_text("Completed")
    expect(page.locator("#ended-label")).to_have_text(
        "Answered. Ask another question or describe a change in a new session."
    )
    expect(page.locator("article.msg.agent-A .node")).to_have_text("answer")
    expect(page.locator("#workflow-panel")).to_be_hidden()
    expect(page.locator("#task-analysis")).to_have_count(0)
    assert "Plan card" not in page.inner_text("main")
    assert "Step 1 of" not in page.inner_text("main")


def phone_pack(folder: Path) -> Path:
    long = "src/averyveryverylongpackagename_withoutanybreaks/subpackage_with_a_long_name/"
    files = {
        long + "module_with_an_extremely_long_name_for_testing_the_layout.py": "X = 1\n",
        "webby/__init__.py": "from webby.packages.urllib3 import Pool\n",
        "webby/api.py": "from webby import packages\n",
        "webby/packages/__init__.py": "",
        "webby/packages/urllib3/__init__.py": "from .pool import Pool\n__version__ = '1.10'\n",
        "webby/packages/urllib3/pool.py": "class Pool:\n    pass\n",
    }
    path = folder / "phone-pack.json"
    path.write_text(json.dumps({"directoryStructure": "\n".join(files), "files": files}))
    return path


def test_at_a_phone_width_the_pages_fit_and_the_form_asks_only_what_the_mode_needs(
    server, browser, tmp_path
):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=PHONE)
    page.set_default_timeout(WAIT)
    session_id = start_planning(page, server, "Add rate limiting to the login endpoint")

    # A codebase with a long unbroken path and a vendored copy (whose table once made the page
    # 441 px wide at this viewport).
    page.goto(server.url + "/codebases/upload/")
    page.fill("input[name=name]", "phone-pack")
    page.set_input_files("input[type=file]", str(phone_pack(tmp_path)))
    page.click("main form button[type=submit]")
    expect(page.locator(".tree")).to_be_visible(timeout=WAIT)
    expect(page.locator("#roles table.roles")).to_be_visible()
    for folder in page.query_selector_all(".tree details:not([open]) summary"):
        folder.click()
    page.wait_for_timeout(1000)  # the folders' rows load
    assert page_width(page) <= PHONE["width"]

    page.goto(server.url + "/sessions/new/")
    exchanges = page.locator("input[name=max_exchanges]")
    page.select_option("select[name=mode]", "planning")
    expect(exchanges).to_be_hidden()
    page.select_option("select[name=mode]", "debate")
    expect(exchanges).to_be_visible()
    assert page_width(page) <= PHONE["width"]

    page.goto(f"{server.url}/sessions/{session_id}/")
    expect(page.locator("#conn")).to_have_text("live")
    page.wait_for_timeout(500)
    # The page may scroll to the end of the conversation and its controls, never past it to
    # the sidebar stacked below them.
    end = page.evaluate(
        "document.getElementById('controls').getBoundingClientRect().bottom + window.scrollY"
    )
    assert page.evaluate("window.scrollY") <= max(0, end - PHONE["height"]) + 1
    assert page_width(page) <= PHONE["width"]


def test_after_logout_the_page_says_signed_out_and_stops_retrying(server, browser):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    log_in(page, server)
    session_id = start_planning(page, server, "thanks")
    expect(page.locator("#conn")).to_have_text("live")

    other = context.new_page()
    other.goto(f"{server.url}/sessions/{session_id}/")
    other.click("text=Log out")
    other.wait_for_url("**/")

    expect(page.locator("#conn")).to_have_text("Signed out — log in again")
    expect(page.locator("#error a", has_text="Log in again")).to_be_visible()
    page.wait_for_timeout(1500)  # a retry would have begun by now
    expect(page.locator("#conn")).to_have_text("Signed out — log in again")
    assert "retrying" not in page.inner_text("main")
    context.close()
