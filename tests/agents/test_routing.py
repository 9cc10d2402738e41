"""Phase 0 (patterns) and phase 1 (one classification) of agents.routing, without a database."""

import pytest

from agents.routing import GREETING, PLAN, QUESTION, UNSURE, RouteChoice, from_choice, match

ROUTES = [
    # greetings, thanks, "what can you do": English and Vietnamese, with and without diacritics
    ("hi", GREETING, "en"),
    ("Hello there!", GREETING, "en"),
    ("thanks a lot", GREETING, "en"),
    ("what can you do?", GREETING, "en"),
    ("xin chào", GREETING, "vi"),
    ("chao ban", GREETING, "vi"),
    ("cảm ơn bạn nhé", GREETING, "vi"),
    ("cam on ban", GREETING, "vi"),
    ("bạn làm được gì?", GREETING, "vi"),
    ("ban lam duoc gi", GREETING, "vi"),
    # questions about the code
    ("where is the session cookie set?", QUESTION, "en"),
    ("what does `resolve_redirects` do?", QUESTION, "en"),
    ("How does TokenStore work?", QUESTION, "en"),
    ("Which file handles login?", QUESTION, "en"),
    ("check_password ở đâu?", QUESTION, "vi"),
    ("check_password o dau", QUESTION, "vi"),
    ("hàm check_password làm gì?", QUESTION, "vi"),
    ("ham check_password lam gi", QUESTION, "vi"),
    ("TokenStore hoạt động như thế nào?", QUESTION, "vi"),
    # change requests and bug reports
    ("Fix the crash when the password is empty", PLAN, "en"),
    ("Add rate limiting to login", PLAN, "en"),
    ("Please refactor TokenStore", PLAN, "en"),
    ("Can you add tests for storage?", PLAN, "en"),
    ("Where is the session cookie set? Make it HttpOnly.", PLAN, "en"),
    ("login crashes with an empty password", PLAN, "en"),
    ("sửa lỗi đăng nhập", PLAN, "vi"),
    ("sua loi dang nhap", PLAN, "vi"),
    ("thêm giới hạn tốc độ cho API đăng nhập", PLAN, "vi"),
    ("them gioi han toc do cho API dang nhap", PLAN, "vi"),
    ("có thể sửa lỗi đăng nhập không?", PLAN, "vi"),
    ("lỗi khi đăng nhập với mật khẩu rỗng", PLAN, "vi"),
    # ambiguous: phase 1 decides
    ("how should we add caching?", UNSURE, "en"),
    ("why does login fail with an empty password?", UNSURE, "en"),
    ("rate limiting for the login endpoint", UNSURE, "en"),
    ("what can you do about the login bug?", UNSURE, "en"),
]


@pytest.mark.parametrize(("text", "route", "language"), ROUTES)
def test_it_routes_by_patterns(text, route, language):
    decided = match(text)
    assert (decided.route, decided.language) == (route, language)
    assert decided.phase == 0
    assert (decided.confidence > 0) == (route != UNSURE)


def test_it_does_not_take_a_request_that_starts_with_hello_for_a_greeting():
    assert match("hi, please fix the login crash").route == PLAN
    assert match("hello " + "there " * 20).route != GREETING  # too long to be only hello


def test_it_picks_the_canned_reply_by_what_was_said():
    assert match("thanks!").greeting == "thanks"
    assert match("hi, what can you do?").greeting == "capabilities"
    assert match("tạm biệt").greeting == "bye"


def test_a_long_description_goes_to_the_planner():
    issue = "The export page shows an empty table. " + "Details of what I saw. " * 40
    assert match(issue).route == PLAN


def test_the_classifier_route_stands_at_or_above_the_threshold():
    decided = from_choice(RouteChoice(route="question", confidence=0.7), 0.7)
    assert (decided.route, decided.phase) == (QUESTION, 1)
    decided = from_choice(RouteChoice(route="change", confidence=0.95), 0.7)
    assert (decided.route, decided.phase) == (PLAN, 1)


def test_under_the_threshold_the_full_planner_runs():
    decided = from_choice(RouteChoice(route="question", confidence=0.69), 0.7)
    assert (decided.route, decided.phase) == (PLAN, 2)
    assert "0.69" in decided.reason


def test_the_stored_route_says_what_was_decided_and_how():
    stored = match("where is the session cookie set?").as_dict()
    assert stored["route"] == QUESTION
    assert stored["route_phase"] == 0
    assert stored["route_label"].startswith("Code question")
    assert stored["route_reason"]
