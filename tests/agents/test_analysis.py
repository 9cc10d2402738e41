"""Task analysis (agents.analysis): type, size, entities and language without a model, its
prompt line, and how the session page and the admin show it."""

import re

import pytest

from agents.analysis import analyse, first_look, guidance
from agents.providers.fake import FakeProvider
from conversations import services
from conversations.models import PlanningSession

pytestmark = pytest.mark.django_db

TYPES = [
    ("Fix the crash when the password is empty", "bug_fix", "en"),
    ("Add tag filtering to the todo list", "feature", "en"),
    ("Refactor TokenStore and rename issue to issue_token", "refactor", "en"),
    ("Write unit tests for TodoStorage.mark_done", "test", "en"),
    ("Update the README and the docstrings of todo/api.py", "docs", "en"),
    ("Listing todos is slow for users with many todos; optimize it", "performance", "en"),
    ("Fix the XSS vulnerability in the export", "security", "en"),
    ("sửa lỗi đăng nhập khi mật khẩu rỗng", "bug_fix", "vi"),
    ("sua loi dang nhap khi mat khau rong", "bug_fix", "vi"),
    ("thêm tính năng lọc theo nhãn", "feature", "vi"),
    ("tai cau truc lop TokenStore", "refactor", "vi"),
    ("tối ưu hiệu năng của trang danh sách", "performance", "vi"),
]


@pytest.mark.parametrize(("task", "kind", "language"), TYPES)
def test_it_tells_the_type_and_language(codebase, task, kind, language):
    analysis = analyse(codebase, task)
    assert (analysis["type"], analysis["language"]) == (kind, language)
    assert 0 < analysis["confidence"] <= 1


def test_it_is_unsure_of_a_task_with_no_telling_words(codebase):
    analysis = analyse(codebase, "the todo list")
    assert analysis["confidence"] < 0.5


def test_it_resolves_named_files_and_symbols_against_the_codebase(codebase):
    entities = analyse(codebase, "Fix `check_password` in API.py and TokenStore.revoke")["entities"]
    assert entities["files"] == ["todo/api.py"]  # the codebase's spelling
    symbols = {s["name"]: s["location"] for s in entities["symbols"]}
    assert symbols["check_password"].startswith("todo/auth.py:")
    assert symbols["TokenStore.revoke"].startswith("todo/auth.py:")
    assert {s["name"]: s["kind"] for s in entities["symbols"]}["check_password"] == "function"
    assert entities["unresolved"] == []


def test_the_reporters_own_snippet_names_nothing_of_the_codebase(codebase):
    """What the task's example defines (`def __init__`) is the reporter's code. Read as a
    name of the codebase, it became the first of its `__init__`s, and every agent's prompt
    said the task named that file."""
    task = (
        "Type hints are ignored by the export.\n\n```python\nclass C(object):\n"
        "    def __init__(self, a: str = None):\n        self.a = a\n```\n"
    )
    analysis = analyse(codebase, task)
    assert analysis["entities"]["symbols"] == []
    assert "__init__" not in guidance(analysis)


def test_it_lists_names_the_codebase_does_not_have(codebase):
    entities = analyse(codebase, "Fix `reset_password` in todo/missing.py")["entities"]
    assert set(entities["unresolved"]) == {"reset_password", "todo/missing.py"}
    assert entities["files"] == [] and entities["symbols"] == []


def test_it_finds_implied_modules_and_endpoints(codebase):
    entities = analyse(codebase, "Add rate limiting to POST /login in the auth module")["entities"]
    assert entities["modules"] == ["todo/auth.py"]
    assert entities["endpoints"] == ["POST /login"]


def test_complexity_grows_with_the_files_the_task_reaches(codebase):
    small = analyse(codebase, "Fix a typo in `check_password`")
    assert small["complexity"] == "S"
    wide = analyse(
        codebase,
        "Rewrite storage across the whole app: todo/api.py, todo/auth.py, todo/storage.py, "
        "todo/export.py and static/app.js must all change",
    )
    assert wide["complexity"] in ("L", "XL")
    assert "5 files named or implied" in wide["complexity_reason"]
    assert "broad change" in wide["complexity_reason"]


def test_a_question_is_typed_as_one_with_the_route(codebase):
    analysis = first_look(codebase, "where is `check_password` defined?")
    assert (analysis["route"], analysis["route_phase"], analysis["type"]) == (
        "question",
        0,
        "question",
    )


def test_guidance_picks_a_line_per_type_and_names_what_the_task_names(codebase):
    analysis = analyse(codebase, "Fix the crash in `check_password`")
    line = guidance(analysis)
    assert line.startswith("This is a bug fix")
    assert "`check_password` (todo/auth.py:" in line
    assert guidance({**analysis, "type": "security"}).startswith("This is about security")
    assert guidance({}) == ""


HOSTILE = "Fix `<script>alert(1)</script>` in the login page"


def card(html):
    found = re.search(r'<section class="card task-analysis".*?</section>', html, re.S)
    assert found, "no analysis card on the page"
    return found.group(0)


def test_the_session_page_shows_the_card_escaped(client, user, codebase):
    session = services.start_session(
        user, codebase=codebase, task=HOSTILE, mode="planning",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    client.force_login(user)
    shown = card(client.get(f"/sessions/{session.pk}/").content.decode())
    assert "<script>" not in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown  # the unresolved name, escaped
    assert "Bug fix" in shown
    assert 'data-route="plan"' in shown and 'data-phase="0"' in shown


def test_the_page_of_a_session_started_before_analysis_has_no_card(client, user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="t",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    client.force_login(user)
    assert 'id="task-analysis"' not in client.get(f"/sessions/{session.pk}/").content.decode()


def test_the_admin_shows_the_analysis_escaped(admin_client, user, codebase):
    session = services.start_session(
        user, codebase=codebase, task=HOSTILE, mode="planning",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    html = admin_client.get(f"/admin/conversations/planningsession/{session.pk}/change/")
    page = html.content.decode()
    shown = re.search(r'<pre class="task-analysis">(.*?)</pre>', page, re.S).group(1)
    assert '"type": "bug_fix"' in shown.replace("&quot;", '"')
    assert "<script>" not in shown and "&lt;script&gt;" in shown


def test_starting_a_session_analyses_without_a_model(user, codebase):
    services.start_session(
        user, codebase=codebase, task="Fix the crash in `check_password`", mode="planning",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    assert FakeProvider.calls() == []
