"""Per-message accounting (profile, model, tokens, latency, estimated cost), the page's meter,
and the new-session form's list of profiles with their availability."""

import re
import sys

import pytest
from channels.db import database_sync_to_async
from django.test import Client as HttpClient

from agents.providers.fake import FakeProvider
from conversations import services
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

HANDOVER = {"signal": "HANDOVER", "reason": "Over to you."}


def logged_in(user) -> HttpClient:
    http = HttpClient()
    http.force_login(user)
    return http


async def test_each_message_records_profile_model_tokens_latency_and_cost(user, codebase):
    # Agent A's evidence plan first, then its reply.
    FakeProvider.script("fake-backup", NO_LOOKUPS, "A1: add a limiter.", HANDOVER)
    FakeProvider.script("fake", "B1: never written.")
    session = await database_sync_to_async(services.start_session)(
        user,
        codebase=codebase,
        task="Add rate limiting to login",
        mode="debate",
        agent_a_profile="fake-backup",  # declares $1 / $2 per million tokens
        agent_b_profile="fake",  # declares no prices
    )
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    message = await database_sync_to_async(lambda: session.messages.get(role="agent", node=""))()
    assert (message.profile, message.model) == ("fake-backup", "scripted")
    assert message.prompt_tokens > 0 and message.completion_tokens > 0
    # Reply and signal both priced: $1/M read, $2/M written.
    expected = (message.prompt_tokens * 1.0 + message.completion_tokens * 2.0) / 1_000_000
    assert message.cost_usd == pytest.approx(expected)
    ended = [e["message"] for e in client.of_type("message.end") if e["message"]["role"] == "agent"]
    assert ended[-1]["cost_usd"] == pytest.approx(expected)

    used = await database_sync_to_async(lambda: type(session).objects.get(pk=session.pk))()
    plan = await database_sync_to_async(
        lambda: session.messages.get(turn_key="investigate:plan:1")
    )()
    assert plan.prompt_tokens > 0  # the evidence plan is charged too, on its own message
    assert used.tokens_used == sum(m.prompt_tokens + m.completion_tokens for m in (plan, message))
    assert used.calls_used == 3  # the evidence plan, the reply, its signal

    html = await database_sync_to_async(
        lambda: logged_in(user).get(f"/sessions/{session.pk}/").content.decode()
    )()
    assert f'data-cost="{message.cost_usd}"' in html
    assert f"${message.cost_usd:.4f}" in html
    assert 'id="meter"' in html
    assert 'data-action="cancel"' in html and "Stop reply" in html
    await client.close()


def test_unknown_prices_leave_the_cost_empty(db):
    from agents.providers import estimate_cost

    assert estimate_cost("fake", 1000, 1000) is None
    assert estimate_cost("fake-backup", 1_000_000, 500_000) == pytest.approx(2.0)
    assert estimate_cost("gemini", 1_000_000, 0) == pytest.approx(0.30)


def test_prices_can_be_set_in_the_settings(settings):
    from agents.providers import estimate_cost

    settings.OPENAI_PRICE_IN = 0.15
    settings.OPENAI_PRICE_OUT = 0.60
    assert estimate_cost("openai", 1_000_000, 1_000_000) == pytest.approx(0.75)


def test_the_new_session_form_disables_profiles_that_cannot_run(db, user, settings):
    settings.GEMINI_API_KEY = settings.GOOGLE_API_KEY = ""
    html = logged_in(user).get("/sessions/new/").content.decode()
    options = re.findall(r'<option value="gemini"[^>]*>[^<]*</option>', html)
    assert len(options) == 3  # Agent A, Agent B, fallback
    for option in options:
        assert "disabled" in option
        assert "unavailable: Set GEMINI_API_KEY" in option
    fake = re.findall(r'<option value="fake"[^>]*>', html)
    assert fake and not any("disabled" in o for o in fake)
    assert "Server default (local)" in html


def test_the_new_session_form_renders_without_any_google_package(db, user, monkeypatch, settings):
    # find_spec("google.genai") raises when `google` itself cannot be imported.
    for name in [m for m in sys.modules if m == "google" or m.startswith("google.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "google", None)
    settings.GEMINI_API_KEY = "a-key-for-this-test"
    response = logged_in(user).get("/sessions/new/")
    assert response.status_code == 200
    options = re.findall(r'<option value="gemini"[^>]*>[^<]*</option>', response.content.decode())
    assert options and all(
        "disabled" in o and "google-genai package is not installed" in o for o in options
    )


def test_the_form_refuses_an_unavailable_profile_even_if_posted(db, user, codebase, settings):
    settings.GEMINI_API_KEY = settings.GOOGLE_API_KEY = ""
    response = logged_in(user).post(
        "/sessions/new/",
        {
            "codebase": codebase.pk,
            "mode": "debate",
            "agent_a_profile": "gemini",
            "agent_b_profile": "fake",
            "fallback_profile": "",
            "max_exchanges": 2,
            "task": "Add rate limiting",
        },
    )
    assert response.status_code == 400
    assert "not available" in response.content.decode()
