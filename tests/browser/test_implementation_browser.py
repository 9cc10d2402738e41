"""A real browser checks an implementation against an approved plan: a plan whose step targets
`check_password` in the fixture pack with a checked sketch, approved; a pasted diff that does
what the sketch says (and touches a file no step names) is reported done with its hunk and the
unplanned file; a diff that does not apply is refused in git's words; a newer version of the
codebase that leaves the target alone is "not done", and the next one, with the fix, moves it
to done; the report is in the plan's markdown export."""

from __future__ import annotations

import json

import pytest

from tests.browser.live import ROOT, log_in, needs_chromium, serve

pytestmark = needs_chromium()

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
PATH = "todo/auth.py"
WAIT = 120_000
STEP = "Refuse an empty stored hash in check_password"
TASK = "Make `check_password` refuse an empty stored hash"
PROPOSAL = {
    "summary": f"Refuse an empty stored hash in `{PATH}`.",
    "steps": [{"title": STEP, "symbol": "check_password", "detail": f"At `{PATH}:21`.",
               "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "the password check lives here"}],
}  # fmt: skip
PLAN = {
    "summary": "Refuse an empty stored hash before it is parsed.",
    "decisions": ["Return False rather than raise: callers expect a bool."],
    "steps": [{"title": STEP, "symbol": "check_password", "detail": f"Guard `{PATH}:21`.",
               "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "the password check"}],
    "testing": ["`tests/test_auth.py`: an empty stored hash is refused."],
    "risks": ["None."],
    "effort": {"size": "S", "estimate": "1 hour"},
}  # fmt: skip
PARTITION = 'salt_hex, _, digest_hex = stored.partition("$")'
SKETCH = {
    "change": "Return False for an empty stored hash before partitioning it.",
    "first": PARTITION,
    "lines": 1,
    "after": ["if not stored:", "    return False", PARTITION],
}
SCRIPT = {
    "fake": {
        "Proposal": [json.dumps(PROPOSAL)],
        "PlanDraft": [json.dumps(PLAN)],
        "ChangeSketch": [json.dumps(SKETCH)],
    }
}
OLD = f"def check_password(password: str, stored: str) -> bool:\n    {PARTITION}"
NEW = (
    "def check_password(password: str, stored: str) -> bool:\n    if not stored:\n"
    f"        return False\n    {PARTITION}"
)
OLD_ISSUE = "        token = secrets.token_urlsafe(TOKEN_BYTES)\n"
NEW_ISSUE = "        token = secrets.token_urlsafe(TOKEN_BYTES * 2)\n"
SCREENSHOT = ROOT / "docs" / "screenshots" / "implementation-check.png"


def file_text(name: str) -> str:
    """A file of the fixture pack as the index stores it (no line break after its last line)."""
    text = PACK.read_text(encoding="utf-8")
    start = text.index(f'<file path="{name}">\n') + len(f'<file path="{name}">\n')
    return text[start : text.index("\n</file>", start)]


def unified(path: str, old: str, new: str) -> str:
    import difflib

    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("implementation-data"), script=SCRIPT) as running:
        yield running


def finished(page):
    from playwright.sync_api import expect

    expect(page.locator("#implementation-check")).to_have_attribute(
        "data-state", "done", timeout=WAIT
    )


def test_an_approved_plan_is_checked_against_a_diff_and_newer_versions(server, browser, tmp_path):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 1000})
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
    page.fill("textarea[name=task]", TASK)
    page.click("#new-session button[type=submit]")
    page.locator("#checkpoint button[data-action=approve]").click(timeout=WAIT)
    expect(page.locator("#status-badge")).to_have_text("Completed", timeout=WAIT)
    page.click("#plan a:has-text('Open')")
    plan_url = page.url.split("?")[0]
    # The step targets the real definition and shows its sketch, checked against its code.
    expect(page.locator(".plan-page")).to_contain_text("Current code of check_password")
    expect(page.locator("#check-implementation")).to_have_count(0)  # not approved yet
    page.click("#plan-approval button:has-text('Approve plan v1')")
    expect(page.locator(".flash")).to_contain_text("Plan v1 approved.")

    # 1. A pasted diff that does what the sketch says, and touches a file no step names.
    page.click("#check-implementation")
    expect(page.locator("#implementation-new input[value=version]")).to_be_disabled()
    auth = file_text(PATH)
    assert OLD in auth
    api = file_text("todo/api.py")
    first = api.splitlines()[0]
    patch = unified(PATH, auth, auth.replace(OLD, NEW)) + unified(
        "todo/api.py", api, api.replace(first, first + "  # refuses empty hashes", 1)
    )
    page.check("#implementation-new input[value=diff]")
    page.fill("#diff", patch)
    page.fill("#label", "guard.diff")
    page.click("#implementation-new button[type=submit]")
    finished(page)
    row = page.locator("tr.impl-step").first
    expect(row).to_have_attribute("data-status", "done")
    expect(row).to_contain_text("check_password")
    expect(row).to_contain_text("changed as the sketch says")
    expect(row).to_contain_text(f"{PATH}:21")
    expect(row.locator(".impl-side")).to_contain_text("+        return False")
    expect(page.locator(".impl-unplanned")).to_contain_text("todo/api.py")
    expect(page.locator(".impl-tests")).to_contain_text("tests/test_auth.py")
    expect(page.locator(".impl-tests")).to_contain_text("not changed")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # 2. A diff written against other code is refused in git's words; nothing is lost.
    page.goto(plan_url)
    page.click("#check-implementation")
    page.check("#implementation-new input[value=diff]")
    page.fill("#diff", unified(PATH, auth.replace(PARTITION, "x = 1"), auth))
    page.click("#implementation-new button[type=submit]")
    error = page.locator("#impl-error")
    expect(error).to_contain_text("does not apply", timeout=WAIT)
    expect(error).to_contain_text(PATH)

    # 3. A newer version leaving the target alone, then one with the fix: not done → done.
    for number, text in ((1, auth.replace(OLD_ISSUE, NEW_ISSUE)), (2, auth.replace(OLD, NEW))):
        pack = tmp_path / f"sample-{number}.xml"
        pack.write_text(PACK.read_text(encoding="utf-8").replace(auth, text), encoding="utf-8")
        page.goto(codebase_url)
        page.set_input_files("#new-version input[type=file]", str(pack))
        page.click("#new-version button[type=submit]")
        expect(page.locator("#codebase-status")).to_have_text("Ready", timeout=WAIT)
        page.goto(plan_url)
        page.click("#check-implementation")
        expect(page.locator("#implementation-new input[value=version]")).to_be_enabled()
        page.check("#implementation-new input[value=version]")
        page.uncheck("#implementation-new input[name=ask_model]")
        page.click("#implementation-new button[type=submit]")
        finished(page)
        status = "not_done" if number == 1 else "done"
        expect(page.locator("tr.impl-step").first).to_have_attribute("data-status", status)
    expect(page.locator(".impl-moved")).to_contain_text(f"Step 1. {STEP}: not done → done")
    expect(page.locator(".impl-report")).to_contain_text("None: every changed file is one the plan")

    # The plan page lists every check; the markdown export carries the reports.
    page.goto(plan_url)
    checks = page.locator("#plan-implementation .impl-checks li")
    expect(checks).to_have_count(4)
    page.click("#export-with-checks")
    body = page.locator("body")
    expect(body).to_contain_text("## Implementation checks")
    expect(body).to_contain_text("Check 1: guard.diff (diff)")
    expect(body).to_contain_text(f"1. {STEP} — done")
    expect(body).to_contain_text("Step 1 moved from not done to done since check 3")
    # A status is exported with the hunk it rests on, beside the step's sketch.
    expect(body).to_contain_text("The plan's sketch:")
    expect(body).to_contain_text("The change made:")
    expect(body).to_contain_text("+        return False")
