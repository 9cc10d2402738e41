"""The README's pictures of a planning session, made again from a script.

    .venv/bin/python scripts/screenshots.py

Starts the app with the scripted provider (tests/browser/live.py: daphne on a free port, its
own SQLite in a temporary folder), uploads the fixture pack the browser tests use, and plans
one change on it in Debian's chromium, a 1366 px and a 390 px page open on the same session:

- docs/screenshots/session-live-{1366,390}.png: Agent B's review caught mid-stream (a held
  reply, so the moment is the same every run), the evidence cards and the proposal above it;
- docs/screenshots/session-done-{1366,390}.png: the session finished, after the checkpoint
  was approved;
- docs/screenshots/session-plan-1366.png: the plan's own page.
- docs/screenshots/plan-step-sketch-1366.png: a step's current code and its checked sketch.

The replies are what a good session on this pack says: they cite the pack's real lines. Before
each picture the script checks that the page's figures agree (usage, budget, the Trace count,
the step in the status line and the sidebar) and that nothing scrolls sideways, and stops with
the difference if they do not. Under a minute (45 s on two busy cores).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import ViewportSize  # noqa: E402

from tests.browser.live import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    WAIT,
    Server,
    serve,
    start_planning,
)

OUT = ROOT / "docs" / "screenshots"
WIDE: ViewportSize = {"width": 1366, "height": 900}
NARROW: ViewportSize = {"width": 390, "height": 844}
DELAY = 0.02  # seconds between streamed pieces: the session plays out in a few seconds

TASK = (
    "Add brute-force protection to POST /login: after five bad passwords for one username "
    "in a minute, answer 429 with Retry-After until the minute ends."
)  # under 150 characters: the app's own search of the task shows it whole

ANALYSIS = (
    "Logins go through `login` (`todo/api.py:28-33`): it reads the JSON body, looks the user "
    "up in `USERS` (`todo/api.py:10`) and calls `check_password` (`todo/auth.py:20-23`), "
    "which re-derives the PBKDF2 hash with 100,000 rounds (`todo/auth.py:16`) on every "
    "attempt. A bad password returns 401 at `todo/api.py:32` and nothing remembers it, so a "
    "client may guess as fast as the server answers.\n\n"
    "Requests are routed by the `ROUTES` dict (`todo/api.py:48`) inside `app`; there is no "
    "middleware to hang a limiter on. State lives in module globals (`tokens`, `storage`, "
    "`todo/api.py:11-12`) of one `wsgiref` process. `json_response` (`todo/api.py:15-18`) "
    "always sends a single Content-Type header, so it cannot send `Retry-After` yet. "
    "`tests/test_api.py:23-25` checks one bad password and nothing about repeated ones."
)

# Every line a proposal or plan step cites is one the evidence shows: the app strips the line
# number of a citation no source holds (agents.citations.ground_steps).
EVIDENCE_PLAN = {
    "steps": [
        {"id": "E1", "tool": "read_file", "argument": "todo/api.py",
         "why": "the login handler and the response helper", "depends_on": [],
         "kind": "independent"},
        {"id": "E2", "tool": "find_symbol", "argument": "TokenStore",
         "why": "where per-user auth state lives", "depends_on": [], "kind": "independent"},
        {"id": "E3", "tool": "find_symbol", "argument": "check_password",
         "why": "what one attempt costs", "depends_on": [], "kind": "independent"},
        {"id": "E4", "tool": "find_symbol", "argument": "test_it_rejects_a_bad_password",
         "why": "where login tests live", "depends_on": [], "kind": "independent"},
    ],
    "next_action": "synthesize",
    "question": "",
}  # fmt: skip

PROPOSAL = {
    "summary": (
        "Count failed logins per username in a `LoginThrottle` beside `TokenStore` and check it "
        "in `login` before the password is hashed: five failures in 60 s get 429 with "
        "`Retry-After`."
    ),
    "steps": [
        {
            "title": "Add LoginThrottle",
            "detail": (
                "Beside `TokenStore` (`todo/auth.py:26`) [E2]: failure times per username, "
                "dropped after 60 s; `blocked()` gives the seconds left."
            ),
            "files": ["todo/auth.py"],
        },
        {
            "title": "Check it in login",
            "detail": (
                "In `login` (`todo/api.py:28`) [E1], answer 429 before `check_password` [E3]; "
                "count a failure on the 401 branch (`todo/api.py:32`)."
            ),
            "files": ["todo/api.py"],
        },
        {
            "title": "Send Retry-After",
            "detail": (
                "`json_response` (`todo/api.py:15`) takes optional extra headers; its other "
                "callers stay as they are [E1]."
            ),
            "files": ["todo/api.py"],
        },
        {
            "title": "Test the limit",
            "detail": (
                "Next to `tests/test_api.py:23` [E4]: the sixth bad password in a minute gets "
                "429, and alice logs in again once the minute is over."
            ),
            "files": ["tests/test_api.py"],
        },
    ],
    "files": [
        {"path": "todo/auth.py", "action": "modify", "reason": "LoginThrottle lives beside TokenStore"},
        {"path": "todo/api.py", "action": "modify", "reason": "login checks the throttle; json_response takes headers"},
        {"path": "tests/test_api.py", "action": "modify", "reason": "tests of the limit"},
    ],
}  # fmt: skip

REVIEW = (
    "- Counting by username alone lets anyone lock alice out with five bad guesses. Key the "
    "count on username **and** client address (`REMOTE_ADDR`, in the environ `login` gets, "
    "`todo/api.py:28`).\n"
    "- The failure dict grows with every name ever tried; a script posting random usernames "
    "fills memory. Drop a key once its list is empty and cap the number of keys.\n"
    "- Step 4 as written has to sleep through a real minute. Pass `now` into the throttle (or "
    "give `LoginThrottle` a clock) so `tests/test_api.py` can step time instead."
)
REVIEW_SHOWN = 52  # words of the review on the page when it is held: into its second objection
# The last pieces before the hold may still be in the turn's ~75 ms batch (it is flushed by the
# next piece), so the page is waited for up to a few words earlier.
HELD_TAIL = " ".join(REVIEW.split()[REVIEW_SHOWN - 12 : REVIEW_SHOWN - 8])

VERDICTS = {
    "verdicts": [
        {"objection": 1, "verdict": "keep", "reason": "[E1]: `login` gets the WSGI environ, so the client address is at hand."},
        {"objection": 2, "verdict": "keep", "reason": "[E2]: like `TokenStore`, the proposed dict only ever grows."},
        {"objection": 3, "verdict": "keep", "reason": "[E4]: the tests call the app directly; a clock can be passed in."},
    ]
}  # fmt: skip

PLAN = {
    "summary": (
        "Stop password guessing on `/login`: after five failed passwords for the same username "
        "from the same client within 60 seconds, the endpoint answers 429 with a `Retry-After` "
        "header until the window is over. The check runs before the password is hashed, so a "
        "blocked attempt costs nothing."
    ),
    "decisions": [
        "Key failures on (username, client address), so that nobody can lock a user out by "
        "guessing at their name.",
        "Keep the counts in process memory: the app is one wsgiref process "
        "(`todo/api.py:58-59`); a shared store can come with a second process.",
        "Inject the clock into `LoginThrottle` so tests step time instead of sleeping.",
    ],
    "steps": [
        {
            "title": "Add LoginThrottle",
            "symbol": "new definition in todo/auth.py",
            "detail": (
                "In `todo/auth.py` beside `TokenStore` (`todo/auth.py:26`) [E2]: failures per "
                "(username, address) with `blocked`, `failed` and `clear`, a `clock` argument "
                "defaulting to `time.monotonic`, empty keys dropped and at most 10,000 kept."
            ),
            "files": ["todo/auth.py"],
        },
        {
            "title": "Let json_response send headers",
            "symbol": "json_response",
            "detail": (
                "Add an optional `headers` argument to `json_response` (`todo/api.py:15`) "
                "[E1]; the existing callers are unchanged."
            ),
            "files": ["todo/api.py"],
        },
        {
            "title": "Check the throttle in login",
            "symbol": "login",
            "detail": (
                "In `login` (`todo/api.py:28`) [E1], read `REMOTE_ADDR`, answer 429 with "
                "`Retry-After` before `check_password` when blocked, record the failure on the "
                "401 branch (`todo/api.py:32`) and clear it on success."
            ),
            "files": ["todo/api.py"],
        },
        {
            "title": "Test it with a fake clock",
            "symbol": "none",
            "detail": (
                "Next to `test_it_rejects_a_bad_password` (`tests/test_api.py:23`) [E4], swap "
                "in a `LoginThrottle` with a settable clock, as the tests already swap "
                "`tokens`."
            ),
            "files": ["tests/test_api.py"],
        },
    ],
    "files": [
        {"path": "todo/auth.py", "action": "modify", "reason": "LoginThrottle beside TokenStore"},
        {"path": "todo/api.py", "action": "modify", "reason": "login checks the throttle; json_response takes headers"},
        {"path": "tests/test_api.py", "action": "modify", "reason": "tests of the limit"},
    ],
    "testing": [
        "Five bad passwords for alice get 401; the sixth gets 429 with a Retry-After of 60.",
        "After the clock moves 61 seconds, alice logs in with the right password.",
        "Failures from a second address do not block alice's first address.",
        "Run `pytest tests/test_api.py`.",
    ],
    "risks": [
        "Behind a proxy every client has the proxy's address: read the forwarded header only "
        "when a trusted proxy is configured.",
        "Counts are lost on restart, which briefly resets the limit; acceptable for one process.",
        "A distributed guesser rotating addresses is not stopped; an account-wide cap is the "
        "follow-up.",
    ],
    "effort": {"size": "S", "estimate": "1 day"},
}  # fmt: skip


# One change sketch per step on a real definition: "before" lines are the fixture's own.
SKETCHES = [
    {
        "before": [
            "def json_response(start_response, status: str, body: object) -> list[bytes]:",
            'start_response(status, [("Content-Type", "application/json")])',
        ],
        "after": [
            "def json_response(start_response, status: str, body: object, headers=()) -> list[bytes]:",
            '    start_response(status, [("Content-Type", "application/json"), *headers])',
        ],
    },
    {
        "before": [
            'stored = USERS.get(body.get("username", ""))',
            'if stored is None or not check_password(body.get("password", ""), stored):',
        ],
        "after": [
            '    key = (body.get("username", ""), environ.get("REMOTE_ADDR", ""))',
            "    if wait := throttle.blocked(key):",
            '        return json_response(start_response, "429 Too Many Requests",',
            '                             {"error": "too many attempts"}, [("Retry-After", str(wait))])',
            '    stored = USERS.get(body.get("username", ""))',
            '    if stored is None or not check_password(body.get("password", ""), stored):',
            "        throttle.failed(key)",
        ],
    },
]  # fmt: skip


def held(name: str, text: str, pieces: int) -> dict[str, Any]:
    return {"hold": {"text": text, "pieces": pieces, "name": name}}


SCRIPT: dict[str, dict[str, list[Any]]] = {
    "fake": {
        "text": [ANALYSIS, held("review", REVIEW, REVIEW_SHOWN)],
        "EvidencePlan": [json.dumps(EVIDENCE_PLAN)],
        "Proposal": [json.dumps(PROPOSAL)],
        "Verdicts": [json.dumps(VERDICTS)],
        "PlanDraft": [json.dumps(PLAN)],
        "ChangeSketch": [json.dumps(sketch) for sketch in SKETCHES],
    }
}

SIDEWAYS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
FIGURES = """() => {
  const text = (id) => (document.getElementById(id) || {}).textContent || "";
  return {meter: text("meter"), budget: text("budget"), trace: text("trace-count"),
          where: text("where"), running: text("running-label"), rows: Array.from(
            document.querySelectorAll("#workflow li")).map((li) => li.dataset.status)};
}"""


def start_session(page: Any, server: Server) -> str:
    """Upload the pack, start the session; the session page's URL."""
    start_planning(page, server, TASK, pack_name="todo-api")
    return str(page.url)


def wait_for_hold(server: Server, name: str) -> None:
    deadline = time.monotonic() + WAIT / 1000
    while not server.reached(name):
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: the {name} hold was never reached")
        time.sleep(0.05)


def figures_agree(page: Any) -> None:
    """Wait until the page's figures agree with each other, and stop if they never do: the
    usage line and the budget count the same calls as the Trace panel, and the status line
    names the step the sidebar marks."""
    try:
        page.wait_for_function(
            """() => {
              const calls = document.getElementById("meter").textContent.split(" LLM")[0];
              const budget = document.getElementById("budget").textContent;
              const trace = document.getElementById("trace-count").textContent;
              const rows = Array.from(document.querySelectorAll("#workflow li"));
              const at = rows.findIndex((li) => li.dataset.status === "current");
              const where = document.getElementById("where").textContent;
              const step = at < 0 ? where.startsWith(`All ${rows.length} steps`)
                                  : where.startsWith(`Step ${at + 1} of ${rows.length}`);
              return calls !== "0" && trace.startsWith(calls + " LLM")
                && budget.includes(` ${calls} of `) && step;
            }""",
            timeout=WAIT,
        )
    except Exception as exc:
        raise SystemExit(
            f"screenshots: the page disagrees with itself: {page.evaluate(FIGURES)}"
        ) from exc
    sideways = page.evaluate(SIDEWAYS)
    if sideways:
        raise SystemExit(f"screenshots: {page.url} scrolls {sideways} px sideways")


def scroll_to(page: Any, selector: str, *, top: bool = False, gap: int = 12) -> None:
    """Scroll the page so that `selector`'s first match ends `gap` px above the viewport's
    bottom (what led up to it fills the picture), or with `top`, starts `gap` px below its
    top."""
    page.locator(selector).first.evaluate(
        """(el, [top, gap]) => {
          const box = el.getBoundingClientRect();
          const y = top ? box.top - gap : box.bottom - window.innerHeight + gap;
          window.scrollTo(0, y + window.scrollY);
        }""",
        [top, gap],
    )


def shoot(page: Any, name: str) -> None:
    page.wait_for_timeout(300)  # the last frame painted
    page.screenshot(path=str(OUT / name))
    print(f"screenshots: wrote docs/screenshots/{name}")


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT)
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="screenshots-") as folder,
        serve(Path(folder), script=SCRIPT, delay=DELAY) as server,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport=WIDE)
        context.set_default_timeout(WAIT)
        wide = context.new_page()
        url = start_session(wide, server)
        narrow = context.new_page()
        narrow.set_viewport_size(NARROW)
        narrow.goto(url)

        # Mid-session: Agent B's review held part-way, both pages showing what has streamed.
        wait_for_hold(server, "review")
        streaming = "article.msg.agent-B.state-streaming"
        for page in (wide, narrow):
            expect(page.locator(f"{streaming} .body li").nth(1)).to_contain_text(HELD_TAIL)
            figures_agree(page)
        scroll_to(wide, "#running")
        shoot(wide, "session-live-1366.png")
        scroll_to(narrow, "#running")
        shoot(narrow, "session-live-390.png")
        server.release("review")

        # Finished: the proposal approved at the checkpoint, the plan written.
        wide.locator("#checkpoint button[data-action=approve]").click()
        for page in (wide, narrow):
            expect(page.locator("#status-badge")).to_have_text("Completed")
            expect(page.locator("#plan .plan-summary")).to_be_visible()
            figures_agree(page)
        # From the checked objections through the approval to the plan; the sidebar stays.
        scroll_to(wide, "article.msg[data-node=verify]", top=True, gap=16)
        shoot(wide, "session-done-1366.png")
        # A phone shows the sidebar last: every step done, the usage, the plan's card.
        scroll_to(narrow, "#plan-panel")
        shoot(narrow, "session-done-390.png")

        wide.goto(url + "plan/")
        expect(wide.locator("main")).to_be_visible()
        shoot(wide, "session-plan-1366.png")
        # A step on a real definition: its code as it is now, and the change sketch under it.
        expect(wide.locator("main")).to_contain_text("its lines match the code above")
        scroll_to(wide, "main li:has-text('Let json_response send headers')", top=True, gap=16)
        shoot(wide, "plan-step-sketch-1366.png")
        browser.close()
    print(f"screenshots: done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
