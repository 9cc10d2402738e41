"""A real browser walks the product: log in, upload a Repomix pack, plan, approve, get the plan.

The server is the real ASGI app under daphne in its own process (its own SQLite, in-memory
channel layer, in-process jobs); only the LLM is the scripted provider. A screenshot of the
finished session is saved under artifacts/."""

from __future__ import annotations

import pytest

from tests.browser.live import ROOT, log_in, needs_chromium, serve

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
ARTIFACTS = ROOT / "artifacts"

pytestmark = needs_chromium()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("browser-data")) as running:
        yield running


def test_a_new_user_uploads_plans_and_approves_in_a_real_browser(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    log_in(page, server)

    page.goto(server.url + "/codebases/upload/")
    page.fill("input[name=name]", "todo-api")
    page.set_input_files("input[type=file]", str(PACK))
    page.click("main form button[type=submit]")
    # The detail page shows progress, then the file tree once indexed.
    expect(page.locator(".tree")).to_be_visible(timeout=120_000)
    expect(page.get_by_text("todo-api").first).to_be_visible()

    page.goto(server.url + "/sessions/new/")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake")
    page.fill("textarea[name=task]", "Add rate limiting to the login endpoint")
    page.click("#new-session button[type=submit]")

    # Agent A's first message is its evidence plan, labelled with its node; its analysis
    # streams in after the evidence.
    first = page.locator("article.msg.agent-A").first
    expect(first.locator(".node")).to_have_text("investigate")
    expect(first.locator(".body")).not_to_be_empty()
    expect(page.locator("#conn")).to_have_text("live")

    approve = page.locator("#checkpoint button[data-action=approve]")
    expect(approve).to_be_visible(timeout=90_000)
    assert page.locator("article.msg.agent-B").count() >= 1
    expect(page.locator("article.msg.role-system", has_text="Validation").first).to_be_visible()
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


def test_the_estimate_follows_the_mode_and_models_chosen(server, browser):
    """The new-session form's estimate is the one of the selects' current choice: the page's
    script copies the matching table row's sentences, and says so when no row matches."""
    from playwright.sync_api import expect

    page = browser.new_page()
    page.set_default_timeout(30_000)
    log_in(page, server)
    page.goto(server.url + "/sessions/new/")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake")
    chosen = page.locator("#estimate-chosen")
    for mode in ("debate", "planning", "debate"):
        page.select_option("select[name=mode]", mode)
        row = page.locator(f'#estimate tr[data-mode="{mode}"][data-a="fake"][data-b="fake"]')
        summary = (row.get_attribute("data-summary") or "").strip()
        assert summary
        expect(chosen).to_have_text(summary)
        expect(page.locator("#estimate-for")).to_have_text(
            f"For {mode} mode, A on fake, B on fake."
        )
        expect(row).to_have_class("chosen")
    other = next(
        value
        for value in page.locator("select[name=agent_b_profile] option").evaluate_all(
            "options => options.map(o => o.value)"
        )
        if value != "fake"
    )
    page.select_option("select[name=agent_b_profile]", other)
    expect(chosen).to_contain_text("No estimate on this page for two different models")
    expect(page.locator("#estimate tr.chosen")).to_have_count(0)
