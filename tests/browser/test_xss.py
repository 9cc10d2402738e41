"""Hostile text everywhere a user or a model can put it, rendered in a real browser: no script
of theirs runs.

The payloads go into the codebase name, file names (folders too), file contents, the task,
the human's change request, the admin's review notes, every reply of both agents (streamed
token by token, then rendered), a hand-edited plan section, a planning rule and pins. Every
page that shows them is opened with a dialog listener and its DOM audited for event-handler
attributes, javascript: URLs and scripts that came from the payloads; each page must also
show the payload as text in the part of it under test, or the check proves nothing."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest

from tests.browser.live import Server, log_in, needs_chromium, serve

pytestmark = needs_chromium()

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    '"><svg onload=alert(2)>',
    "<script>alert(3)</script>",
    "[click me](javascript:alert(4))",
    '<a href="javascript:alert(5)">open</a>',
    "<javascript:alert(6)>",
    "'><iframe srcdoc='<script>parent.alert(7)</script>'>",
]
HOSTILE = " ".join(PAYLOADS)
SHOWN = "onerror=alert(1)"
WAIT = 120_000  # ms: a whole planning session on two busy cores  # how a page shows, as text, that it holds the payloads

CODE_FILE = f"src/{PAYLOADS[0]}.py"
NOTES_FILE = f"{PAYLOADS[1]}/notes.md"
SCRIPT_FILE = f"docs/{PAYLOADS[2]}.md"
FILES = {
    CODE_FILE: f'"""Login handler. {HOSTILE}"""\n\n\ndef login(request):\n    return "{PAYLOADS[1]}"\n',
    NOTES_FILE: f"# Notes\n\n{HOSTILE}\n\nSee [the docs](javascript:alert(8)).\n",
    SCRIPT_FILE: f"# Rate limits\n\n{HOSTILE}\n",
    "app/ratelimit.py": "def allow(user):\n    return True\n",
}
CODEBASE_NAME = f"{PAYLOADS[0]}{PAYLOADS[1]}"
TASK = f"Add rate limiting to login. {HOSTILE}"
CHANGE_REQUEST = f"Also cover the API. {HOSTILE}"
REVIEW_NOTES = f"Looks fine. {HOSTILE}"
EDITED_SUMMARY = f"Edited by hand. {HOSTILE}"
RULE = f"Never log tokens. {HOSTILE}"
PIN_NOTE = f"We use pytest. {HOSTILE}"
PIN_SNIPPET = f"limit = 5  # {HOSTILE}"
PIN_PATH = f"{PAYLOADS[1]}/snippet.py"


def prose(topic: str) -> str:
    # Words of its own, so no reply reads as a copy of the message it answers.
    return (
        f"On {topic}: the throttle belongs next to the handler, counts failures per account "
        "and per address, resets after a quiet window, answers with status 429 and a "
        "Retry-After header, and ships with tests for the boundary cases people forget."
    )


# Existing files are the codebase's (the schema may hold them to real paths); new ones are
# named freely, so that is where a hostile path goes.
PROPOSAL = {
    "summary": f"{HOSTILE} {prose('the proposal')}"[:800],
    "steps": [
        {
            "title": PAYLOADS[0],
            "symbol": "none",
            "detail": f"Wrap `{CODE_FILE}:4`. {HOSTILE}"[:400],
            "files": [CODE_FILE, f"{PAYLOADS[1]}/new.py"],
        }
    ],
    "files": [{"path": CODE_FILE, "action": "modify", "reason": PAYLOADS[1]}],
    "new_files": [{"path": f"{PAYLOADS[1]}/new.py", "reason": PAYLOADS[4]}],
}
PLAN = {
    "summary": f"{HOSTILE} {prose('the plan')}"[:1000],
    "decisions": PAYLOADS[:5],
    "steps": [
        {"title": PAYLOADS[2], "symbol": "none", "detail": HOSTILE[:400], "files": [CODE_FILE]}
    ],
    "files": [{"path": CODE_FILE, "action": "modify", "reason": PAYLOADS[3]}],
    "new_files": [{"path": f"{PAYLOADS[2]}/new.py", "reason": PAYLOADS[4]}],
    "testing": PAYLOADS[3:],
    "risks": PAYLOADS[:2],
    "effort": {"size": "S", "estimate": PAYLOADS[0]},
}

SCRIPT: dict[str, dict[str, list[Any]]] = {
    "fake": {  # Agent A
        "text": [f"The login handler is `{CODE_FILE}:4`. {HOSTILE} {prose('the analysis')}"],
        "Proposal": [PROPOSAL, PROPOSAL],  # the first, and the one after the change request
        "PlanDraft": [PLAN],
    },
    "fake-backup": {  # Agent B: one review per proposal
        "text": [f"{HOSTILE} {prose(f'review {n}')}" for n in (1, 2)],
    },
}

# Event-handler attributes, javascript: URLs, srcdoc, and script text from the payloads.
AUDIT = """() => {
  const found = [];
  for (const el of document.querySelectorAll("*")) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value.replace(/[\\s\\u0000-\\u001f]+/g, "").toLowerCase();
      if (name.startsWith("on")) found.push(`${el.tagName} ${name}="${attr.value}"`);
      if (name === "srcdoc") found.push(`${el.tagName} srcdoc`);
      if (["href", "src", "action", "formaction", "data", "xlink:href"].includes(name)
          && value.startsWith("javascript:")) found.push(`${el.tagName} ${name}="${attr.value}"`);
    }
    if (el.tagName === "SCRIPT" && el.textContent.includes("alert(")) found.push("SCRIPT alert(");
  }
  return found;
}"""

# Everything a streaming message's body showed, as the tokens arrived.
RECORD_STREAM = """
window.__streamed = [];
new MutationObserver(() => {
  for (const body of document.querySelectorAll("article.state-streaming .body")) {
    window.__streamed.push(body.textContent);
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@dataclass
class World:
    server: Server
    codebase: int = 0
    session: int = 0
    plan: int = 0
    call: int = 0  # the session's first LLM call
    shared: str = ""  # the path of a read-only share link to the plan
    files: dict[str, int] = field(default_factory=dict)
    live_dialogs: list[str] = field(default_factory=list)
    live_findings: list[str] = field(default_factory=list)
    streamed: list[str] = field(default_factory=list)

    def transcript(self) -> list[str]:
        """The session's messages as the server saved them: node and a start of each."""
        with sqlite3.connect(
            f"file:{self.server.folder / 'planagents.sqlite3'}?mode=ro", uri=True
        ) as db:
            rows = db.execute(
                "SELECT seq, node, substr(content, 1, 80) FROM conversations_message ORDER BY seq"
            ).fetchall()
        return [f"{seq} {node}: {text}" for seq, node, text in rows]

    def ids(self) -> None:
        """The objects' ids, read from the server's database."""
        with sqlite3.connect(
            f"file:{self.server.folder / 'planagents.sqlite3'}?mode=ro", uri=True
        ) as db:
            self.plan = db.execute(
                "SELECT id FROM conversations_plan WHERE session_id = ?", (self.session,)
            ).fetchone()[0]
            self.files = dict(
                db.execute(
                    "SELECT path, id FROM rag_codefile WHERE codebase_id = ?", (self.codebase,)
                ).fetchall()
            )
            self.call = db.execute(
                "SELECT min(id) FROM agents_llmcall WHERE session_id = ?", (self.session,)
            ).fetchone()[0]


def watch(page: Any, dialogs: list[str]) -> None:
    def dismiss(dialog: Any) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", dismiss)


def id_in(url: str, after: str) -> int:
    return int(url.split(after, 1)[1].split("/", 1)[0])


def run_session(page: Any, world: World) -> None:
    """Upload the hostile pack, plan on it, ask for changes, approve; the admin reviews."""
    from playwright.sync_api import expect

    server = world.server
    log_in(page, server)
    page.goto(server.url + "/codebases/upload/")
    page.fill("input[name=name]", CODEBASE_NAME)
    page.set_input_files("input[type=file]", str(server.folder / "hostile.json"))
    page.click("main form button[type=submit]")
    expect(page.locator(".tree")).to_be_visible(timeout=WAIT)
    world.codebase = id_in(page.url, "/codebases/")
    world.live_findings += page.evaluate(AUDIT)

    page.goto(f"{server.url}/sessions/new/?codebase={world.codebase}")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.select_option("select[name=agent_b_profile]", "fake-backup")
    page.fill("textarea[name=task]", TASK)
    page.click("#new-session button[type=submit]")
    page.wait_for_url("**/sessions/*/")
    world.session = id_in(page.url, "/sessions/")

    validations = page.locator("article.msg.role-system", has_text="Validation")
    expect(page.locator("#checkpoint button[data-action=approve]")).to_be_visible(timeout=WAIT)
    world.live_findings += page.evaluate(AUDIT)
    checked = validations.count()
    page.click("#checkpoint button[data-action=show-modify]")
    page.fill("#modify-text", CHANGE_REQUEST)
    page.click("#checkpoint button[data-action=modify]")
    expect(validations).to_have_count(checked + 1, timeout=WAIT)  # the new proposal's
    page.locator("#checkpoint button[data-action=approve]").click()
    expect(page.locator("#status-badge")).to_have_text("Completed", timeout=WAIT)
    expect(page.locator("#plan .plan-files")).to_be_visible(timeout=WAIT)
    world.live_findings += page.evaluate(AUDIT)
    world.streamed = page.evaluate("window.__streamed")

    # A reviewer's notes, saved through the admin, show on the plan and in the admin log.
    world.ids()
    page.goto(f"{server.url}/admin/conversations/plan/{world.plan}/change/")
    page.fill("textarea[name=review_notes]", REVIEW_NOTES)
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_be_visible()


def add_the_rest(page: Any, world: World) -> None:
    """A hand-edited plan version (so there is a diff), a share link, a rule and pins."""
    from playwright.sync_api import expect

    server, session = world.server, world.session
    page.goto(f"{server.url}/sessions/{session}/plan/?version=1&edit=summary")
    page.fill("#edit-summary", EDITED_SUMMARY)
    page.click("#section-summary button[name=save]")
    page.wait_for_url("**/plan/?version=2*")

    page.select_option(".plan-share select[name=expiry]", "never")
    # Everything a link can show, so the hostile rules and evidence are on the page.
    page.check(".plan-share input[name=pin][value=latest]")
    page.check(".plan-share input[name=shows_rules]")
    page.check(".plan-share input[name=shows_evidence]")
    page.click(".plan-share button[type=submit]")
    link = page.locator("input[aria-label='Share link']").input_value()
    world.shared = "/sessions/s/" + link.split("/sessions/s/", 1)[1]

    page.goto(f"{server.url}/codebases/{world.codebase}/")
    page.fill("#rule-add textarea[name=text]", RULE)
    page.click("#rule-add button[type=submit]")
    expect(page.locator("#rules .rule-list")).to_contain_text("Never log tokens.")
    pins = [("note", "", PIN_NOTE), ("snippet", PIN_PATH, PIN_SNIPPET)]
    for count, (kind, path, text) in enumerate(pins, start=1):
        page.select_option("#pin-add select[name=kind]", kind)
        page.fill("#pin-add input[name=path]", path)
        page.fill("#pin-add textarea[name=text]", text)
        page.click("#pin-add button[type=submit]")
        expect(page.locator("#pins .pin")).to_have_count(count)


@pytest.fixture(scope="module")
def world(tmp_path_factory, browser) -> Iterator[World]:
    """The hostile codebase uploaded and a whole planning session run through the pages."""
    folder = tmp_path_factory.mktemp("xss")
    (folder / "hostile.json").write_text(json.dumps({"files": FILES}))
    with serve(folder, script=SCRIPT) as server:
        world = World(server)
        page = browser.new_page()
        page.set_default_timeout(WAIT)
        watch(page, world.live_dialogs)
        page.add_init_script(RECORD_STREAM)
        try:
            run_session(page, world)
            add_the_rest(page, world)
        except Exception as exc:
            # Injected markup can wreck the page the run is driven through: say what ran.
            raise AssertionError(
                f"the live session broke; dialogs: {world.live_dialogs}; "
                f"messages: {world.transcript()}"
            ) from exc
        page.close()
        yield world


@dataclass(frozen=True)
class Page:
    name: str
    path: Callable[[World], str]
    before: Callable[[Any, World], None] = lambda page, world: None  # done before the audit
    shows: str = "body"  # the part of the page that must show the payloads as text
    anonymous: bool = False  # opened without logging in


def _open_every_folder(page: Any, world: World) -> None:
    for _ in range(4):  # folders open in place; nested ones appear as their parents load
        closed = page.locator("#file-tree details:not([open])")
        if not closed.count():
            return
        for _ in range(closed.count()):
            closed.nth(0).locator("summary").click()
            page.wait_for_function("() => !document.querySelector('details[data-loaded=loading]')")


def _open_details(selector: str) -> Callable[[Any, World], None]:
    return lambda page, world: page.eval_on_selector_all(
        f"{selector} details", "all => all.forEach((d) => { d.open = true; })"
    )


def _upload_again(page: Any, world: World) -> None:
    """The same bytes again: the duplicate error names the codebase."""
    from playwright.sync_api import expect

    page.set_input_files("input[type=file]", str(world.server.folder / "hostile.json"))
    page.click("main form button[type=submit]")
    expect(page.locator(".error")).to_contain_text("onerror")


def _file(path: str) -> Callable[[World], str]:
    return lambda w: f"/codebases/{w.codebase}/file/{quote(path)}?hl=1-2"


PAGES = [
    Page("home", lambda w: "/"),
    Page("codebase list", lambda w: "/codebases/"),
    Page("codebase detail", lambda w: f"/codebases/{w.codebase}/", _open_every_folder),
    Page("codebase folder", lambda w: f"/codebases/{w.codebase}/?folder={quote(PAYLOADS[1])}/"),
    Page("upload error", lambda w: "/codebases/upload/", _upload_again),
    Page("file view: code", _file(CODE_FILE)),
    Page("file view: notes", _file(NOTES_FILE)),
    Page("file view: docs", _file(SCRIPT_FILE)),
    Page("session list", lambda w: "/sessions/"),
    Page("new session", lambda w: f"/sessions/new/?codebase={w.codebase}"),
    Page("session page", lambda w: f"/sessions/{w.session}/"),
    Page("plan page", lambda w: f"/sessions/{w.session}/plan/"),
    Page("plan card", lambda w: f"/sessions/{w.session}/plan-card/"),
    Page(
        "plan compare", lambda w: f"/sessions/{w.session}/plan/compare/?a=1&b=2", shows=".plan-diff"
    ),
    Page("shared plan", lambda w: w.shared, shows=".plan-page .md", anonymous=True),
    Page("trace panel", lambda w: f"/sessions/{w.session}/", _open_details("#trace"), "#trace"),
    Page("trace call", lambda w: f"/sessions/{w.session}/trace/{w.call}/"),
    Page("re-validate", lambda w: f"/sessions/{w.session}/plan/revalidate/", shows="#revalidate"),
    Page(
        "codebase rules", lambda w: f"/codebases/{w.codebase}/", _open_details("#rules"), "#rules"
    ),
    Page("codebase pins", lambda w: f"/codebases/{w.codebase}/", _open_details("#pins"), "#pins"),
    Page("admin index", lambda w: "/admin/"),
    Page("admin codebases", lambda w: "/admin/rag/codebase/"),
    Page("admin codebase", lambda w: f"/admin/rag/codebase/{w.codebase}/change/"),
    Page("admin files", lambda w: "/admin/rag/codefile/"),
    Page("admin file: code", lambda w: f"/admin/rag/codefile/{w.files[CODE_FILE]}/change/"),
    Page("admin file: notes", lambda w: f"/admin/rag/codefile/{w.files[NOTES_FILE]}/change/"),
    Page("admin sessions", lambda w: "/admin/conversations/planningsession/"),
    Page("admin session", lambda w: f"/admin/conversations/planningsession/{w.session}/change/"),
    Page("admin plans", lambda w: "/admin/conversations/plan/"),
    Page("admin plan", lambda w: f"/admin/conversations/plan/{w.plan}/change/"),
    Page("admin plan history", lambda w: f"/admin/conversations/plan/{w.plan}/history/"),
]


def test_the_live_session_ran_no_hostile_script(world):
    assert world.live_dialogs == []
    assert world.live_findings == []
    # The tokens really streamed in as text: the hostile reply was on screen mid-stream.
    assert any(SHOWN in text for text in world.streamed), world.streamed[-3:]


@pytest.mark.parametrize("spec", PAGES, ids=[p.name for p in PAGES])
def test_no_page_runs_a_payload(spec, world, browser):
    page = browser.new_page()
    dialogs: list[str] = []
    watch(page, dialogs)
    if not spec.anonymous:
        log_in(page, world.server)
    response = page.goto(world.server.url + spec.path(world))
    assert response is not None and response.ok, response and response.status
    page.wait_for_load_state("networkidle")
    spec.before(page, world)
    findings = page.evaluate(AUDIT)
    text = page.locator(spec.shows).inner_text()
    page.close()
    assert dialogs == []
    assert findings == []
    assert SHOWN in text, f"{spec.name} does not show the payloads, so it proves nothing"
