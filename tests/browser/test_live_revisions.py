"""A session revised in a real browser: a reply redone because it echoed keeps its discarded
attempt on the page, labelled with why; a change request reaches the next proposal, which says
it read the note; earlier proposals and reviews fold away with the latest one left open."""

from __future__ import annotations

import re

import pytest

from tests.browser.live import needs_chromium, reach, serve, start_planning
from tests.browser.test_live_session import PATH, PROPOSAL, held

pytestmark = needs_chromium()

WAIT = 120_000
SUMMARY = (
    "Count failed logins per user in the login handler, refuse the sixth attempt within a "
    "minute with HTTP 429, and reset the count after a successful login."
)
ECHO = f"Agreed. {SUMMARY}"
REVIEW = "The count lives in process memory; two workers would each allow five attempts."
CHANGE = "Keep the counters in Redis so every worker sees the same count."
SCRIPT = {
    "fake": {
        "text": [
            f"The login flow starts at `{PATH}:1`.",
            ECHO,  # the first review copies the proposal: redone
            held("redo", REVIEW, pieces=4),
            "Better: the counters are shared now.",
        ],
        "Proposal": [
            {**PROPOSAL, "summary": SUMMARY},
            {**PROPOSAL, "summary": f"Count failed logins in Redis from `{PATH}`."},
        ],
    }
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("live-revisions"), script=SCRIPT, delay=0.1) as running:
        yield running


def test_a_redo_keeps_its_attempt_and_a_revision_folds_the_earlier_rounds(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    start_planning(page, server, "Add rate limiting to the login endpoint")

    # The redo streams; what the echo wrote stays on the page, folded, with the reason.
    reach(page, server, "redo")
    review = page.locator("article.msg.agent-B.state-streaming")
    expect(review.locator(":scope > .body")).to_contain_text("The count lives")
    kept = review.locator(".discarded details")
    expect(kept).to_have_count(1)
    expect(kept.locator("summary")).to_have_text(
        "Earlier attempt discarded and redone: it copied Agent A's proposal and the task"
    )
    expect(kept.locator(".attempt")).to_be_hidden()
    kept.locator("summary").click()
    expect(kept.locator(".attempt")).to_have_text(ECHO)
    server.release("redo")

    approve = page.locator("#checkpoint button[data-action=approve]")
    expect(approve).to_be_visible()
    page.locator("#checkpoint button[data-action=show-modify]").click()
    page.fill("#modify-text", CHANGE)
    page.locator("#modify-box button[data-action=modify]").click()
    expect(page.locator("article.msg.agent-B")).to_have_count(2)
    expect(approve).to_be_visible()

    proposals = page.locator("article.msg[data-node=propose_changes]")
    expect(proposals).to_have_count(2)
    first, latest = proposals.nth(0), proposals.nth(1)
    expect(first).to_have_class(re.compile(r"\bcollapsed\b"))
    expect(first.locator(":scope > .body")).to_be_hidden()
    expect(latest.locator(":scope > .body")).to_be_visible()
    expect(latest.locator(".heard")).to_contain_text(CHANGE[:30])
    first.locator("button.fold").click()
    expect(first.locator(":scope > .body")).to_be_visible()

    # After a reload the same, from the database.
    page.reload()
    expect(
        page.locator("article.msg[data-node=propose_changes]").nth(0).locator(":scope > .body")
    ).to_be_hidden()
    expect(
        page.locator("article.msg[data-node=propose_changes]").nth(1).locator(".heard")
    ).to_contain_text(CHANGE[:30])
    first_review = page.locator("article.msg.agent-B").nth(0)
    expect(first_review.locator(".discarded summary")).to_contain_text(
        "it copied Agent A's proposal and the task"
    )
    expect(first_review.locator(".discarded .attempt")).to_have_text(ECHO)
    page.close()
