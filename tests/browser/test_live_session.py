"""The live session as a user watches it, in a real browser: at every node the workflow panel,
the status line (counting the panel's rows), the usage figures and the Trace panel's count of
LLM calls say what the database says; a session stopped before the first token says nothing
was decided and marks no step done.

Every agent call of the walk is held by the scripted provider (`Hold`, bridged to files), so the
test looks at the page while the job is parked inside a known node; nothing waits for time."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from tests.browser.live import (
    WAIT,
    Server,
    needs_chromium,
    reach,
    serve,
    start_planning,
)

pytestmark = needs_chromium()

PATH = "todo/auth.py"

PROPOSAL = {
    "summary": f"Throttle failed logins in `{PATH}`.",
    "steps": [{"title": "Count failures", "symbol": "none", "detail": f"Wrap the handler at `{PATH}:1`.", "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "the login handler lives here"}],
}  # fmt: skip
PLAN = {
    "summary": "Add a per-user failed-login counter.",
    "decisions": ["Keep counters in memory: one process serves the app."],
    "steps": [{"title": "Add the counter", "symbol": "none", "detail": f"See `{PATH}:1`.", "files": [PATH]}],
    "files": [{"path": PATH, "action": "modify", "reason": "handler"}],
    "testing": ["A test that the sixth failed login in a minute gets 429."],
    "risks": ["Counters reset on restart."],
    "effort": {"size": "S", "estimate": "1 day"},
}  # fmt: skip
REVIEW = (
    "- The count lives in process memory; two workers would each allow five attempts.\n"
    "- Add a test that the sixth failed attempt within a minute is refused."
)


def held(name: str, text: str, pieces: int = 3) -> dict[str, Any]:
    return {"hold": {"text": text, "pieces": pieces, "name": name}}


NO_PLAN = {"steps": [], "next_action": "synthesize"}
SCRIPT = {
    "fake": {
        "text": [
            held("analyze", f"The login flow starts at `{PATH}:1`, where **every** attempt is checked.", pieces=9),
            held("review", REVIEW),
        ],
        "EvidencePlan": [held("investigate", json.dumps(NO_PLAN))],
        "Proposal": [held("propose", json.dumps(PROPOSAL), pieces=20)],
        "Verdicts": [held("verify", json.dumps({"verdicts": [{"objection": 1, "verdict": "keep"}]}))],
        "PlanDraft": [held("finalize", json.dumps(PLAN), pieces=20)],
    }
}  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # A tenth of a second a piece, longer than a flush: each piece reaches the page before a hold.
    with serve(tmp_path_factory.mktemp("live"), script=SCRIPT, delay=0.1) as running:
        yield running


def database(server: Server) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{server.folder / 'planagents.sqlite3'}?mode=ro", uri=True)


def saved_state(server: Server, session: int) -> dict[str, Any]:
    with database(server) as db:
        row = db.execute(
            "SELECT s.status, st.current_node, s.calls_used, s.tokens_used, s.call_budget,"
            " s.token_budget FROM conversations_planningsession s JOIN"
            " conversations_planningstate st ON st.session_id = s.id WHERE s.id = ?",
            (session,),
        ).fetchone()
    keys = ("status", "node", "calls", "tokens", "call_budget", "token_budget")
    return dict(zip(keys, row, strict=True))


def steps() -> list[str]:
    """The sidebar's rows: every node of the workflow table but "completed", where they end."""
    from agents.workflow import NODES

    return [node for node in NODES if node != "completed"]


def expected_marks(rows: list[str], node: str, status: str) -> list[str]:
    if node == "completed":
        return ["done"] * len(rows)
    at = rows.index(node)
    mark = "current" if status == "running" or node == "checkpoint" else "paused"
    return ["done"] * at + [mark] + ["pending"] * (len(rows) - at - 1)


def recorded_calls(server: Server, session: int) -> int:
    with database(server) as db:
        query = "SELECT COUNT(*) FROM agents_llmcall WHERE session_id = ?"
        return int(db.execute(query, (session,)).fetchone()[0])


def calls_text(calls: int) -> str:
    return f"{calls:,} LLM call{'' if calls == 1 else 's'}"


def usage_text(saved: dict[str, Any]) -> str:
    return f"{calls_text(saved['calls'])} · {saved['tokens']:,} tokens"


SIDEWAYS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
SIDEBAR = "() => Array.from(document.querySelectorAll('#workflow li')).map(li => li.dataset.status)"


def page_matches_database(page: Any, server: Server, session: int, node: str) -> dict[str, Any]:
    """Wait until the page shows what the database says now (the job is parked at `node`)."""
    from agents.workflow import NODES

    rows = steps()
    saved = saved_state(server, session)
    assert saved["node"] == node
    marks = expected_marks(rows, node, saved["status"])
    page.wait_for_function(
        "([marks, usage, calls]) => JSON.stringify(Array.from(document.querySelectorAll("
        "'#workflow li')).map(li => li.dataset.status)) === JSON.stringify(marks)"
        " && document.getElementById('meter').textContent === usage"
        " && document.getElementById('trace-count').textContent === calls",
        arg=[marks, usage_text(saved), calls_text(saved["calls"])],
        timeout=WAIT,
    )
    assert (
        page.evaluate(
            "() => Array.from(document.querySelectorAll('#workflow li')).map(li => li.dataset.node)"
        )
        == rows
    )
    budget = page.locator("#budget").text_content() or ""
    assert f"{saved['calls']:,} of {saved['call_budget']:,} calls" in budget
    assert f"{saved['tokens']:,} of {saved['token_budget']:,} tokens" in budget
    # The status line counts the rows the sidebar draws ("Step 3 of 10" beside 11 rows was a
    # count of one list and a drawing of another).
    drawn = page.locator("#workflow li").count()
    where = page.locator("#where").text_content() or ""
    if node == "completed":
        assert where == f"All {drawn} steps done"
    else:
        label = NODES[node].label
        assert where == f"Step {rows.index(node) + 1} of {drawn}: {label}"
        if saved["status"] == "running":
            running = page.locator("#running-label").text_content() or ""
            assert f"Step {rows.index(node) + 1} of {drawn} · {label}" in running
    assert saved_state(server, session) == saved, "the job moved while the page was checked"
    return saved


def trace_lists_every_call(page: Any, server: Server, session: int) -> None:
    """With no call running, the Trace panel's count is the database's count of recorded calls,
    and opening the panel lists each of them (the page was loaded before any was made)."""
    from playwright.sync_api import expect

    recorded = recorded_calls(server, session)
    assert recorded == saved_state(server, session)["calls"] > 0
    expect(page.locator("#trace-count")).to_have_text(calls_text(recorded))
    panel = page.locator("#trace > details")
    if panel.get_attribute("open") is None:
        page.locator("#trace > details > summary").click()
    expect(page.locator("#trace-list details.trace-call")).to_have_count(recorded)
    expect(page.locator("#trace-note")).to_have_text("")
    page.locator("#trace > details > summary").click()  # closed again


def test_at_every_node_the_sidebar_status_and_usage_match_the_database(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    session = start_planning(page, server, "Add rate limiting to the login endpoint")

    reach(page, server, "investigate")
    page_matches_database(page, server, session, "investigate")
    expect(page.locator("#running-label")).to_contain_text("waiting for the model")
    server.release("investigate")

    reach(page, server, "analyze")
    page_matches_database(page, server, session, "analyze_codebase")
    streaming = page.locator("article.msg.state-streaming")
    expect(streaming.locator(".typing")).to_contain_text("writing")
    expect(streaming.locator(".typing")).to_contain_text("no speed measured yet")
    # Markdown is drawn while it streams, as elements, not as raw asterisks.
    expect(streaming.locator(".body code")).to_have_text(f"{PATH}:1")
    expect(streaming.locator(".body strong")).to_have_text("every")
    server.release("analyze")

    reach(page, server, "propose")
    page_matches_database(page, server, session, "propose_changes")
    server.release("propose")

    reach(page, server, "review")
    page_matches_database(page, server, session, "review_and_refine")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate(SIDEWAYS) == 0, "the live session scrolls sideways at 390 px"
    page.set_viewport_size({"width": 1366, "height": 900})
    server.release("review")

    reach(page, server, "verify")
    page_matches_database(page, server, session, "verify_review")
    server.release("verify")

    expect(page.locator("#checkpoint button[data-action=approve]")).to_be_visible()
    page_matches_database(page, server, session, "checkpoint")
    trace_lists_every_call(page, server, session)
    page.locator("#checkpoint button[data-action=approve]").click()

    reach(page, server, "finalize")
    page_matches_database(page, server, session, "finalize_plan")
    server.release("finalize")

    # The sketches follow the plan: under load (a model bench beside the suite) that took more
    # than expect's 5 s. The test is about what the page says, not how fast.
    expect(page.locator("#status-badge")).to_have_text("Completed", timeout=WAIT)
    page_matches_database(page, server, session, "completed")
    trace_lists_every_call(page, server, session)
    # The plan panel draws the summary's `code` spans as code, not as backticks.
    expect(page.locator("#plan .plan-summary")).to_be_visible()
    assert "`" not in (page.locator("#plan .plan-summary").text_content() or "")

    # A reload draws the same panel and figures from the database.
    page.reload()
    page_matches_database(page, server, session, "completed")
    # The task, rendered once and stored, is drawn as HTML, not as tags.
    first = page.locator("article.msg.role-user").first
    expect(first.locator(".body p")).to_have_count(1)
    assert "<p>" not in (first.locator(".body").text_content() or "")

    # At a phone's width no page scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    for path in (
        "/", "/sessions/", f"/sessions/{session}/", f"/sessions/{session}/plan/", "/sessions/new/",
        "/sessions/models/", "/codebases/", "/codebases/upload/",
        page.locator(".session-head a[href^='/codebases/']:not(.version)").get_attribute("href"),
    ):  # fmt: skip
        page.goto(server.url + path)
        assert page.evaluate(SIDEWAYS) == 0, f"{path} scrolls sideways at 390 px"
    page.close()


@pytest.fixture(scope="module")
def stop_server(tmp_path_factory):
    # Agent A plans no lookups (the app's own run), then its analysis never starts.
    script = {
        "fake": {
            "EvidencePlan": [NO_PLAN],
            "text": [held("first", "A reply that never starts.", pieces=0)],
        }
    }
    with serve(tmp_path_factory.mktemp("live-stop"), script=script) as running:
        yield running


def test_a_session_stopped_before_the_first_token_says_nothing_was_decided(stop_server, browser):
    from playwright.sync_api import expect

    server = stop_server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    session = start_planning(page, server, "Add rate limiting to the signup endpoint")
    reach(page, server, "first")
    first = page.locator("article.msg.agent-A.state-streaming")
    expect(first.locator(".typing")).to_contain_text("reading the prompt (≈")
    expect(first.locator(".body")).to_have_text("")
    page.locator("#running button.danger[data-action=stop]").click()

    expect(page.locator("#status-badge")).to_have_text("Stopped")
    summary = page.locator("article.msg.role-system", has_text="Summary")
    expect(summary).to_contain_text("nothing was proposed or decided")
    expect(page.locator("#where")).to_have_text(
        f"Stopped during step 2 of {len(steps())}: Analyze codebase"
    )
    marks = page.evaluate(SIDEBAR)
    assert marks[:2] == ["done", "stopped"] and "done" not in marks[2:], marks
    expect(page.locator("#workflow li.stopped")).to_contain_text("stopped here")
    assert saved_state(server, session)["status"] == "stopped"
    page.reload()
    assert page.evaluate(SIDEBAR) == marks
    page.close()
