"""A real browser sees the code move under a plan and still finishes it on the plan page: a plan
resting on todo/auth.py, a new version of the codebase in which that file changed, the stale
warning naming the file and the step, Re-validate, then Approve plan."""

from __future__ import annotations

import json

import pytest

from tests.browser.live import ROOT, USERNAME, log_in, needs_chromium, serve

pytestmark = needs_chromium()

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
PATH = "todo/auth.py"
WAIT = 120_000
STEP = "Count failed logins in check_password"
PROPOSAL = {
    "summary": f"Count failed logins in `{PATH}`.",
    "steps": [{"title": STEP, "symbol": "none", "detail": f"Wrap `{PATH}:21`.", "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "the password check lives here"}],
}  # fmt: skip
PLAN = {
    "summary": "Refuse the sixth failed login within a minute.",
    "decisions": ["Keep counters in memory: one process serves the app."],
    "steps": [{"title": STEP, "symbol": "none", "detail": f"Wrap the check at `{PATH}:21`.", "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "the password check"}],
    "testing": ["A sixth failed login within a minute is refused."],
    "risks": ["Counters reset on restart."],
    "effort": {"size": "S", "estimate": "1 day"},
}  # fmt: skip
SCRIPT = {"fake": {"Proposal": [json.dumps(PROPOSAL)], "PlanDraft": [json.dumps(PLAN)]}}
OLD = 'def check_password(password: str, stored: str) -> bool:\n    salt_hex, _, digest_hex = stored.partition("$")'
NEW = 'def check_password(password: str, stored: str) -> bool:\n    if not stored:\n        return False\n    salt_hex, _, digest_hex = stored.partition("$")'
SCREENSHOT = ROOT / "docs" / "screenshots" / "plan-stale.png"
SHOTS = ROOT / "artifacts"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("plan-stale-data"), script=SCRIPT) as running:
        yield running


def test_a_plan_goes_stale_is_revalidated_and_approved_on_its_page(server, browser, tmp_path):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(30_000)
    log_in(page, server)
    page.goto(server.url + "/codebases/upload/")
    page.fill("input[name=name]", "todo-api")
    page.set_input_files("input[type=file]", str(PACK))
    page.click("main form button[type=submit]")
    expect(page.locator(".tree")).to_be_visible(timeout=WAIT)
    codebase_url = page.url

    page.goto(server.url + "/sessions/new/")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake")
    page.fill("textarea[name=task]", "Add rate limiting to login")
    page.click("#new-session button[type=submit]")
    page.locator("#checkpoint button[data-action=approve]").click(timeout=WAIT)
    expect(page.locator("#status-badge")).to_have_text("Completed", timeout=WAIT)
    page.click("#plan a:has-text('Open')")
    plan_url = page.url.split("?")[0]
    expect(page.locator("#plan-approval")).to_contain_text("Plan v1 is not approved.")
    expect(page.locator("#plan-stale")).to_have_count(0)  # written on this very code

    # A new version of the codebase in which the file the plan cites changed.
    text = PACK.read_text(encoding="utf-8")
    assert OLD in text
    changed = tmp_path / "sample.xml"
    changed.write_text(text.replace(OLD, NEW), encoding="utf-8")
    page.goto(codebase_url)
    page.set_input_files("#new-version input[type=file]", str(changed))
    page.click("#new-version button[type=submit]")
    expect(page.locator(".flash")).to_contain_text("New version uploaded")
    expect(page.locator("#codebase-status")).to_have_text("Ready", timeout=WAIT)

    # The plan page says what moved under the plan: the file, and the step resting on it.
    page.goto(plan_url)
    stale = page.locator("#plan-stale")
    expect(stale).to_contain_text("Stale: the code changed since this plan was written.")
    expect(stale.locator("li", has_text=PATH).first).to_be_visible()
    expect(stale).to_contain_text(f"1. {STEP} ({PATH})")
    expect(page.locator("#plan-approval button")).to_have_text("Approve plan v1")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))

    # Re-validate: the plan's files and citations checked against the new code.
    stale.locator("a:has-text('Re-validate')").click()
    verdict = page.locator("#revalidate-verdict")
    expect(verdict).to_contain_text("stale")
    expect(verdict).to_contain_text("1 file the plan rests on changed")
    expect(page.locator("#revalidate")).to_contain_text(f"{STEP} ({PATH})")
    expect(page.locator("#revalidate table.data")).to_contain_text(PATH)
    page.click("#revalidate a:has-text('← Plan v1')")

    # Approve the plan as a whole, without leaving the plan page.
    page.click("#plan-approval button:has-text('Approve plan v1')")
    expect(page.locator(".flash")).to_contain_text("Plan v1 approved.")
    approval = page.locator("#plan-approval")
    expect(approval).to_contain_text(f"Plan v1 is approved by {USERNAME} on")
    expect(approval).to_contain_text("sections were not individually approved")
    expect(approval.locator("button")).to_have_count(0)
    expect(page.locator(".plan-versions li").first).to_contain_text(f"Approved by {USERNAME}")
    expect(page.locator("#plan-stale")).to_be_visible()  # approval does not hide the warning
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "plan-stale-approved.png"), full_page=True)
