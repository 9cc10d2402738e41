"""The plan page's checks speak for every section: a path the Testing or Risks section names
that the codebase lacks is counted and named, and so is a name written as code that nothing in
the codebase or the task has; the quality line sits under the plan's title."""

import pytest
from django.urls import reverse

from agents.plan import build_version
from conversations.models import Plan, PlanningSession, PlanningState

pytestmark = pytest.mark.django_db


def planned(user, codebase, **fields):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting to login",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    data = {
        "summary": "Count failed logins.",
        "steps": [{"title": "Count", "detail": "In `todo/auth.py`.", "files": ["todo/auth.py"]}],
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "logins"}],
        "testing": ["Run `tests/test_api.py`."],
        "risks": [],
        **fields,
    }
    markdown, structured = build_version(data, codebase, title=session.title, task=session.task)
    Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)
    return session


def page(client, user, session):
    client.force_login(user)
    return client.get(reverse("conversations:plan", args=[session.pk])).content.decode()


def test_a_plan_whose_every_section_checks_out_says_so(client, user, codebase):
    html = page(client, user, planned(user, codebase))
    assert "none missing in any section" in html
    assert "no invented names" in html
    assert "Checked by the app." in html and "tests: <code>tests/test_api.py</code>" in html


def test_a_test_file_in_a_folder_the_codebase_lacks_is_named_as_not_in_the_codebase(
    client, user, codebase
):
    session = planned(user, codebase, testing=["Run `tests/unit/test_limits.py`."])
    html = page(client, user, session)
    assert (
        "1 not in the codebase</b> (outside Files: <code>tests/unit/test_limits.py</code>)" in html
    )
    assert "none missing" not in html


def test_a_name_nothing_in_the_codebase_or_the_task_has_is_named(client, user, codebase):
    session = planned(user, codebase, risks=["`todo.auth._throttle_login()` may race."])
    html = page(client, user, session)
    assert "1 name the codebase does not have</b> (<code>todo.auth._throttle_login</code>)" in html
