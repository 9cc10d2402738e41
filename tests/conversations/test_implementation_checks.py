"""Checking an implementation on an approved plan's page: a diff applied in a child process or
a newer version of the codebase, the job's report, refusals, who may see it, the model's
judgement (scripted provider), a re-check, and the report in the plan's exports."""

import hashlib
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.providers.base import ProviderUnavailable
from agents.providers.fake import FakeProvider
from conversations import implementation_checks
from conversations.export_formats import EXPORTS
from conversations.models import ImplementationCheck, Plan, PlanningSession, PlanningState, Reviewer
from rag.models import Codebase, CodebaseVersion, CodeFile

pytestmark = pytest.mark.django_db

AUTH = """\
def login(user, password):
    ok = check(user, password)
    return ok


def logout(user):
    user.session = None
"""
FIXED = AUTH.replace(
    "    ok = check(user, password)\n",
    "    if too_many(user):\n        return False\n    ok = check(user, password)\n",
)
OTHER = AUTH.replace("    user.session = None\n", "    user.session = None\n    user.save()\n")
STEP = {
    "title": "Refuse logins over the limit in `login`",
    "detail": "In `app/auth.py:1`.",
    "files": ["app/auth.py"],
    "target": {"kind": "definition", "name": "login", "path": "app/auth.py", "start": 1, "end": 3},
    "code": {"path": "app/auth.py", "start": 1, "lines": AUTH.splitlines()[:3]},
    "sketch": {
        "before": ["    ok = check(user, password)"],
        "after": ["    if too_many(user):", "        return False", "    ok = check(user, password)"],
        "start": 2,
        "checked": True,
        "hunk": ["@@ -1,3 +1,5 @@ login", " def login(user, password):",
                 "+    if too_many(user):", "+        return False",
                 "     ok = check(user, password)", "     return ok"],
    },
}  # fmt: skip
STRUCTURED = {
    "summary": "Throttle logins.",
    "steps": [STEP],
    "files": [{"path": "app/auth.py", "action": "modify", "reason": "login"}],
    "testing": ["`tests/test_auth.py`: a sixth login is refused."],
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def diff(old: str, new: str, path: str = "app/auth.py") -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


@pytest.fixture
def codebase(user):
    codebase = Codebase.objects.create(
        owner=user, name="app", status=Codebase.Status.READY, content_hash="v1"
    )
    CodeFile.objects.create(
        codebase=codebase, path="app/auth.py", sha256=_sha(AUTH), content=AUTH, line_count=7
    )
    CodeFile.objects.create(
        codebase=codebase, path="app/views.py", sha256=_sha("a = 1\n"), content="a = 1\n",
        line_count=1,
    )  # fmt: skip
    return codebase


@pytest.fixture
def plan(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Throttle", task="Throttle logins",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    return Plan.objects.create(
        session=session, version=1, markdown="# Plan\n\nThrottle `app/auth.py:1`.\n",
        structured=STRUCTURED, review_status=Plan.Review.APPROVED,
    )  # fmt: skip


@pytest.fixture
def jobs(monkeypatch):
    """The checks dispatched, run as the job seam would run them, when the test says so."""
    queued: list[int] = []
    monkeypatch.setattr(implementation_checks, "dispatch", lambda job, pk: queued.append(pk))

    def run() -> None:
        while queued:
            implementation_checks.run_check(queued.pop(0))

    return run


def post_diff(client, plan, text, **extra):
    url = reverse("conversations:implementation_new", args=[plan.session_id])
    data = {"version": plan.version, "source": "diff", "diff": text, **extra}
    return client.post(url, data)


def test_a_pasted_diff_is_applied_and_each_step_reported(client, user, plan, jobs):
    client.force_login(user)
    text = diff(AUTH, FIXED) + diff("a = 1\n", "a = 2\n", "app/views.py")
    response = post_diff(client, plan, text, label="fix.diff")
    check = ImplementationCheck.objects.get()
    assert response.status_code == 302 and response.url.endswith(f"/implementation/{check.pk}/")
    page = client.get(response.url).content.decode()
    assert 'data-state="pending"' in page and 'http-equiv="refresh"' in page
    jobs()
    check.refresh_from_db()
    assert check.status == "done", check.error
    row = check.report["steps"][0]
    assert row["status"] == "done"
    assert row["evidence"][0]["path"] == "app/auth.py" and row["evidence"][0]["line"] == 2
    assert check.report["unplanned"] == ["app/views.py"]
    assert check.report["tests"]["named"] == [
        {"path": "tests/test_auth.py", "changed": False, "kind": ""}
    ]
    page = client.get(response.url).content.decode()
    assert 'data-status="done"' in page and "+    if too_many(user):" in page
    assert "1. Refuse logins over the limit in <code>login</code>" in page  # the model's title
    plan_page = client.get(reverse("conversations:plan", args=[plan.session_id])).content.decode()
    assert "Check an implementation" in plan_page and "1 done" in plan_page
    # Nothing of the codebase changed: a diff is checked, not applied to the index.
    assert CodeFile.objects.get(path="app/auth.py").content == AUTH


def test_a_diff_that_does_not_apply_fails_with_gits_words_and_keeps_the_plan(
    client, user, plan, jobs
):
    client.force_login(user)
    post_diff(client, plan, diff(AUTH.replace("ok = check", "ok = verify"), FIXED))
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.status == "failed"
    assert "does not apply" in check.error and "app/auth.py" in check.error
    page = client.get(
        reverse("conversations:implementation_check", args=[plan.session_id, check.pk])
    )
    assert "does not apply" in page.content.decode() and 'id="impl-error"' in page.content.decode()
    assert Plan.objects.get(pk=plan.pk).structured["steps"][0]["title"] == STEP["title"]


@pytest.mark.parametrize(
    "text, said",
    [
        ("--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", "climbs out"),
        ("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", "absolute path"),
        (
            "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n",
            "a path no file can have",
        ),
        # A binary hunk, as git writes one, beside a text change that would apply.
        (
            "diff --git a/app/auth.py b/app/auth.py\n--- a/app/auth.py\n+++ b/app/auth.py\n"
            "@@ -1 +1 @@\n-def login(user, password):\n+def login(user, password, ip):\n"
            "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n"
            "GIT binary patch\nliteral 4\nLcmZQzWMBXQ00031\n\nliteral 0\nHcmV?d00001\n",
            "binary file",
        ),
        (
            "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n"
            "Binary files a/logo.png and b/logo.png differ\n",
            "binary file",
        ),
        ("\x00\x01binary junk", "NUL bytes"),
        ("hello, no diff here", "No file changes found"),
        ("+" * 1_000_000, "at most"),
        # git apply makes the link, and the check would read the server's file through it.
        (
            "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n"
            "@@ -0,0 +1 @@\n+/etc/hostname\n\\ No newline at end of file\n",
            "symbolic link",
        ),
        # git copies from any path it is given, and the check would read the copy back.
        (
            "--- a/app/auth.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
            "diff --git a/x b/app/auth.py\nsimilarity index 100%\n"
            "copy from ../../../../etc/hostname\ncopy to app/auth.py\n",
            "copies or renames",
        ),
        (
            "diff --git a/l b/l\nnew file mode 0120000\n--- /dev/null\n+++ b/l\n"
            "@@ -0,0 +1 @@\n+/etc/hostname\n",
            "symbolic link",
        ),
    ],
)
def test_hostile_diffs_are_refused_clearly_and_nothing_is_stored(
    client, user, plan, jobs, text, said
):
    client.force_login(user)
    response = post_diff(client, plan, text)
    assert response.status_code == 400
    assert said in response.content.decode()
    assert not ImplementationCheck.objects.exists()


def test_only_an_approved_plan_is_checked(client, user, plan):
    Plan.objects.filter(pk=plan.pk).update(review_status=Plan.Review.DRAFT)
    client.force_login(user)
    response = post_diff(client, plan, diff(AUTH, FIXED))
    assert response.status_code == 302 and not ImplementationCheck.objects.exists()
    plan_page = client.get(reverse("conversations:plan", args=[plan.session_id])).content.decode()
    assert "Check an implementation" not in plan_page


def test_another_user_cannot_check_or_read_and_a_reviewer_can_read(
    client, user, other_user, plan, jobs
):
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED))
    jobs()
    check = ImplementationCheck.objects.get()
    detail = reverse("conversations:implementation_check", args=[plan.session_id, check.pk])
    client.force_login(other_user)
    assert post_diff(client, plan, diff(AUTH, FIXED)).status_code == 404
    assert client.get(detail).status_code == 404
    again = reverse("conversations:implementation_again", args=[plan.session_id, check.pk])
    assert client.post(again).status_code == 404
    Reviewer.objects.create(user=other_user, role=Reviewer.Role.VIEWER, session=plan.session,
                            invited_by=user)  # fmt: skip
    page = client.get(detail)
    assert page.status_code == 200 and 'data-status="done"' in page.content.decode()
    assert post_diff(client, plan, diff(AUTH, FIXED)).status_code == 404


def test_a_check_is_reached_only_through_its_own_session(client, user, other_user, plan, jobs):
    # Mallory owns a session of her own: its id beside Alice's check id opens nothing of Alice's.
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED))
    jobs()
    check = ImplementationCheck.objects.get()
    ImplementationCheck.objects.filter(pk=check.pk).update(status="failed", error="boom")
    codebase = Codebase.objects.create(owner=other_user, name="hers", status=Codebase.Status.READY)
    hers = PlanningSession.objects.create(
        owner=other_user, codebase=codebase, title="Hers", task="Hers",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    client.force_login(other_user)
    detail = reverse("conversations:implementation_check", args=[hers.pk, check.pk])
    assert client.get(detail).status_code == 404
    again = reverse("conversations:implementation_again", args=[hers.pk, check.pk])
    assert client.post(again).status_code == 404
    check.refresh_from_db()
    assert check.status == "failed"  # not dispatched again by her


def new_version(codebase, text: str, number: int) -> None:
    """What a re-index does: the same rows updated in place, and a version recorded."""
    CodeFile.objects.filter(codebase=codebase, path="app/auth.py").update(
        content=text, sha256=_sha(text)
    )
    CodebaseVersion.objects.create(
        codebase=codebase, number=number, kind=CodebaseVersion.Kind.UPLOAD,
        indexed_at=timezone.now(), changed=["app/auth.py"], changed_count=1,
    )  # fmt: skip


def test_a_newer_version_is_checked_and_a_recheck_shows_what_moved(
    client, user, codebase, plan, jobs
):
    client.force_login(user)
    url = reverse("conversations:implementation_new", args=[plan.session_id])
    assert "no newer version" in client.get(url).content.decode()
    new_version(codebase, OTHER, 2)
    assert client.post(url, {"version": 1, "source": "version"}).status_code == 302
    jobs()
    first = ImplementationCheck.objects.get()
    assert first.status == "done" and first.label == "version 2"
    assert first.report["steps"][0]["status"] == "not_done"
    new_version(codebase, FIXED, 3)
    client.post(url, {"version": 1, "source": "version"})
    jobs()
    second = ImplementationCheck.objects.get(number=2)
    assert second.report["steps"][0]["status"] == "done"
    assert second.report["moved"] == [
        {"number": 1, "title": STEP["title"], "from": "not_done", "to": "done"}
    ]
    page = client.get(
        reverse("conversations:implementation_check", args=[plan.session_id, second.pk])
    )
    assert "Since check 1" in page.content.decode()


SAME = AUTH.replace(
    "    ok = check(user, password)\n", "    ok = not too_many(user) and check(user, password)\n"
)


def equivalence_calls():
    return [
        c for c in FakeProvider.calls("fake") if c.schema and c.schema.__name__ == "Equivalence"
    ]


def report_page(client, plan, check):
    url = reverse("conversations:implementation_check", args=[plan.session_id, check.pk])
    return client.get(url).content.decode()


def test_a_yes_then_a_no_on_the_change_undone_is_done_by_the_model_shown_and_sanitized(
    client, user, plan, jobs
):
    FakeProvider.script(
        "fake",
        {"equivalent": True, "reason": "Same guard <script>alert(1)</script> inline."},
        {"equivalent": False, "reason": "Undone, the guard is gone."},
    )
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, SAME), ask_model="1")
    jobs()
    check = ImplementationCheck.objects.get()
    row = check.report["steps"][0]
    assert row["status"] == "done" and row["by"] == "model"
    assert row["judgement"]["undone"]["equivalent"] is False
    asked = equivalence_calls()
    assert len(asked) == 2 and "check(user, password)" in asked[0].prompt
    html = report_page(client, plan, check)
    assert "The model&#x27;s judgement" in html or "The model's judgement" in html
    assert "judged by the model" in html and "Undone, the guard is gone." in html
    assert "<script>alert(1)</script>" not in html


def test_the_control_asks_the_same_question_on_the_hunk_reversed(client, user, plan, jobs):
    FakeProvider.script(
        "fake", {"equivalent": True, "reason": "Same."}, {"equivalent": False, "reason": "No."}
    )
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, SAME), ask_model="1")
    jobs()
    first, control = (c.prompt for c in equivalence_calls())
    made = "+    ok = not too_many(user) and check(user, password)"
    undone = "-    ok = not too_many(user) and check(user, password)"
    assert made in first and undone not in first
    assert undone in control and made not in control
    assert "+    ok = check(user, password)" in control and "-    ok = check(" in first
    row = ImplementationCheck.objects.get().report["steps"][0]
    assert undone in row["judgement"]["undone"]["hunk"]
    # The same prompt otherwise: only the hunk it judges differs.
    assert (
        first.split("The change actually made")[0] == control.split("The change actually made")[0]
    )


def test_a_model_that_also_calls_the_change_undone_equivalent_leaves_the_step_deviated(
    client, user, plan, jobs
):
    FakeProvider.script(
        "fake",
        {"equivalent": True, "reason": "Both add the guard."},
        {"equivalent": True, "reason": "Still the guard, surely."},
    )
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, SAME), ask_model="1")
    jobs()
    check = ImplementationCheck.objects.get()
    row = check.report["steps"][0]
    assert row["status"] == "deviated" and row["by"] == "app"
    assert "The model could not tell: it also called this change undone equivalent" in row["reason"]
    assert row["judgement"]["reason"] == "Both add the guard."
    assert row["judgement"]["undone"]["reason"] == "Still the guard, surely."
    html = report_page(client, plan, check)
    assert "could not tell" in html
    assert "Both add the guard." in html and "Still the guard, surely." in html
    assert "judged by the model" not in html
    data = json.loads(EXPORTS["json"].render(Plan.objects.get(pk=plan.pk)))
    step = data["implementation_checks"][0]["steps"][0]
    assert step["judgement"]["undone"] == {
        "equivalent": True, "reason": "Still the guard, surely.", "error": ""
    }  # fmt: skip
    import jsonschema

    from conversations.exports import schema

    jsonschema.validate(data, schema())
    url = reverse("conversations:plan_export", args=[plan.session_id, "markdown"])
    text = client.get(url).content.decode()
    assert "could not tell" in text
    assert "The model, on the change made: equivalent. Both add the guard." in text
    assert "The model, on this change undone: equivalent. Still the guard, surely." in text


def test_a_no_leaves_the_step_deviated_and_asks_no_control(client, user, plan, jobs):
    FakeProvider.script("fake", {"equivalent": False, "reason": "Another guard."})
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, SAME), ask_model="1")
    jobs()
    row = ImplementationCheck.objects.get().report["steps"][0]
    assert row["status"] == "deviated" and row["judgement"]["equivalent"] is False
    assert "undone" not in row["judgement"]
    assert len(equivalence_calls()) == 1


def test_a_provider_outage_leaves_the_step_deviated_and_says_so(client, user, plan, jobs):
    FakeProvider.script("fake", ProviderUnavailable("the model server is down"))
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, SAME), ask_model="1")
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.status == "done"
    row = check.report["steps"][0]
    assert row["status"] == "deviated"
    assert "could not be asked" in row["judgement"]["error"]


def test_an_outage_on_the_control_leaves_the_step_deviated_and_says_why(client, user, plan, jobs):
    FakeProvider.script(
        "fake",
        {"equivalent": True, "reason": "Same."},
        ProviderUnavailable("the model server is down"),
    )
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, SAME), ask_model="1")
    jobs()
    check = ImplementationCheck.objects.get()
    row = check.report["steps"][0]
    assert row["status"] == "deviated" and row["by"] == "app"
    assert "could not be asked about this change undone" in row["reason"]
    assert "the model server is down" in row["judgement"]["undone"]["error"]
    assert "the model server is down" in report_page(client, plan, check)


def test_a_crashed_check_says_so_and_runs_again(client, user, plan, jobs, monkeypatch):
    client.force_login(user)
    real = implementation_checks.build_report
    monkeypatch.setattr(implementation_checks, "build_report", lambda check: 1 / 0)
    post_diff(client, plan, diff(AUTH, FIXED))
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.status == "failed" and "ZeroDivisionError" in check.error
    monkeypatch.setattr(implementation_checks, "build_report", real)
    again = reverse("conversations:implementation_again", args=[plan.session_id, check.pk])
    assert client.post(again).status_code == 302
    jobs()
    check.refresh_from_db()
    assert check.status == "done" and check.report["steps"][0]["status"] == "done"


def test_the_report_is_exported_with_the_plan(client, user, plan, jobs):
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED), label="fix.diff")
    jobs()
    data = json.loads(EXPORTS["json"].render(Plan.objects.get(pk=plan.pk)))
    checks = data["implementation_checks"]
    assert checks[0]["number"] == 1 and checks[0]["steps"][0]["status"] == "done"
    import jsonschema

    from conversations.exports import schema

    jsonschema.validate(data, schema())
    url = reverse("conversations:plan_export", args=[plan.session_id, "markdown"])
    markdown = client.get(url)
    text = markdown.content.decode()
    assert "## Implementation checks" in text and "fix.diff" in text
    assert "1. Refuse logins over the limit in `login` — done" in text


def test_the_exports_carry_the_hunk_a_status_rests_on_beside_the_sketch(client, user, plan, jobs):
    client.force_login(user)
    unlike = AUTH.replace(
        "    ok = check(user, password)", "    ok = check(user, password.strip())"
    )
    post_diff(client, plan, diff(AUTH, unlike), label="other.diff", ask_model="")
    jobs()
    data = json.loads(EXPORTS["json"].render(Plan.objects.get(pk=plan.pk)))
    step = data["implementation_checks"][0]["steps"][0]
    assert step["status"] == "deviated"
    assert "+    ok = check(user, password.strip())" in step["evidence"][0]["hunk"]
    assert step["sketch"] == STEP["sketch"]["hunk"]
    import jsonschema

    from conversations.exports import schema

    jsonschema.validate(data, schema())
    url = reverse("conversations:plan_export", args=[plan.session_id, "markdown"])
    text = client.get(url).content.decode()
    sketch, made = text.index("The plan's sketch:"), text.index("The change made:")
    assert sketch < text.index("+    if too_many(user):") < made
    assert made < text.index("+    ok = check(user, password.strip())")


def test_a_share_link_shows_the_report_with_code_only_when_shared(client, user, plan, jobs):
    from conversations import sharing

    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED))
    jobs()
    client.logout()
    plain = sharing.create_link(user, plan.session_id, "never", sharing.ShareChoices())
    html = client.get(
        reverse("conversations:plan_shared", args=[plan_token(plain)])
    ).content.decode()
    assert 'data-status="done"' in html and "app/auth.py:2" in html
    assert "if too_many(user)" not in html
    full = sharing.create_link(
        user, plan.session_id, "never", sharing.ShareChoices(shows_evidence=True)
    )
    html = client.get(
        reverse("conversations:plan_shared", args=[plan_token(full)])
    ).content.decode()
    assert "+    if too_many(user):" in html


def test_a_share_link_shows_a_checks_rules_and_the_models_words_only_when_shared(
    client, user, plan, jobs
):
    from conversations import sharing

    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED))
    jobs()
    check = ImplementationCheck.objects.get()
    rule = "Never change app/auth.py without the security team."
    report = {
        **check.report,
        "rules": {
            "broken": [{"label": "R1", "text": rule, "paths": ["app/auth.py"]}],
            "checked": 1,
            "unchecked": [],
        },
    }
    report["steps"][0]["judgement"] = {"equivalent": True, "reason": "Model words: `ok = 1`",
                                       "error": "", "hunk": [],
                                       "undone": {"equivalent": True, "reason": "Control words",
                                                  "error": "", "hunk": ["+    control_line"]}}  # fmt: skip
    ImplementationCheck.objects.filter(pk=check.pk).update(report=report)
    detail = reverse("conversations:implementation_check", args=[plan.session_id, check.pk])
    owner = client.get(detail).content.decode()
    assert rule in owner and "Model words" in owner
    client.logout()
    hidden = sharing.create_link(user, plan.session_id, "never", sharing.ShareChoices())
    html = client.get(reverse("conversations:plan_shared", args=[plan_token(hidden)])).content
    assert rule not in html.decode() and "did not share the codebase" in html.decode()
    assert "Model words" not in html.decode() and "Control words" not in html.decode()
    assert "control_line" not in html.decode()
    shown = sharing.create_link(
        user, plan.session_id, "never", sharing.ShareChoices(shows_rules=True, shows_evidence=True)
    )
    html = client.get(reverse("conversations:plan_shared", args=[plan_token(shown)])).content
    assert rule in html.decode() and "Model words" in html.decode()
    assert "Control words" in html.decode() and "control_line" in html.decode()


def test_a_check_never_started_shows_as_stalled_and_runs_again(client, user, plan, jobs):
    from datetime import timedelta

    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED))
    check = ImplementationCheck.objects.get()
    ImplementationCheck.objects.filter(pk=check.pk).update(
        status="pending", updated_at=timezone.now() - timedelta(minutes=11)
    )
    detail = reverse("conversations:implementation_check", args=[plan.session_id, check.pk])
    assert 'data-state="stalled"' in client.get(detail).content.decode()
    again = reverse("conversations:implementation_again", args=[plan.session_id, check.pk])
    assert client.post(again).status_code == 302
    jobs()
    check.refresh_from_db()
    assert check.status == "done"


def plan_token(created) -> str:
    return created.token


def test_the_api_lists_a_plans_checks_to_its_owner_only(user, other_user, plan, client, jobs):
    from api.services import create_token
    from tests.api.world import TokenClient

    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED))
    jobs()
    url = f"/api/v1/plans/{plan.session_id}/implementation-checks"
    found = TokenClient(create_token(user, "ci", "read").secret).get(url)
    assert found.status_code == 200, found.content
    assert found.json()[0]["steps"][0]["status"] == "done"
    assert TokenClient(create_token(other_user, "x", "read").secret).get(url).status_code == 404


def test_a_diff_pasted_in_a_browser_with_crlf_line_breaks_still_applies(client, user, plan, jobs):
    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED).replace("\n", "\r\n"))
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.status == "done", check.error


def test_an_uploaded_diff_file_is_checked_under_its_name(client, user, plan, jobs):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(user)
    url = reverse("conversations:implementation_new", args=[plan.session_id])
    upload = SimpleUploadedFile("guard.patch", diff(AUTH, FIXED).encode())
    response = client.post(url, {"version": 1, "source": "diff", "diff_file": upload})
    assert response.status_code == 302
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.label == "guard.patch" and check.report["steps"][0]["status"] == "done"


def test_an_uploaded_diff_saved_with_crlf_applies_to_lf_files(client, user, plan, jobs):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(user)
    url = reverse("conversations:implementation_new", args=[plan.session_id])
    saved = diff(AUTH, FIXED).replace("\n", "\r\n").encode()
    upload = SimpleUploadedFile("guard.patch", saved)
    client.post(url, {"version": 1, "source": "diff", "diff_file": upload})
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.status == "done", check.error
    assert check.report["steps"][0]["status"] == "done"


def test_a_check_whose_job_died_shows_as_stalled_and_runs_again(client, user, plan, jobs):
    from datetime import timedelta

    client.force_login(user)
    post_diff(client, plan, diff(AUTH, FIXED))
    check = ImplementationCheck.objects.get()
    ImplementationCheck.objects.filter(pk=check.pk).update(
        status="running", updated_at=timezone.now() - timedelta(minutes=11)
    )
    detail = reverse("conversations:implementation_check", args=[plan.session_id, check.pk])
    html = client.get(detail).content.decode()
    assert 'data-state="stalled"' in html and "has not written anything" in html
    again = reverse("conversations:implementation_again", args=[plan.session_id, check.pk])
    assert client.post(again).status_code == 302
    jobs()
    check.refresh_from_db()
    assert check.status == "done"


def test_a_diff_that_only_deletes_a_file_applies():
    from conversations.implementation_diff import apply

    deleted = "--- a/app/views.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a = 1\n"
    assert apply(deleted, {"app/views.py": "a = 1\n"}) == {"app/views.py": None}


def test_a_diff_creating_a_file_the_codebase_has_fails_and_calls_nothing_added(
    client, user, plan, jobs
):
    client.force_login(user)
    post_diff(client, plan, "--- /dev/null\n+++ b/app/views.py\n@@ -0,0 +1 @@\n+b = 2\n")
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.status == "failed" and check.report == {}
    assert "creates `app/views.py`, which the codebase already has" in check.error


def test_a_diff_that_fails_on_a_newer_version_says_so_not_the_plans_version(
    client, user, codebase, plan, jobs
):
    # requests: after 2.21.0 was uploaded, the 2.20.0 -> 2.21.0 diff "did not apply to the
    # plan's version of the code": it had been tried on the newer code.
    client.force_login(user)
    new_version(codebase, FIXED, 2)
    post_diff(client, plan, diff(AUTH, FIXED))
    jobs()
    check = ImplementationCheck.objects.get()
    assert check.status == "failed"
    assert check.error.startswith(
        "The diff does not apply to the codebase as it is now: `app/auth.py` changed since the "
        "plan was written"
    )
    assert "plan's version of the code" not in check.error


def test_one_check_makes_at_most_max_calls_and_never_a_yes_without_its_control():
    asked = []

    def ask(messages):
        asked.append(messages)
        return implementation_checks.Equivalence(equivalent=True, reason="Same.")

    judge = implementation_checks.judge_by(ask, "Throttle logins", (RuntimeError,))
    limit = implementation_checks.MAX_CALLS
    verdicts = [judge(STEP, ["+a"], ["+b"]) for _ in range(limit)]
    judged = [v for v in verdicts if v.equivalent is not None]
    assert len(asked) == 2 * len(judged) <= limit and len(judged) == limit // 2
    assert all(v.undone is not None and v.undone.equivalent for v in judged)
    assert verdicts[-1].equivalent is None and "not asked" in verdicts[-1].error


def test_a_check_of_noes_asks_a_step_while_its_two_calls_fit():
    asked = []

    def ask(messages):
        asked.append(messages)
        return implementation_checks.Equivalence(equivalent=False, reason="Other.")

    judge = implementation_checks.judge_by(ask, "Throttle logins", (RuntimeError,))
    limit = implementation_checks.MAX_CALLS
    verdicts = [judge(STEP, ["+a"], ["+b"]) for _ in range(limit)]
    assert len(asked) == limit - 1
    assert all(v.equivalent is False and v.undone is None for v in verdicts[:-1])
    assert "not asked" in verdicts[-1].error


def test_a_judgements_prompt_carries_at_most_max_task_chars_of_the_task():
    limit = implementation_checks.MAX_TASK_CHARS
    task = "word " * limit
    prompt = implementation_checks.judge_prompt(task, STEP, ["+a"], ["+b"])
    line = next(x for x in prompt[-1].content.splitlines() if x.startswith("Task: "))
    assert len(line) <= len("Task: ") + limit + 2 and line.endswith(" …")
    assert (
        "Task: short one"
        in implementation_checks.judge_prompt("short one", STEP, [], [])[-1].content
    )
