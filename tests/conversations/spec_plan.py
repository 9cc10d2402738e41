"""The fixed plan the spec-layout exports are rendered from in their golden tests: a plan
version as `agents.plan.build_version` stores one (steps on real definitions of the sample
codebase with their code and sketches, a new definition, a path the codebase lacks, the quality
record), on a session and a date that never change."""

from __future__ import annotations

import difflib
import os
from datetime import UTC, datetime
from pathlib import Path

from conversations.models import Plan, PlanningSession, PlanningState
from rag.models import Rule

GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "exports"
SESSION_ID = 7
CREATED = datetime(2026, 11, 20, 10, 30, 5, tzinfo=UTC)

LOGIN_CODE = [
    "def login(environ, start_response):",
    '    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))',
    '    stored = USERS.get(body.get("username", ""))',
    '    if stored is None or not check_password(body.get("password", ""), stored):',
    '        return json_response(start_response, "401 Unauthorized", {"error": "bad credentials"})',
    '    return json_response(start_response, "200 OK", {"token": tokens.issue(body["username"])})',
]

STRUCTURED = {
    "summary": "Refuse a sixth login attempt within a minute, counted per user name.",
    "decisions": ["Keep the counter in memory, as `TokenStore` keeps tokens."],
    "steps": [
        {
            "title": "Count failed logins",
            "detail": "Check the counter before the password (`login` at `todo/api.py:27`).",
            "files": ["todo/api.py"],
            "target": {"kind": "definition", "name": "login", "path": "todo/api.py",
                       "start": 27, "end": 32},
            "code": {"path": "todo/api.py", "start": 27, "lines": LOGIN_CODE},
            "sketch": {
                "before": [LOGIN_CODE[2]],
                "after": [LOGIN_CODE[2], "    if limiter.blocked(body.get(\"username\", \"\")):",
                          '        return json_response(start_response, "429 Too Many Requests", {})'],
                "start": 29,
                "checked": True,
                "hunk": [
                    "@@ -28,4 +28,6 @@ login",
                    " " + LOGIN_CODE[1],
                    " " + LOGIN_CODE[2],
                    '+    if limiter.blocked(body.get("username", "")):',
                    '+        return json_response(start_response, "429 Too Many Requests", {})',
                    " " + LOGIN_CODE[3],
                    " " + LOGIN_CODE[4],
                ],
            },
        },
        {
            "title": "Add the limiter",
            "detail": "A `LoginLimiter` with `blocked(user)`.",
            "files": ["todo/ratelimit.py"],
            "target": {"kind": "new", "path": "todo/ratelimit.py"},
        },
        {
            "title": "Log refusals",
            "detail": "Write a line per refused login.",
            "files": ["todo/logging.py"],
        },
    ],
    "files": [
        {"path": "todo/api.py", "action": "modify", "reason": "Where logins are checked",
         "status": "exists"},
        {"path": "todo/ratelimit.py", "action": "create", "reason": "The limiter", "status": "new"},
        {"path": "todo/logging.py", "action": "modify", "reason": "Log refusals",
         "status": "missing"},
    ],
    "testing": [
        "When a user fails to log in six times within a minute, the sixth attempt gets 429.",
        "Test that another user can still log in.",
        "A successful login resets the count.",
    ],
    "risks": ["Users behind one name share a counter."],
    "quality": {
        "steps": 3, "on_definitions": 1, "new_definitions": 1, "sketches": 1,
        "sketches_checked": 1, "files": 3, "invented_paths": ["todo/logging.py"],
        "invented_names": [], "tests": [["tests/test_api.py", "imports the changed module"]],
        "tests_named": False,
    },
}  # fmt: skip
MARKDOWN = (
    "# Plan: Rate limiting for login\n\n1. See `todo/api.py:27-32` and `todo/logging.py:4`.\n"
)


def make_plan(user, codebase, structured=None, title="Rate limiting for login", task=None):
    """The fixed plan (or `structured` on the same session), with one rule of each severity."""
    session = PlanningSession.objects.create(
        pk=SESSION_ID, owner=user, codebase=codebase, title=title,
        task=task or "Add rate limiting to login", agent_a_profile="fake",
        agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    Rule.objects.create(codebase=codebase, text="Tests use pytest.", source="AGENTS.md")
    plan = Plan.objects.create(
        session=session, version=1, markdown=MARKDOWN, structured=structured or STRUCTURED
    )
    Plan.objects.filter(pk=plan.pk).update(created_at=CREATED)
    plan.refresh_from_db()
    return plan


def assert_golden(name: str, text: str) -> None:
    """`text` is the checked-in tests/fixtures/exports/<name>, byte for byte. With
    PLANAGENTS_UPDATE_GOLDEN=1 the file is rewritten instead (then review its diff)."""
    path = GOLDEN / name
    if os.environ.get("PLANAGENTS_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(True), text.splitlines(True), f"expected/{name}", f"got/{name}"
        )
    )
    assert text == expected, diff
