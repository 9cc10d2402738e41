"""A real browser finishes a plan on its page: edit a section (with its preview), get version 2
made by that human, see it side by side with version 1 (at desktop width and on a phone), and
export the hand-off prompt of the new version."""

from __future__ import annotations

import pytest

from tests.browser.live import ROOT, log_in, needs_chromium, serve

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
SHOTS = ROOT / "artifacts"
NEW_SUMMARY = "Throttle failed logins per account and per address, answering 429."

pytestmark = needs_chromium()


def _box(locator):
    box = locator.bounding_box()
    assert box is not None
    return box


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("plan-edit-data")) as running:
        yield running


def test_a_human_edits_a_section_sees_version_2_and_its_diff_and_exports_it(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.set_default_timeout(30_000)
    log_in(page, server)
    page.goto(server.url + "/codebases/upload/")
    page.fill("input[name=name]", "todo-api")
    page.set_input_files("input[type=file]", str(PACK))
    page.click("main form button[type=submit]")
    expect(page.locator(".tree")).to_be_visible(timeout=120_000)

    page.goto(server.url + "/sessions/new/")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake")
    page.fill("textarea[name=task]", "Add rate limiting to the login endpoint")
    page.click("#new-session button[type=submit]")
    page.locator("#checkpoint button[data-action=approve]").click(timeout=120_000)
    expect(page.locator("#status-badge")).to_have_text("Completed", timeout=120_000)
    page.click("#plan a:has-text('Open')")
    plan_url = page.url.split("?")[0]

    # Edit the summary: the preview shows it, nothing is saved until Save.
    page.click("#section-summary a:has-text('Edit')")
    page.fill("#edit-summary", NEW_SUMMARY)
    page.click("#section-summary button[name=preview]")
    expect(page.locator(".section-preview")).to_contain_text(NEW_SUMMARY)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "plan-edit-preview.png"))
    expect(page.locator(".plan-versions li")).to_have_count(1)
    page.click("#section-summary button[name=save]")

    expect(page.locator(".flash")).to_contain_text("Saved as v2.")
    expect(page.locator(".plan-author")).to_have_text("v2: Human edit by walker — Edited Summary")
    expect(page.locator(".plan-page .md", has_text=NEW_SUMMARY).first).to_be_visible()
    expect(page.locator(".plan-versions li")).to_have_count(2)
    expect(page.locator(".plan-checks")).to_contain_text("Checked against the codebase for v2")
    page.screenshot(path=str(SHOTS / "plan-edit-v2.png"), full_page=True)

    # The diff: v1 on the left, v2 on the right, each headed with who made it; the summary's
    # words struck out on the left and added on the right, the rest folded to one line.
    page.click(".plan-versions a:has-text('changes from v1')")
    expect(page.locator(".diff-authors")).to_contain_text("v2: Human edit by walker")
    expect(page.locator(".diff-head.old")).to_contain_text("v1")
    expect(page.locator(".diff-head.old")).to_contain_text("Agents")
    expect(page.locator(".diff-head.new")).to_contain_text("v2")
    expect(page.locator(".diff-head.new")).to_contain_text("Human edit by walker — Edited Summary")
    changed = page.locator(".diff-section.changed", has_text="Summary")
    old, new = changed.locator(".diff-side.old"), changed.locator(".diff-side.new")
    expect(new.locator("ins").last).to_contain_text("per address, answering 429.")
    expect(old.locator("del").first).to_be_visible()
    expect(old.locator("ins")).to_have_count(0)
    expect(new.locator("del")).to_have_count(0)
    expect(new).not_to_contain_text("**")
    left, right = _box(old), _box(new)
    assert left["x"] + left["width"] <= right["x"] and left["y"] == right["y"], (left, right)
    steps = page.locator("details.diff-section.unchanged", has_text="Steps — unchanged")
    expect(steps.locator(".diff-same").first).to_be_hidden()
    steps.locator("summary").click()
    expect(steps.locator(".diff-same").first).to_be_visible()
    page.screenshot(path=str(SHOTS / "plan-edit-diff.png"), full_page=True)
    # On a phone the columns stack, v1 above v2, and nothing scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    top, bottom = _box(old), _box(new)
    assert top["y"] + top["height"] <= bottom["y"], (top, bottom)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(SHOTS / "plan-edit-diff-390.png"), full_page=True)
    page.set_viewport_size({"width": 1300, "height": 1000})

    # Back on the plan page of the newer version: its hand-off prompt carries the edit.
    page.click(".plan-compare .plan-head a:has-text('Plan v2')")
    expect(page.locator(".plan-author")).to_contain_text("v2:")
    page.click(".plan-exports li:has-text('Hand-off') a:has-text('View')")
    assert NEW_SUMMARY in page.locator("body").inner_text()
    assert page.url.endswith("version=2")

    # Regenerate a step: Agent A's turn streams on the session page, and v3 appears there.
    page.goto(plan_url)
    page.click("#section-step-1 summary:has-text('Regenerate')")
    page.fill("#section-step-1 input[name=instruction]", "split it in two")
    page.click("#section-step-1 button:has-text('Regenerate Step 1')")
    turn = page.locator("article.msg.agent-A", has_text="Rewriting Step 1 of plan v2")
    expect(turn.locator(".node")).to_have_text("regenerate_section")
    expect(page.locator("#plan")).to_contain_text("Regenerated Step 1: split it in two")
    page.screenshot(path=str(SHOTS / "plan-regenerated.png"), full_page=True)

    # Share a read-only link and open it in a fresh browser with no account: the plan is
    # there, every version is one click away, and no other page of the app is reachable.
    page.goto(plan_url)
    page.check(".plan-share input[name=pin][value=latest]")  # every version, not one pinned
    page.click(".plan-share button:has-text('Create link')")
    link = page.locator(".plan-share input[aria-label='Share link']").input_value()
    assert link.startswith(server.url + "/sessions/s/")
    stranger = browser.new_context()
    other = stranger.new_page()
    other.set_default_timeout(30_000)
    other.goto(link)
    expect(other.locator("body")).to_contain_text(NEW_SUMMARY)
    expect(other.locator("body")).to_contain_text(
        "Regenerated — Regenerated Step 1: split it in two"
    )
    expect(other.locator("body")).not_to_contain_text("Log out")
    hrefs = set(other.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"))
    assert any("version=1" in href for href in hrefs)
    for href in sorted(hrefs):
        if not href.startswith(server.url) or href.startswith(link.split("?")[0]):
            continue  # the shared plan's own versions; nothing else of the app
        response = other.goto(href)
        assert "/accounts/login/" in other.url or (response and response.status == 404), href
    for path in ("/sessions/", "/codebases/", link.replace(server.url, "").replace("/s/", "/s/x")):
        response = other.goto(server.url + path)
        assert "/accounts/login/" in other.url or (response and response.status == 404), path
    stranger.close()
