"""A critical codebase rule in a real browser: written on the codebase page, shown to the agents
with a pinned note, it holds Approve at the checkpoint until the human overrides it with a
reason, and the final plan records the override and the pin it used."""

from __future__ import annotations

import json

import pytest

from tests.browser.live import ROOT, log_in, needs_chromium, serve

pytestmark = needs_chromium()

PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"
PATH = "todo/auth.py"
WAIT = 120_000
RULE = "Never change todo/auth.py without a security review."
NOTE = "We use pytest, not unittest."
REASON = "The security team reviewed this change already."
PROPOSAL = {
    "summary": f"Throttle failed logins in `{PATH}`.",
    "steps": [{"title": "Count failures", "symbol": "none", "detail": f"Wrap the handler at `{PATH}:1`.", "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "the login handler lives here"}],
}  # fmt: skip
PLAN = {
    "summary": "Add a per-user failed-login counter.",
    "decisions": ["Keep counters in memory."],
    "steps": [{"title": "Add the counter", "symbol": "none", "detail": f"See `{PATH}:1`.", "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "handler"}],
    "testing": ["A pytest test that the sixth failed login gets 429."],
    "risks": ["Counters reset on restart."],
    "effort": {"size": "S", "estimate": "1 day"},
}  # fmt: skip
SCRIPT = {
    "fake": {
        "Proposal": [json.dumps(PROPOSAL)],
        "RuleCheck": [
            json.dumps({"violations": [{"rule": 1, "explanation": "It edits todo/auth.py."}]}),
            json.dumps({"violations": []}),
        ],
        "PlanDraft": [json.dumps(PLAN)],
    }
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("rules"), script=SCRIPT) as running:
        yield running


def test_a_critical_rule_holds_approve_until_overridden_with_a_reason(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page()
    log_in(page, server)
    page.goto(server.url + "/codebases/upload/")
    page.fill("input[name=name]", "rules-pack")
    page.set_input_files("input[type=file]", str(PACK))
    page.click("main form button[type=submit]")
    expect(page.locator(".tree")).to_be_visible(timeout=WAIT)

    page.fill("#rule-add textarea[name=text]", RULE)
    page.select_option("#rule-add select[name=severity]", "critical")
    page.click("#rule-add button[type=submit]")
    expect(page.locator("#rules li", has_text=RULE)).to_contain_text("critical")
    page.fill("#pin-add textarea[name=text]", NOTE)
    page.click("#pin-add button[type=submit]")
    expect(page.locator("#pins li", has_text=NOTE)).to_contain_text("[P1]")

    page.goto(server.url + "/sessions/new/")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake")
    page.fill("textarea[name=task]", "Add rate limiting to login")
    page.click("#new-session button[type=submit]")
    page.wait_for_url("**/sessions/*/")

    box = page.locator("#rules-override")
    expect(box).to_be_visible(timeout=WAIT)
    expect(box).to_contain_text(f"R1: {RULE} — It edits todo/auth.py.")
    expect(page.locator(".msg", has_text="Pinned context")).to_contain_text(NOTE)

    page.click("#checkpoint button[data-action=approve]")
    expect(page.locator("#error")).to_contain_text("breaks critical rule(s) R1")
    page.click("button[data-rules-override]")  # no reason yet: refused on the page
    expect(page.locator("#rules-override-error")).to_contain_text("Give the reason")

    page.fill("#rules-override-reason", REASON)
    page.click("button[data-rules-override]")
    expect(page.locator(".msg", has_text="Overrode the critical rule(s) R1")).to_contain_text(
        REASON
    )
    expect(page.locator("#status-badge")).to_have_text("Completed", timeout=WAIT)
    expect(box).to_be_hidden()

    # The plan document (the download) records the override and the pin.
    plan = page.request.get(page.url.rstrip("/") + "/plan.md").text()
    assert f"- Overridden by the human (R1): {REASON}" in plan
    # Brackets are escaped in the download (no link can be formed), so it reads [P1] rendered.
    assert f"- \\[P1\\] note: {NOTE}" in plan
    page.close()
