"""Investigation in a real browser: Agent A's evidence arrives as cards (the head line and the
tool's message shown, the code folded until the reader opens it, open still after the page
draws the card again, the same cards after a reload), and A's clarifying question is answered
in its box, after which the session goes on.

Evidence plans hold three steps at most here: round 1 runs the plan's own two steps and the
app's search of the task (its last anchor, which always runs)."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import pytest

from tests.browser.live import (
    ROOT,
    WAIT,
    Server,
    needs_chromium,
    reach,
    serve,
    start_planning,
)

pytestmark = needs_chromium()

SCREENSHOT = ROOT / "docs" / "screenshots" / "evidence-cards.png"
SIDEWAYS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
TASK = "Make login tokens expire after a day"  # names no symbol: no anchor lookups of its own
FOUND, MISSING = "TokenStore", "TokenCache"  # todo/auth.py defines the one, nothing the other
QUESTION = "Should an expired token be deleted, or only refused at login?"
ANSWER = "Delete it, and refuse it at login too."
PROPOSAL = {
    "summary": "Expire tokens after a day [E1].",
    "steps": [{"title": "Expire", "symbol": "none", "detail": "In `todo/auth.py:1` [E1].", "files": ["todo/auth.py"]}],
    "files": [{"path": "todo/auth.py", "action": "modify", "reason": "TokenStore issues tokens"}],
    "new_files": [],
}  # fmt: skip


def step(n: int, tool: str, argument: str) -> dict[str, Any]:
    return {"id": f"E{n}", "tool": tool, "argument": argument, "why": "where tokens live",
            "depends_on": [], "kind": "independent"}  # fmt: skip


def evidence_plan(steps: list[dict[str, Any]], next_action: str, question: str = "") -> str:
    return json.dumps({"steps": steps, "next_action": next_action, "question": question})


def held(name: str, text: str) -> dict[str, Any]:
    return {"hold": {"text": text, "pieces": 1, "name": name}}


@pytest.fixture(scope="module")
def three_steps():
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PLANAGENTS_EVIDENCE_STEPS", "3")
        env.setenv("PLANAGENTS_EVIDENCE_ROUNDS", "2")
        yield


@pytest.fixture(scope="module")
def cards_server(tmp_path_factory, three_steps):
    plan = evidence_plan(
        [step(1, "find_symbol", FOUND), step(2, "find_symbol", MISSING)], "synthesize"
    )
    script = {
        "fake": {"EvidencePlan": [held("investigate", plan)], "Proposal": [json.dumps(PROPOSAL)]}
    }
    with serve(tmp_path_factory.mktemp("evidence"), script=script) as running:
        yield running


@pytest.fixture(scope="module")
def clarify_server(tmp_path_factory, three_steps):
    asking = evidence_plan([step(1, "find_symbol", FOUND)], "clarify", QUESTION)
    answered = evidence_plan([step(1, "search", "token expiry")], "synthesize")
    script = {
        "fake": {
            "EvidencePlan": [asking, answered],
            "Proposal": [held("propose", json.dumps(PROPOSAL))],
        }
    }
    with serve(tmp_path_factory.mktemp("clarify"), script=script) as running:
        yield running


class Wire:
    """The page's socket, passed through, keeping what the server sent (to send a frame again,
    as a resume's replay does)."""

    def __init__(self) -> None:
        self.page_side: Any = None
        self.frames: list[dict[str, Any]] = []

    def attach(self, route: Any) -> None:
        self.page_side = route
        server = route.connect_to_server()
        route.on_message(server.send)
        server.on_message(self.down)

    def down(self, message: str | bytes) -> None:
        self.frames.append(json.loads(message))
        self.page_side.send(message)

    def ended(self, seq: int) -> dict[str, Any]:
        return next(
            f for f in self.frames if f["type"] == "message.end" and f["message"]["seq"] == seq
        )


def database(server: Server) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{server.folder / 'planagents.sqlite3'}?mode=ro", uri=True)


def saved_evidence(server: Server, session: int) -> dict[str, tuple[int, dict[str, Any]]]:
    """The session's evidence as saved: its label → (seq, the evidence's fields)."""
    with database(server) as db:
        rows = db.execute(
            "SELECT seq, data FROM conversations_message WHERE session_id = ?"
            " AND node = 'investigate' AND turn_key LIKE '%:E%' ORDER BY seq",
            (session,),
        ).fetchall()
    items = [(seq, json.loads(data)["evidence"]) for seq, data in rows]
    return {item["id"]: (seq, item) for seq, item in items}


def shown(markdown: str) -> str:
    """A tool's message as the page shows it: its `code` spans drawn as code."""
    return markdown.replace("`", "")


def cards_are_shown(page: Any, saved: dict[str, tuple[int, dict[str, Any]]]) -> None:
    """E1 (found) and E2 (not found) as cards: head line and message shown, E1's code folded
    and opening on a click, E2 with nothing to fold; E3 (the app's search) a card too. (The
    steps ran together: the cards come in the order the results did.)"""
    from playwright.sync_api import expect

    (found_seq, found), (missing_seq, missing) = saved["E1"], saved["E2"]
    expect(page.locator("#messages article.msg.evidence")).to_have_count(3)
    first, second = (
        page.locator(f"#m{found_seq}.evidence"),
        page.locator(f"#m{missing_seq}.evidence"),
    )
    expect(first.locator(".who")).to_have_text("Evidence")
    head = first.locator(".body > p").first
    expect(head).to_have_text(f"E1 · find_symbol {FOUND} — {found['location']}")
    expect(head.locator("a")).to_have_attribute("href", re.compile(re.escape(found["path"])))
    expect(first.locator(".body > p").nth(1)).to_have_text(shown(found["message"]))
    code = first.locator("details.evidence-code")
    lines = len(found["text"].rstrip("\n").split("\n"))
    expect(code.locator("summary")).to_have_text(f"Code · {lines} lines")
    expect(code).not_to_have_attribute("open", re.compile(".*"))
    expect(code.locator("pre")).to_be_hidden()
    expect(page.locator("#messages article.msg.evidence pre:visible")).to_have_count(0)

    expect(second.locator(".body > p").first).to_have_text(f"E2 · find_symbol {MISSING}")
    expect(second.locator(".body > p").nth(1)).to_have_text(shown(missing["message"]))
    expect(second.locator(".body")).to_contain_text(re.compile("did you mean", re.I))
    expect(second.locator("details, pre")).to_have_count(0)
    expect(second).to_have_class(re.compile(r"\bevidence-empty\b"))

    code.locator("summary").click()
    expect(code).to_have_attribute("open", "")
    expect(code.locator("pre")).to_be_visible()
    expect(code.locator("pre")).to_contain_text(f"class {FOUND}")


def test_evidence_arrives_as_cards_whose_code_folds(cards_server, browser):
    from playwright.sync_api import expect

    server = cards_server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    wire = Wire()
    page.route_web_socket(re.compile(r"/ws/sessions/\d+/$"), wire.attach)
    session = start_planning(page, server, TASK, pack_name="evidence-pack")

    # The page is open before the plan is written: the cards come over the socket.
    reach(page, server, "investigate")
    expect(page.locator("#messages article.msg.evidence")).to_have_count(0)
    server.release("investigate")
    expect(page.locator("#checkpoint button[data-action=approve]")).to_be_visible()
    saved = saved_evidence(server, session)
    assert sorted(saved) == ["E1", "E2", "E3"]
    assert (saved["E3"][1]["tool"], saved["E3"][1]["argument"]) == ("search", TASK)  # the app's
    (found_seq, found), (_, missing) = saved["E1"], saved["E2"]
    assert found["found"] and found["path"] == "todo/auth.py" and found["start"] > 0
    assert not missing["found"] and "did you mean" in missing["message"].lower()
    cards_are_shown(page, saved)

    # The page draws a message again when a resume replays it: the open card stays open.
    card = page.locator(f"#m{found_seq}")
    card.evaluate("(node) => { node.dataset.drawnBefore = 'yes'; }")
    replayed = {**wire.ended(found_seq), "replay": True}
    wire.page_side.send(json.dumps(replayed))
    expect(card).not_to_have_attribute("data-drawn-before", "yes")
    expect(card.locator("details.evidence-code")).to_have_attribute("open", "")
    expect(card.locator("details.evidence-code pre")).to_be_visible()

    # At a phone's width the open code scrolls inside its card, never the page sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate(SIDEWAYS) == 0, "the evidence cards scroll the page sideways at 390 px"
    page.set_viewport_size({"width": 1366, "height": 900})

    # A reload draws the same cards from the server's page, their code folded again.
    page.reload()
    expect(page.locator("#conn")).to_have_text("live")
    expect(page.locator(f"#m{found_seq} details.evidence-code")).to_have_count(1)
    plan = page.locator("article.msg.agent-A", has_text="Evidence plan")
    plan.evaluate("(n) => window.scrollTo(0, n.getBoundingClientRect().top + window.scrollY - 16)")
    page.screenshot(path=str(SCREENSHOT))
    cards_are_shown(page, saved)
    page.close()


def test_the_clarify_box_sends_the_answer_and_the_session_goes_on(clarify_server, browser):
    from playwright.sync_api import expect

    server = clarify_server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(WAIT)
    session = start_planning(page, server, TASK, pack_name="evidence-pack")

    box = page.locator("#clarify")
    expect(box).to_be_visible()
    expect(page.locator("#clarify-question")).to_have_text(QUESTION)
    expect(page.locator("#handover")).to_be_hidden()
    expect(page.locator("#status-badge")).to_have_class(re.compile(r"\bawaiting_human\b"))
    asked = page.locator("article.msg.agent-A", has_text="Question for you:")
    expect(asked).to_contain_text(QUESTION)
    # The round's lookups are cards (in the order they finished: they ran together).
    lookup = page.locator("article.msg.evidence", has_text=f"E1 · find_symbol {FOUND}")
    expect(lookup).to_have_count(1)

    page.fill("#clarify-text", ANSWER)
    page.click("#clarify-send")
    expect(box).to_be_hidden()
    expect(page.locator("#clarify-text")).to_have_value("")
    answer = page.locator("article.msg.role-user").last
    expect(answer.locator(".who")).to_have_text("You")
    expect(answer.locator(".body")).to_have_text(ANSWER)
    assert int(answer.get_attribute("data-seq")) > int(asked.get_attribute("data-seq"))

    # The session goes on: a second evidence plan (knowing the answer), its card, the proposal.
    replan = page.locator("article.msg.agent-A", has_text="Evidence plan, round 2")
    expect(replan).to_be_visible()
    reach(page, server, "propose")
    second_round = page.locator("article.msg.evidence", has_text="search token expiry")
    expect(second_round).to_have_count(1)
    assert int(second_round.get_attribute("data-seq")) > int(answer.get_attribute("data-seq"))
    expect(page.locator("#status-badge")).to_have_class(re.compile(r"\brunning\b"))
    with database(server) as db:
        prompts = [
            row[0]
            for row in db.execute(
                "SELECT prompt FROM agents_llmcall WHERE session_id = ? AND schema = ? ORDER BY id",
                (session, "EvidencePlan"),
            )
        ]
    assert len(prompts) == 2
    assert f"The human answered: {ANSWER}" in prompts[1]
    server.release("propose")
    expect(page.locator("#checkpoint button[data-action=approve]")).to_be_visible()
    expect(box).to_be_hidden()
    page.close()
