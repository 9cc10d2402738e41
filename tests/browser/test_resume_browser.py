"""The shipped session.js keeps a streamed reply whole across a dropped connection, and pages
in a history longer than one replay.

Agent A's first reply is scripted to stream word by word and stop at a hold the test releases.
Playwright sits on the websocket between the page and the server and misbehaves on purpose:
on the first connection it loses every frame after the fifth delta and then drops the socket
while the server streams on; on the reconnected socket it delivers every live delta twice,
loses one outright (a gap the page must notice and fill by resuming), and withholds the
final message.end so the text the page assembled from deltas can be compared before the
server's rendering replaces it. Every step waits for a condition; nothing waits for time."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import pytest

from conversations.consumers import REPLAY_LIMIT
from tests.browser.live import (
    ROOT,
    USERNAME,
    Server,
    django_shell,
    log_in,
    needs_chromium,
    serve,
)

pytestmark = needs_chromium()

WORDS = [f"w{i:03d}" for i in range(40)]
REPLY = " ".join(WORDS)
HOLD_AT = 30  # words streamed before the hold
DELAY = 0.1  # seconds per word: longer than a flush, so each word is its own delta
LOSE_AFTER = 5  # deltas the first connection delivers before it goes dead
WAIT = 120.0  # seconds any one condition may take on two busy cores
PACK = ROOT / "tests" / "fixtures" / "repomix" / "sample.xml"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    script = {"fake": {"text": [{"hold": {"text": REPLY, "pieces": HOLD_AT, "name": "reply"}}]}}
    with serve(tmp_path_factory.mktemp("resume"), script=script, delay=DELAY) as running:
        yield running


class Wire:
    """The websocket between the page and the server, as Playwright routes it."""

    def __init__(self) -> None:
        self.connections = 0
        self.seq: int | None = None  # the streaming reply's seq, from its first delta
        self.delivered = 0  # its deltas delivered on the first connection
        self.lost = 0  # frames lost on the first connection once it went dead
        self.live = 0  # its deltas seen on a later connection
        self.gap_at = 0  # the offset of the delta lost on purpose there
        self.resumes: list[tuple[int, int]] = []  # (connection, after_seq) the page asked for
        self.withheld: list[str] = []  # its message.end, kept from the page
        self.page_side: Any = None

    def attach(self, route: Any) -> None:
        self.connections += 1
        connection = self.connections
        self.page_side = route
        server = route.connect_to_server()
        route.on_message(lambda message: self.up(server, connection, message))
        server.on_message(lambda message: self.down(route, connection, message))

    def up(self, server: Any, connection: int, message: str | bytes) -> None:
        frame = json.loads(message)
        if frame.get("type") == "resume":
            self.resumes.append((connection, frame["after_seq"]))
        server.send(message)

    def down(self, page: Any, connection: int, message: str | bytes) -> None:
        frame = json.loads(message)
        ours = frame.get("type") == "message.delta" and frame["seq"] == (self.seq or frame["seq"])
        if ours:
            self.seq = frame["seq"]
        if connection == 1:
            if self.delivered >= LOSE_AFTER:
                self.lost += 1  # the link is dead; the server does not know yet
                return
            self.delivered += ours
            page.send(message)
            return
        if frame.get("type") == "message.end" and frame["message"]["seq"] == self.seq:
            self.withheld.append(str(message))
            return
        if ours and not frame.get("replay"):
            self.live += 1
            if self.live == 2:
                self.gap_at = frame["offset"]
                return  # lost: the next delta starts past what the page has
            page.send(message)  # and delivered twice: the copy must change nothing
        page.send(message)

    def deliver_withheld(self) -> None:
        for message in self.withheld:
            self.page_side.send(message)


def until(page: Any, condition: Callable[[], bool], what: str) -> None:
    """Let Playwright deliver frames until `condition` holds."""
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(20)


def saved(server: Server, session: int, seq: int) -> tuple[str, str]:
    """(content, state) of a message as the server's database has it now."""
    db = sqlite3.connect(f"file:{server.folder / 'planagents.sqlite3'}?mode=ro", uri=True)
    with db:
        row = db.execute(
            "SELECT content, state FROM conversations_message WHERE session_id = ? AND seq = ?",
            (session, seq),
        ).fetchone()
    db.close()
    return row[0], row[1]


BODY = "(seq) => document.querySelector('#m' + seq + ' .body').textContent"


def shows(page: Any, seq: int, text: str) -> None:
    page.wait_for_function(
        "([seq, text]) => document.querySelector('#m' + seq + ' .body')?.textContent === text",
        arg=[seq, text],
        timeout=WAIT * 1000,
    )


def test_a_reply_streamed_across_a_dropped_socket_is_shown_whole_and_once(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page()
    page.set_default_timeout(WAIT * 1000)
    log_in(page, server)
    page.goto(server.url + "/codebases/upload/")
    page.set_input_files("input[type=file]", str(PACK))
    page.click("main form button[type=submit]")
    expect(page.locator(".tree")).to_be_visible(timeout=WAIT * 1000)

    wire = Wire()
    page.route_web_socket(re.compile(r"/ws/sessions/\d+/$"), wire.attach)
    page.goto(server.url + "/sessions/new/")
    page.select_option("select[name=mode]", "planning")
    page.select_option("select[name=agent_a_profile]", "fake")
    page.fill("textarea[name=task]", "Add rate limiting to the login endpoint")
    page.click("#new-session button[type=submit]")
    page.wait_for_url("**/sessions/*/")
    session = int(page.url.rstrip("/").rsplit("/", 1)[1])

    # 1. The first connection goes dead after five deltas; the server streams on to the hold.
    until(page, lambda: wire.lost > 0 and server.reached("reply"), "the hold")
    seq = wire.seq
    assert seq is not None
    at_hold, state = saved(server, session, seq)
    assert state == "streaming" and at_hold == " ".join(WORDS[:HOLD_AT])
    frozen = page.evaluate(BODY, seq)
    assert at_hold.startswith(frozen) and len(frozen) < len(at_hold), "nothing was lost"

    # 2. The socket drops; the page reconnects and resumes from the database: no gap.
    wire.page_side.close(code=4000, reason="the network dropped it")
    shows(page, seq, at_hold)
    assert wire.connections == 2
    assert wire.resumes[-1] == (2, seq - 1)

    # 3. The rest streams live, every delta twice and one lost: still no gap, no repeat.
    server.release("reply")
    until(page, lambda: bool(wire.withheld), "the end of the reply")
    assert wire.gap_at > len(at_hold)
    assert wire.resumes.count((2, seq - 1)) == 2, "the page did not resume after the gap"
    shows(page, seq, REPLY)
    expect(page.locator(f"#m{seq}")).to_have_class(re.compile(r"\bstate-streaming\b"))

    # 4. The server's rendering of the finished reply replaces the assembled text.
    wire.deliver_withheld()
    expect(page.locator(f"#m{seq}")).to_have_class(re.compile(r"\bstate-complete\b"))
    assert page.evaluate(BODY, seq).strip() == REPLY == saved(server, session, seq)[0]
    assert page.locator("#messages").inner_text().count(WORDS[17]) == 1
    page.close()


# ------------------------------------------------------------------ paging in history

NEW_SESSION = """
from django.contrib.auth import get_user_model
from conversations.models import Message, PlanningSession, PlanningState
from rag.models import Codebase

owner = get_user_model().objects.get(username={user!r})
codebase = Codebase.objects.create(owner=owner, name="history", status="ready")
session = PlanningSession.objects.create(
    owner=owner, codebase=codebase, title="History", task="t", agent_a_profile="fake",
    agent_b_profile="fake", status="completed",
)
PlanningState.objects.create(session=session, current_node="completed")
print(session.pk)
"""

MORE_MESSAGES = """
from conversations.models import Message, PlanningSession

Message.objects.bulk_create(
    Message(session_id={session}, seq=n, role="agent", agent="A", content=f"Reply **{{n}}**")
    for n in range({first}, {last} + 1)
)
PlanningSession.objects.filter(pk={session}).update(last_seq={last})
"""

# (seq, text) of every message on the page, in page order.
SHOWN = """() => [...document.querySelectorAll("#messages article.msg")].map(
  (a) => [Number(a.dataset.seq), a.querySelector(".body").textContent.trim()])"""


def test_a_history_longer_than_a_replay_is_paged_in_once_and_in_order(server, browser):
    """The page is open on three messages when 2 x REPLAY_LIMIT + 30 more are written that it
    never hears of, and its socket drops. Its resume gets the latest REPLAY_LIMIT and a
    history.gap, and session.js pages the rest in with history frames until history.end says
    none are left."""
    from playwright.sync_api import expect

    session = int(django_shell(server, NEW_SESSION.format(user=USERNAME)))
    django_shell(server, MORE_MESSAGES.format(session=session, first=1, last=3))
    last = 3 + 2 * REPLAY_LIMIT + 30

    page = browser.new_page()
    page.set_default_timeout(WAIT * 1000)
    sent: list[tuple[int, dict[str, Any]]] = []  # (connection, frame) the page sent
    sockets: list[Any] = []

    def attach(route: Any) -> None:
        sockets.append(route)
        connection = len(sockets)
        upstream = route.connect_to_server()

        def up(message: str | bytes) -> None:
            sent.append((connection, json.loads(message)))
            upstream.send(message)

        route.on_message(up)
        upstream.on_message(route.send)

    page.route_web_socket(re.compile(r"/ws/sessions/\d+/$"), attach)
    log_in(page, server)
    page.goto(f"{server.url}/sessions/{session}/")
    expect(page.locator("#conn")).to_have_text("live", timeout=WAIT * 1000)
    until(page, lambda: (1, {"type": "resume", "after_seq": 3}) in sent, "the first resume")
    assert page.evaluate(SHOWN) == [[n, f"Reply {n}"] for n in (1, 2, 3)]

    django_shell(server, MORE_MESSAGES.format(session=session, first=4, last=last))
    sockets[0].close(code=4000, reason="the network dropped it")

    expect(page.locator("#messages article.msg")).to_have_count(last, timeout=WAIT * 1000)
    assert page.evaluate(SHOWN) == [[n, f"Reply {n}"] for n in range(1, last + 1)]
    asked = [frame for connection, frame in sent if connection == 2]
    assert asked == [
        {"type": "resume", "after_seq": 3},
        {"type": "history", "after_seq": 3, "before_seq": last - REPLAY_LIMIT + 1},
        {"type": "history", "after_seq": 3, "before_seq": last - 2 * REPLAY_LIMIT + 1},
    ]
    page.close()
