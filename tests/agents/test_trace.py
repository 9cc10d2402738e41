"""Every LLM call is traced: prompt, raw output, profile, tokens, outcome; bounded in size, and
shown to the session's owner as text (never HTML) and to staff read-only."""

import pytest
from django.urls import reverse

from agents import call_policy, trace, turns
from agents.models import LLMCall
from agents.providers import get_provider
from agents.providers.base import CallOptions, ChatMessage, RetryableError
from agents.providers.fake import FakeProvider
from agents.schemas import TurnSignal
from conversations.models import PlanningSession

pytestmark = pytest.mark.django_db

PROMPT = [
    ChatMessage("system", "You are Agent A."),
    ChatMessage("user", "Add rate limiting to login."),
]
HOSTILE = "<script>alert('trace')</script>"


@pytest.fixture
def session(user, codebase):
    return PlanningSession.objects.create(
        owner=user,
        codebase=codebase,
        title="t",
        task="Add rate limiting to login.",
        mode=PlanningSession.Mode.DEBATE,
        agent_a_profile="fake",
        agent_b_profile="fake",
        fallback_profile="fake-backup",
    )


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(call_policy, "sleep", lambda seconds, should_stop: None)


def turn(session, messages=PROMPT, **kwargs):
    return turns.text_turn(
        session, turns.Agent("A", "fake"), turn_key="debate:0", node="", messages=messages, **kwargs
    )


def test_a_turns_call_is_traced_with_its_prompt_raw_output_and_tokens(session):
    FakeProvider.script("fake", "A1: count failures per user.")
    message = turn(session)

    (call,) = LLMCall.objects.filter(session=session)
    assert call.message_id == message.pk and call.purpose == "debate:0"
    assert call.prompt == [
        {"role": "system", "content": "You are Agent A."},
        {"role": "user", "content": "Add rate limiting to login."},
    ]
    assert call.output == "A1: count failures per user."
    assert (call.profile, call.model, call.outcome) == ("fake", "scripted", "ok")
    # The fake counts a prompt's words and one token per piece written.
    assert (call.prompt_tokens, call.completion_tokens) == (9, 5)


def test_an_echoed_reply_is_traced_as_redone_and_its_redo_as_ok(session):
    answered = "Add a limiter to the login view: count failed attempts per user in the cache."
    FakeProvider.script("fake", answered, "B: the limiter forgets the reset after success.")
    turn(session, answering=answered)

    first, second = LLMCall.objects.filter(session=session).order_by("pk")
    assert (first.outcome, first.note, first.output) == ("redone", "echo", answered)
    assert second.outcome == "ok"
    assert second.prompt[-2] == {"role": "assistant", "content": answered}


def test_invalid_json_and_its_repair_are_both_traced(session):
    FakeProvider.script("fake", '{"signal": "MAYBE"}', {"signal": "HANDOVER", "reason": "done"})
    turns.structured_call(session, get_provider("fake"), PROMPT, TurnSignal, CallOptions())

    first, second = LLMCall.objects.filter(session=session).order_by("pk")
    assert (first.outcome, first.schema, first.purpose) == ("repaired", "TurnSignal", "TurnSignal")
    assert first.output == '{"signal": "MAYBE"}'
    assert second.outcome == "ok" and "not valid" in second.prompt[-1]["content"]


def test_a_failed_call_that_was_retried_is_traced_as_retried(session):
    FakeProvider.script("fake", RetryableError("HTTP 503"), "A1: after the retry.")
    turn(session)

    first, second = LLMCall.objects.filter(session=session).order_by("pk")
    assert (first.outcome, first.note, first.output) == ("retried", "HTTP 503", "")
    assert (second.outcome, second.output) == ("ok", "A1: after the retry.")


def test_a_call_is_stored_cut_to_the_configured_size(session, settings):
    settings.PLANAGENTS_TRACE_MAX_CHARS = 2000
    long_prompt = [ChatMessage("system", "short system"), ChatMessage("user", "x" * 50_000)]
    FakeProvider.script("fake", "y" * 10_000)
    turn(session, messages=long_prompt)

    call = LLMCall.objects.get(session=session)
    stored = sum(len(m["content"]) for m in call.prompt) + len(call.output)
    assert call.truncated and stored <= 2000
    assert call.prompt[0]["content"] == "short system"  # short parts stay whole
    assert "characters cut from the trace" in call.prompt[1]["content"]
    assert call.output.startswith("y") and call.output.endswith("y")


def test_bounded_leaves_a_call_under_the_limit_alone():
    prompt = [{"role": "user", "content": "hello"}]
    assert trace.bounded(prompt, "world", 1000) == (prompt, "world", False)


def test_the_owner_reads_the_trace_as_text_and_others_get_404(client, session, user, other_user):
    FakeProvider.script("fake", f"A1: {HOSTILE}")
    turn(session, messages=[ChatMessage("user", f"Task: {HOSTILE}")])
    call = LLMCall.objects.get(session=session)

    client.force_login(user)
    page = client.get(reverse("conversations:detail", args=[session.pk])).content.decode()
    assert 'id="trace"' in page and "1 LLM call" in page
    assert HOSTILE not in page  # escaped, never markup
    assert "&lt;script&gt;alert(&#x27;trace&#x27;)&lt;/script&gt;" in page

    url = reverse("conversations:trace_call", args=[session.pk, call.pk])
    whole = client.get(url)
    assert whole["Content-Type"] == "text/plain; charset=utf-8"
    assert f"Task: {HOSTILE}" in whole.content.decode()
    assert f"A1: {HOSTILE}" in whole.content.decode()

    client.force_login(other_user)
    assert client.get(url).status_code == 404


def test_staff_read_a_call_in_the_admin_and_cannot_change_it(client, session, django_user_model):
    FakeProvider.script("fake", f"A1: {HOSTILE}")
    turn(session)
    call = LLMCall.objects.get(session=session)
    staff = django_user_model.objects.create_superuser("reviewer", password="pw-long-enough-1")
    client.force_login(staff)

    url = reverse("admin:agents_llmcall_change", args=[call.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert HOSTILE not in page.content.decode()
    assert "A1: &lt;script&gt;" in page.content.decode()
    client.post(url, {"output": "rewritten", "outcome": "error"})
    call.refresh_from_db()
    assert (call.output, call.outcome) == (f"A1: {HOSTILE}", "ok")


def test_a_configured_api_key_never_reaches_the_trace(session, settings):
    key = "AIzaSyTraceTestKey0123456789abcdef"
    settings.GEMINI_API_KEY = key
    FakeProvider.script("fake", f"The key is {key} here.")
    turn(session, messages=[ChatMessage("user", f"config.py: GEMINI_API_KEY = '{key}'")])

    call = LLMCall.objects.get(session=session)
    assert key not in call.prompt[0]["content"] and "***" in call.prompt[0]["content"]
    assert key not in call.output
