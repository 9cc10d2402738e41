"""Finishing a plan on its page: approve, edit (with preview) a section; every edit is a new
version, made by that human, with its paths and citations checked again."""

import pytest
from django.test import Client
from django.urls import reverse

from agents.plan import build_version
from conversations.models import Plan, PlanningSession, PlanningState
from rag.models import CodeFile

pytestmark = pytest.mark.django_db


def real_path(codebase):
    return CodeFile.objects.filter(codebase=codebase, role="source").values_list("path", flat=True)[
        0
    ]


def plan_data(path):
    return {
        "summary": "Count failed logins per user.",
        "decisions": ["Keep counters in memory."],
        "steps": [{"title": "Add the counter", "detail": "In the handler.", "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "the handler"}],
        "testing": ["A sixth failed login gets 429."],
        "risks": ["Counters reset on restart."],
        "effort": {"size": "S", "estimate": "1 day"},
    }


@pytest.fixture
def session(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    markdown, structured = build_version(
        plan_data(real_path(codebase)), codebase, title=session.title
    )
    Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)
    return session


def edit(client, session, key, text, version=1, **extra):
    url = reverse("conversations:plan_section_edit", args=[session.pk, key])
    return client.post(url, {"version": version, "text": text, **extra})


def test_editing_a_section_saves_a_new_version_made_by_that_human(client, user, session):
    client.force_login(user)
    response = edit(client, session, "summary", "Count failed logins per user **and** per IP.")
    assert response.status_code == 302
    v1, v2 = Plan.objects.filter(session=session).order_by("version")
    assert (v2.version, v2.author_kind, v2.author, v2.note) == (2, "human", user, "Edited Summary")
    assert "Count failed logins per user **and** per IP." in v2.markdown
    assert v2.structured["summary"] == "Count failed logins per user **and** per IP."
    assert "Count failed logins per user." in v1.markdown  # the old version is kept as it was
    assert v2.structured["steps"] == v1.structured["steps"]  # only that section changed


def test_every_new_version_checks_its_paths_and_citations_again(client, user, session, codebase):
    client.force_login(user)
    path = real_path(codebase)
    edit(
        client,
        session,
        "files",
        f"{path} | modify | the handler\nnope/imaginary.py | modify | invented\n"
        "app/limiter.py | create | the limiter",
    )
    v2 = Plan.objects.get(session=session, version=2)
    statuses = {f["path"]: f["status"] for f in v2.structured["files"]}
    assert statuses == {path: "exists", "nope/imaginary.py": "missing", "app/limiter.py": "new"}
    assert "| `nope/imaginary.py` | modify | **NOT IN THE CODEBASE** |" in v2.markdown

    edit(client, session, "summary", f"Throttle in `{path}:1` and `nope/imaginary.py:3`.", 2)
    v3 = Plan.objects.get(session=session, version=3)
    cited = {(c["path"], c["exists"]) for c in v3.structured["citations"]}
    assert cited == {(path, True), ("nope/imaginary.py", False)}
    page = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert "1 not in the codebase" in page and "1 broken" in page


def test_a_step_is_edited_with_its_title_detail_and_files(client, user, session, codebase):
    client.force_login(user)
    path = real_path(codebase)
    edit(client, session, "step-1", f"Add a limiter\n\nWrap the login view.\nFiles: {path}")
    step = Plan.objects.get(session=session, version=2).structured["steps"][0]
    assert step == {"title": "Add a limiter", "detail": "Wrap the login view.", "files": [path]}


def test_a_decision_a_human_rewrites_is_marked_as_theirs(client, user, session):
    client.force_login(user)
    edit(client, session, "decisions", "- Keep counters in memory.\n- Use Redis in production.")
    v2 = Plan.objects.get(session=session, version=2)
    assert "| Keep counters in memory. | — | — | — | Agent A |" in v2.markdown
    assert "| Use Redis in production. | — | — | — | human |" in v2.markdown


def test_preview_shows_the_edited_section_and_saves_nothing(client, user, session):
    client.force_login(user)
    response = edit(client, session, "risks", "- Shared IPs lock each other out.", preview="1")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Preview (not saved)" in page and "Shared IPs lock each other out." in page
    assert "- Shared IPs lock each other out." in page  # still in the editor
    assert Plan.objects.filter(session=session).count() == 1


def test_only_the_latest_version_is_edited(client, user, session):
    client.force_login(user)
    edit(client, session, "summary", "Second version.")
    response = edit(client, session, "summary", "Written over an old version.", version=1)
    assert response.status_code == 302
    assert Plan.objects.filter(session=session).count() == 2
    page = client.get(response.url).content.decode()
    assert "v1 is not the latest version" in page


def test_an_edit_that_changes_nothing_makes_no_version(client, user, session):
    client.force_login(user)
    edit(client, session, "testing", "- A sixth failed login gets 429.")
    assert Plan.objects.filter(session=session).count() == 1


def test_approved_sections_are_shown_and_carry_over_when_unchanged(client, user, session):
    client.force_login(user)
    for key in ("summary", "risks"):
        url = reverse("conversations:plan_section_approve", args=[session.pk, key])
        assert client.post(url, {"version": 1}).status_code == 302
    assert Plan.objects.get(session=session, version=1).approved_sections == ["summary", "risks"]
    page = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert "2 of 7 sections approved" in page
    assert page.count('<span class="badge approved">approved</span>') == 2

    edit(client, session, "risks", "- Shared IPs lock each other out.")
    # The summary is the same text: still approved. The risks changed: approve them again.
    assert Plan.objects.get(session=session, version=2).approved_sections == ["summary"]


def test_the_version_list_and_the_diff_say_who_made_each_version(client, user, session):
    client.force_login(user)
    edit(client, session, "summary", "Throttle per IP.")
    page = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert "Agents" in page and "Human edit by alice — Edited Summary" in page
    compare = reverse("conversations:plan_compare", args=[session.pk])
    diff = client.get(compare, {"a": 1, "b": 2}).content.decode()
    assert "v2: Human edit by alice — Edited Summary · v1: Agents" in diff


def test_an_old_version_is_read_only_on_the_page(client, user, session):
    client.force_login(user)
    edit(client, session, "summary", "Second version.")
    plan_url = reverse("conversations:plan", args=[session.pk])
    old = client.get(plan_url, {"version": 1, "edit": "summary"}).content.decode()
    new = client.get(plan_url, {"version": 2, "edit": "summary"}).content.decode()
    assert "Regenerate Summary" not in old and "<textarea" not in old
    assert "Regenerate Summary" in new and "Second version.</textarea>" in new


@pytest.mark.parametrize("action", ["edit", "approve", "regenerate"])
def test_only_the_owner_changes_a_section(client, other_user, session, action):
    url = reverse(f"conversations:plan_section_{action}", args=[session.pk, "summary"])
    data = {"version": 1, "text": "Mine now.", "instruction": "make it mine"}
    assert client.post(url, data).status_code == 302  # to the login page
    client.force_login(other_user)
    assert client.post(url, data).status_code == 404
    assert Plan.objects.filter(session=session).count() == 1
    assert Plan.objects.get(session=session).approved_sections == []


def test_a_section_change_needs_the_csrf_token(user, session):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    response = edit(browser, session, "summary", "Forged.")
    assert response.status_code == 403
    assert Plan.objects.filter(session=session).count() == 1


def test_an_edit_is_rendered_sanitized(client, user, session):
    client.force_login(user)
    edit(client, session, "summary", "Hi <script>alert(1)</script><img src=x onerror=alert(2)>")
    page = client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    assert "&lt;script&gt;alert(1)" in page  # shown as text
    assert "<script>alert(1)" not in page and "<img src=x" not in page
