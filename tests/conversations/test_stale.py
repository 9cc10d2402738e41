"""Stale-plan warnings: a plan version records the files and lines it rests on when it is
written; after a new version of the codebase it says what changed, where, and which steps."""

import hashlib
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents.providers.fake import FakeProvider
from conversations import exports, stale
from conversations.models import Plan, PlanningSession, PlanningState
from rag.indexing import index_codebase
from rag.models import Codebase, CodeFile
from rag.services import create_codebase_from_upload

pytestmark = pytest.mark.django_db

API = "".join(f"line {n}\n" for n in range(1, 11))
AUTH = "def login():\n    return check()\n"
STRUCTURED = {
    "summary": "Throttle login attempts.",
    "steps": [
        {"title": "Count attempts", "detail": "In `app/api.py:3-4`.", "files": ["app/api.py"]},
        {"title": "Lock out", "detail": "Wrap login.", "files": ["app/auth.py"]},
        {"title": "Add the limiter", "detail": "", "files": ["app/limit.py"]},
    ],
    "files": [
        {"path": "app/api.py", "action": "modify", "reason": "Entry"},
        {"path": "app/auth.py", "action": "modify", "reason": "Login"},
        {"path": "app/limit.py", "action": "create", "reason": "The limiter"},
    ],
}
MARKDOWN = "# Plan\n\n1. Count attempts in `app/api.py:3-4`.\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def codebase(user):
    codebase = Codebase.objects.create(
        owner=user, name="app", status=Codebase.Status.READY, content_hash="v1"
    )
    for path, text in (("app/api.py", API), ("app/auth.py", AUTH)):
        CodeFile.objects.create(
            codebase=codebase, path=path, sha256=_sha(text), content=text,
            line_count=text.count("\n"),
        )  # fmt: skip
    return codebase


@pytest.fixture
def plan(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    return Plan.objects.create(session=session, version=1, markdown=MARKDOWN, structured=STRUCTURED)


def new_version(codebase, files: dict[str, str | None]) -> None:
    """What a re-index does to the rows: the same Codebase, files updated in place."""
    for path, text in files.items():
        if text is None:
            CodeFile.objects.filter(codebase=codebase, path=path).delete()
        else:
            CodeFile.objects.update_or_create(
                codebase=codebase, path=path,
                defaults={"content": text, "sha256": _sha(text), "line_count": text.count("\n")},
            )  # fmt: skip
    Codebase.objects.filter(pk=codebase.pk).update(content_hash="v2")


def check(plan):
    return stale.check(Plan.objects.get(pk=plan.pk))


def test_a_new_plan_records_the_files_and_lines_it_rests_on(plan):
    snapshot = Plan.objects.get(pk=plan.pk).structured["snapshot"]
    assert snapshot["files"] == {
        "app/api.py": _sha(API),
        "app/auth.py": _sha(AUTH),
        "app/limit.py": None,
    }
    assert [(c["path"], c["start"], c["end"]) for c in snapshot["citations"]] == [
        ("app/api.py", 3, 4)
    ]
    assert snapshot["citations"][0]["sha"] == _sha("line 3\nline 4")


def test_an_unchanged_codebase_leaves_the_plan_fresh(plan, codebase):
    new_version(codebase, {"app/other.py": "x = 1\n"})  # a file the plan does not name
    report = check(plan)
    assert report.state == "fresh"
    assert report.changes == []


def test_a_changed_file_makes_the_plan_stale_and_names_its_steps(plan, codebase):
    new_version(codebase, {"app/auth.py": AUTH + "\n# audited\n"})
    report = check(plan)
    assert report.state == "stale"
    assert [(c.path, c.kind) for c in report.changes] == [("app/auth.py", "changed")]
    assert [(s.number, s.title, s.paths) for s in report.steps] == [
        (2, "Lock out", ["app/auth.py"])
    ]


def test_a_removed_file_is_reported_as_removed(plan, codebase):
    new_version(codebase, {"app/auth.py": None})
    report = check(plan)
    assert report.state == "stale"
    assert [(c.path, c.kind) for c in report.changes] == [("app/auth.py", "removed")]
    assert "no longer in the codebase" in report.changes[0].message


def test_cited_lines_that_moved_say_where_they_are_now(plan, codebase):
    new_version(codebase, {"app/api.py": "import os\n\n" + API})
    report = check(plan)
    moved = [c for c in report.changes if c.kind == "lines_moved"]
    assert [(c.path, c.start, c.end, c.now_start, c.now_end) for c in moved] == [
        ("app/api.py", 3, 4, 5, 6)
    ]
    assert "now at 5-6" in moved[0].message
    assert [s.number for s in report.steps] == [1]


def test_cited_lines_that_changed_are_reported_as_changed(plan, codebase):
    new_version(codebase, {"app/api.py": API.replace("line 4", "line four")})
    report = check(plan)
    assert [(c.kind, c.start, c.end) for c in report.changes if c.path == "app/api.py"] == [
        ("changed", 0, 0),
        ("lines_changed", 3, 4),
    ]


def test_a_file_changed_elsewhere_keeps_its_cited_lines(plan, codebase):
    new_version(codebase, {"app/api.py": API + "line 11\n"})
    report = check(plan)
    assert [c.kind for c in report.changes] == ["changed"]
    assert report.unchanged_citations == [("app/api.py", "3-4")]


def test_a_file_the_plan_would_create_appearing_is_reported(plan, codebase):
    new_version(codebase, {"app/limit.py": "LIMIT = 5\n"})
    report = check(plan)
    assert [(c.path, c.kind) for c in report.changes] == [("app/limit.py", "appeared")]


def test_a_plan_from_before_snapshots_says_it_cannot_tell(plan, codebase):
    Plan.objects.filter(pk=plan.pk).update(structured=STRUCTURED)  # no signal: an old row
    new_version(codebase, {"app/auth.py": None})
    report = check(plan)
    assert report.state == "unknown"
    assert "can't tell" in report.reason
    assert report.changes == []


def test_a_codebase_being_reindexed_is_not_called_fresh(plan, codebase):
    Codebase.objects.filter(pk=codebase.pk).update(status=Codebase.Status.INDEXING)
    report = check(plan)
    assert report.state == "unknown"
    assert "being indexed" in report.reason


def test_exports_never_carry_the_snapshot(plan):
    text = exports.to_json(exports.plan_data(Plan.objects.get(pk=plan.pk)))
    assert "snapshot" not in text
    assert _sha(API) not in text


def test_the_plan_page_warns_with_revalidate_and_replan(client, user, plan, codebase):
    client.force_login(user)
    url = reverse("conversations:plan", args=[plan.session_id])
    assert b'id="plan-stale"' not in client.get(url).content
    new_version(codebase, {"app/auth.py": None})
    page = client.get(url).content.decode()
    assert 'id="plan-stale"' in page
    assert "<code>app/auth.py</code> is no longer in the codebase." in page
    assert "2. Lock out" in page
    assert reverse("conversations:plan_revalidate", args=[plan.session_id]) in page
    assert reverse("conversations:plan_replan", args=[plan.session_id]) in page


def test_revalidate_checks_paths_and_citations_against_the_new_version(
    client, user, plan, codebase
):
    new_version(codebase, {"app/api.py": "just one line\n"})
    client.force_login(user)
    url = reverse("conversations:plan_revalidate", args=[plan.session_id])
    page = client.get(url).content.decode()
    assert (
        "<code>app/api.py</code> changed since the plan was written; lines 3-4 no longer "
        "hold the code the plan cited." in page
    )
    assert '<code>app/api.py:3-4</code> <span class="badge missing">not found</span>' in page
    assert "stale</span>" in page


def test_revalidate_and_replan_are_the_owners_only(client, other_user, plan):
    client.force_login(other_user)
    session_id = plan.session_id
    revalidate = reverse("conversations:plan_revalidate", args=[session_id])
    assert client.get(revalidate).status_code == 404
    replan = reverse("conversations:plan_replan", args=[session_id])
    assert client.post(replan, {"version": "1"}).status_code == 404
    assert PlanningSession.objects.count() == 1


def test_replan_starts_a_session_seeded_with_the_old_goal_and_steps(
    client, user, plan, codebase, monkeypatch
):
    started: list[int] = []
    monkeypatch.setattr("conversations.services._dispatch_run", started.append)
    new_version(codebase, {"app/auth.py": None})
    client.force_login(user)
    response = client.post(
        reverse("conversations:plan_replan", args=[plan.session_id]), {"version": "1"}
    )
    new = PlanningSession.objects.exclude(pk=plan.session_id).get()
    assert response.status_code == 302
    assert response["Location"] == reverse("conversations:detail", args=[new.pk])
    assert started == [new.pk]
    assert new.codebase_id == codebase.pk and new.mode == "planning"
    assert new.task.startswith("Add rate limiting\n\nSeeded from plan v1")
    assert f"Seeded from plan v1 of session #{plan.session_id}" in new.task
    assert "Goal of that plan: Throttle login attempts." in new.task
    assert "2. Lock out — Wrap login." in new.task
    assert "- `app/auth.py` is no longer in the codebase." in new.task
    page = client.get(response["Location"]).content.decode()
    assert f"Seeded from plan v1 of session #{plan.session_id}" in page


def test_the_seeded_task_reaches_the_planner_prompt(user, plan, codebase, monkeypatch):
    """The seed is the task: whatever the workflow sends the model about the task has it."""
    from conversations.tasks import run_session

    monkeypatch.setattr("conversations.services._dispatch_run", lambda pk: None)
    task = stale.seed_task(Plan.objects.get(pk=plan.pk), check(plan), 20_000)
    from conversations import services

    new = services.start_session(
        user, codebase=codebase, task=task, mode="planning",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    run_session(new.pk)
    prompts = [m.content for call in FakeProvider.calls("fake") for m in call.messages]
    assert any("1. Count attempts — In `app/api.py:3-4`." in p for p in prompts)


def test_the_seed_fits_the_task_limit_by_cutting_steps(plan):
    fresh = Plan.objects.get(pk=plan.pk)
    text = stale.seed_task(fresh, stale.StaleReport("fresh"), 280)
    assert len(text) <= 280
    assert text.startswith("Add rate limiting")
    assert "1. Count attempts" in text and "2. Lock out" not in text
    assert text.endswith("\n…")


def test_a_real_new_version_upload_marks_the_plan_stale(client, user):
    """End to end: index v1, write a plan, upload v2 through the codebase page, re-index."""
    v1 = {"files": {"app/api.py": API, "app/auth.py": AUTH}}
    pack = SimpleUploadedFile("v1.json", json.dumps(v1).encode())
    codebase = create_codebase_from_upload(user, "app", [pack])
    index_codebase(codebase.pk)
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    plan = Plan.objects.create(session=session, version=1, markdown=MARKDOWN, structured=STRUCTURED)
    assert check(plan).state == "fresh"

    client.force_login(user)
    v2 = {"files": {"app/api.py": "# new header\n" + API, "app/auth.py": AUTH}}
    upload = SimpleUploadedFile("v2.json", json.dumps(v2).encode())
    response = client.post(reverse("rag:new_version", args=[codebase.pk]), {"pack": upload})
    assert response.status_code == 302
    index_codebase(codebase.pk)

    page = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert "Stale: the code changed since this plan was written." in page
    assert (
        "changed since the plan was written; lines 3-4 moved: the same lines are now at 4-5."
        in page
    )


def test_a_version_derived_from_a_stale_one_stays_stale(plan, codebase):
    """An edited section copies the base's data, record included: copying is not re-checking."""
    new_version(codebase, {"app/auth.py": AUTH + "# v2\n"})
    base = Plan.objects.get(pk=plan.pk)
    data = {**base.structured, "summary": "Throttle harder."}
    data["files"] = [f for f in data["files"] if f["path"] != "app/limit.py"]
    data["steps"] = data["steps"][:2]  # the plan no longer names app/limit.py at all
    derived = Plan.objects.create(
        session=base.session, version=2, markdown=MARKDOWN, structured=data
    )
    report = check(derived)
    assert [(c.path, c.kind) for c in report.changes] == [("app/auth.py", "changed")]
    assert "app/limit.py" not in Plan.objects.get(pk=derived.pk).structured["snapshot"]["files"]


def test_a_new_version_without_a_base_record_is_recorded_afresh(plan, codebase):
    new_version(codebase, {"app/auth.py": AUTH + "# v2\n"})
    base = Plan.objects.get(pk=plan.pk)
    data = {k: v for k, v in base.structured.items() if k != "snapshot"}
    derived = Plan.objects.create(
        session=base.session, version=2, markdown=MARKDOWN, structured=data
    )
    assert check(derived).state == "fresh"


def test_the_plan_admin_says_whether_the_plan_is_stale(client, django_user_model, plan, codebase):
    client.force_login(django_user_model.objects.create_superuser("rev", password="pw-long-1"))
    url = reverse("admin:conversations_plan_change", args=[plan.pk])
    assert "Current: nothing the plan rests on changed." in client.get(url).content.decode()
    new_version(codebase, {"app/auth.py": None})
    page = client.get(url).content.decode()
    assert "Stale: app/auth.py" in page and "no longer in the codebase" in page
