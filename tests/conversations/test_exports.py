"""Exports of a plan version, each read back: the JSON validates against docs/plan.schema.json,
the GitHub body has one task per step, the hand-off prompt never lists a missing path as a file."""

import json
import re

import jsonschema
import pytest
from django.urls import reverse

from conversations import export_formats, exports
from conversations.models import Message, Plan, PlanningSession, PlanningState
from rag.models import Pin, Rule

pytestmark = pytest.mark.django_db

STRUCTURED = {
    "summary": "Throttle login attempts per user.",
    "decisions": ["Keep the counter in the cache, not the database."],
    "steps": [
        {
            "title": "Add a limiter",
            "detail": "Count attempts in `todo/api.py:3`.",
            "files": ["todo/api.py", "todo/ratelimit.py"],
        },
        {
            "title": "Wire it in\n- [ ] forged task",
            "detail": "Call it from login.\n- [ ] another",
            "files": ["todo/ghost.py", "path"],
        },
        {"title": "Document it", "detail": "", "files": ["docs/usage.md"]},
    ],
    "files": [
        {"path": "todo/api.py", "action": "modify", "reason": "Entry point"},
        {"path": "todo/ratelimit.py", "action": "create", "reason": "The limiter"},
        {"path": "todo/ghost.py", "action": "modify", "reason": "Was never there"},
        {"path": "../../etc/passwd", "action": "modify", "reason": "Nonsense"},
        {"path": "docs/usage.md", "action": "modify", "reason": "Docs"},
    ],
    "testing": ["A sixth attempt within a minute is refused."],
    "risks": ["Shared IPs get locked out together."],
    "effort": {"size": "S", "estimate": "1 day"},
}
MARKDOWN = "# Plan\n\n## Steps\n\n1. See `todo/api.py:1-3` and `todo/ghost.py:5`.\n"
EXISTING = ["todo/api.py", "docs/usage.md"]
ABSENT = ["todo/ghost.py", "../../etc/passwd"]


@pytest.fixture
def plan(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    return Plan.objects.create(session=session, version=1, markdown=MARKDOWN, structured=STRUCTURED)


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_json_export_validates_against_the_published_schema(plan):
    data = json.loads(exports.to_json(exports.plan_data(plan)))
    jsonschema.Draft202012Validator.check_schema(exports.schema())
    jsonschema.validate(data, exports.schema(), cls=jsonschema.Draft202012Validator)
    assert data["schema_version"] == "1"


def test_the_json_export_gives_every_path_its_status_and_every_citation(plan):
    data = exports.plan_data(plan)
    statuses = {f["path"]: f["status"] for f in data["files"]}
    assert statuses == {
        "todo/api.py": "exists",
        "todo/ratelimit.py": "new",
        "todo/ghost.py": "missing",
        "../../etc/passwd": "invalid",
        "docs/usage.md": "exists",
    }
    cited = {(c["path"], c["start"], c["end"], c["exists"]) for c in data["citations"]}
    assert cited == {("todo/api.py", 1, 3, True), ("todo/ghost.py", 5, 5, False)}
    assert [f["path"] for f in data["steps"][1]["files"]] == ["todo/ghost.py"]  # "path" dropped


def test_the_schema_refuses_a_file_without_a_status(plan):
    data = exports.plan_data(plan)
    del data["files"][0]["status"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, exports.schema(), cls=jsonschema.Draft202012Validator)


def test_a_plan_without_structured_data_still_exports_valid_json(plan):
    plan.structured = {"steps": "not a list", "effort": {"size": "huge"}}
    data = exports.plan_data(plan)
    jsonschema.validate(data, exports.schema(), cls=jsonschema.Draft202012Validator)
    assert data["steps"] == [] and data["effort"] is None


def test_the_github_body_has_one_checklist_item_per_step(plan):
    body = exports.github_issue(exports.plan_data(plan))
    tasks = re.findall(r"^- \[ \] (.*)$", body, flags=re.M)
    assert len(tasks) == len(STRUCTURED["steps"])
    assert tasks[0].startswith("**Add a limiter**")
    files = _sections(body)["Files"]
    assert "`todo/ghost.py` — modify — NOT IN THE CODEBASE" in files
    assert "`todo/ratelimit.py` — create — new file" in files


def test_the_handoff_prompt_lists_every_existing_file_and_no_missing_one_as_a_file(plan):
    prompt = exports.handoff_prompt(exports.plan_data(plan))
    sections = _sections(prompt)
    for heading in ("Goal", "Constraints and rules", "Files", "Steps", "Tests to write",
                    "Done when"):  # fmt: skip
        assert heading in sections
    for path in EXISTING:
        assert f"`{path}`" in sections["Files"]
    assert "`todo/api.py` (lines 1-3): modify" in sections["Files"]
    assert "`todo/ratelimit.py`: create" in sections["Files"]
    unsure = sections["Paths the plan named that are not in the codebase"]
    for path in ABSENT:
        assert path not in sections["Files"] and path not in sections["Steps"]
        assert path in unsure
    assert [line[:2] for line in sections["Steps"].strip().splitlines() if line[0].isdigit()] == [
        "1.", "2.", "3.",
    ]  # fmt: skip


CRITICAL = "Never touch legacy/ without the platform team."
NORMAL = "Tests use pytest, not unittest."
NOTE = "Rate limits live in settings.RATE_LIMITS, never in code."
SNIPPET = "def limited(view):\n    ```\n    return view"


def _pin(pin, number, kind, title, text):
    return {"number": number, "pin_id": pin.pk, "kind": kind, "title": title, "text": text,
            "found": True, "truncated": False}  # fmt: skip


def test_the_handoff_prompt_carries_the_codebase_rules_and_the_pins_the_plan_used(plan):
    codebase = plan.session.codebase
    critical = Rule.objects.create(codebase=codebase, text=CRITICAL, severity="critical")
    Rule.objects.create(codebase=codebase, text=NORMAL, source="CONTRIBUTING.md")
    Rule.objects.create(codebase=codebase, text="A rule switched off.", enabled=False)
    note = Pin.objects.create(codebase=codebase, kind="note", text=NOTE)
    snippet = Pin.objects.create(codebase=codebase, kind="snippet", path="todo/api.py",
                                 text=SNIPPET)  # fmt: skip
    Pin.objects.create(codebase=codebase, kind="note", text="Pinned after the plan was written.")
    plan.structured = {
        **STRUCTURED,
        "pins_used": [_pin(note, 1, "note", "note", NOTE),
                      _pin(snippet, 2, "snippet", "snippet from todo/api.py", SNIPPET)],
        "rules_check": {"what": "plan", "ran": True, "checked": 2, "critical": 1, "violations": [
            {"label": "R1", "rule_id": critical.pk, "text": CRITICAL, "severity": "critical",
             "explanation": "Step 2 edits legacy/auth.py."}]},
        "rules_overrides": [{"rules": [{"label": "R1", "rule_id": critical.pk}],
                             "reason": "The platform team signed off."}],
    }  # fmt: skip
    plan.save()

    prompt = export_formats.EXPORTS["handoff"].render(plan)
    rules = _sections(prompt)["The codebase's rules"]
    assert f"- [critical] {CRITICAL} — the plan breaks it; the human accepted that: " in rules
    assert "The platform team signed off." in rules
    assert f"- {NORMAL} (from `CONTRIBUTING.md`)" in rules
    assert "switched off" not in prompt
    pins = _sections(prompt)["Pinned context"]
    assert f"- [P1] {NOTE}" in pins
    assert "- [P2] snippet from todo/api.py:\n\n````\n" + SNIPPET + "\n````" in pins
    assert "Pinned after the plan was written." not in prompt


def test_a_plan_that_records_no_pins_hands_off_those_its_session_was_shown(plan):
    pin = Pin.objects.create(codebase=plan.session.codebase, kind="note", text=NOTE)
    Message.objects.create(session=plan.session, seq=1, role="system", node="pinned_context",
                           content="Pinned context", data={"pins": [_pin(pin, 1, "note", "note", NOTE)]})  # fmt: skip
    prompt = export_formats.EXPORTS["handoff"].render(plan)
    assert f"- [P1] {NOTE}" in _sections(prompt)["Pinned context"]
    assert "The codebase's rules" not in prompt  # the codebase has none


@pytest.mark.parametrize("kind", ["json", "github", "handoff"])
def test_the_owner_downloads_each_export(client, user, plan, kind):
    client.force_login(user)
    url = reverse("conversations:plan_export", args=[plan.session_id, kind])
    response = client.get(url, {"download": "1", "version": "1"})
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    assert response.content.decode() == export_formats.EXPORTS[kind].render(plan)
    assert client.get(url)["Content-Disposition"].startswith("inline;")


@pytest.mark.parametrize("kind", ["json", "github", "handoff"])
def test_another_user_or_a_visitor_cannot_export(client, other_user, plan, kind):
    url = reverse("conversations:plan_export", args=[plan.session_id, kind])
    assert client.get(url).status_code == 302
    client.force_login(other_user)
    assert client.get(url).status_code == 404


def test_an_unknown_export_is_not_found(client, user, plan):
    client.force_login(user)
    url = reverse("conversations:plan_export", args=[plan.session_id, "pdf"])
    assert client.get(url).status_code == 404


def test_the_plan_page_offers_each_export_with_a_copy_button(client, user, plan):
    client.force_login(user)
    page = client.get(reverse("conversations:plan", args=[plan.session_id])).content.decode()
    for kind in ("json", "github", "handoff"):
        url = reverse("conversations:plan_export", args=[plan.session_id, kind])
        assert f'data-url="{url}?version=1"' in page
        assert f'href="{url}?version=1&amp;download=1"' in page
