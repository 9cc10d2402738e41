"""API keys never reach a page, a log line or an error message, even when the provider echoes
the key back in its error body."""

import json
import logging

import pytest
from channels.db import database_sync_to_async
from django.test import Client as HttpClient

from agents.providers import gemini, openai_compat
from conversations import services
from tests.agents.llm_replay import Replay
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

GEMINI_KEY = "AIzaSyD-this-is-the-secret-gemini-key-0042"
OPENAI_KEY = "sk-proj-this-is-the-secret-openai-key-0042"


@pytest.fixture
def keys(settings):
    settings.GEMINI_API_KEY = GEMINI_KEY
    settings.OPENAI_API_KEY = OPENAI_KEY


def page(user, url: str) -> str:
    http = HttpClient()
    http.force_login(user)
    response = http.get(url)
    assert response.status_code == 200
    return response.content.decode()


async def test_a_failing_call_that_echoes_the_key_leaks_it_nowhere(
    keys, monkeypatch, caplog, user, codebase
):
    caplog.set_level(logging.DEBUG)
    # Gemini answers Agent A with a 400 that quotes the key, twice: its evidence plan (taken
    # for an unusable plan, the app plans instead) and its reply. The OpenAI-compatible server
    # answers Agent B's (later) call with a 401 that does the same.
    replay_gemini = (
        Replay("gemini", key=GEMINI_KEY).error(400, "bad_key.json").error(400, "bad_key.json")
    )
    monkeypatch.setattr(gemini, "http_client", replay_gemini.client)
    session = await database_sync_to_async(services.start_session)(
        user,
        codebase=codebase,
        task="Add rate limiting to login",
        mode="debate",
        agent_a_profile="gemini",
        agent_b_profile="openai",
        fallback_profile="fake",
    )
    client = Client(user, session.pk)
    await client.connect()
    state = await client.until_state("awaiting_human")
    assert "Gemini refused the request (HTTP 400): API key not valid: ***" in state["error"]

    replay_openai = Replay("openai", key=OPENAI_KEY).error(401, "bad_key.json")
    monkeypatch.setattr(openai_compat, "http_client", replay_openai.client)
    replay_gemini.stream("stream_text.sse").stream("stream_json.sse")  # reply, then signal
    await client.send({"type": "control", "action": "continue"})
    await client.until_state("running")
    state = await client.until_state("awaiting_human")  # Agent A handed over
    assert state["error"] == ""
    await client.send({"type": "user.message", "text": "Agent B, your turn."})
    await client.until_state("running")
    state = await client.until_state("awaiting_human")
    assert "rejected the API key (HTTP 401); check OPENAI_API_KEY" in state["error"]
    assert replay_openai.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"

    pages = await database_sync_to_async(
        lambda: page(user, f"/sessions/{session.pk}/") + page(user, "/sessions/new/")
    )()
    frames = json.dumps(client.events)
    rows = await database_sync_to_async(
        lambda: json.dumps(list(session.messages.values()), default=str)
    )()
    error = await database_sync_to_async(lambda: type(session).objects.get(pk=session.pk).error)()
    logs = caplog.text + "".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert "***" in rows  # the scrubbed error really was shown
    assert "the app planned instead" in rows  # on the evidence plan too
    for where, text in {
        "page": pages,
        "frames": frames,
        "rows": rows,
        "error": error,
        "logs": logs,
    }.items():
        for key in (GEMINI_KEY, OPENAI_KEY):
            assert key not in text, f"key leaked into {where}"
    await client.close()


def test_a_log_line_holding_a_key_is_scrubbed(keys, caplog):
    caplog.set_level(logging.DEBUG)
    logging.getLogger("google_genai.models").debug("calling with key=%s", GEMINI_KEY)
    try:
        raise ValueError(f"bad key {OPENAI_KEY}")
    except ValueError:
        logging.getLogger("openai").exception("request failed")
    assert GEMINI_KEY not in caplog.text and OPENAI_KEY not in caplog.text
    assert "calling with key=***" in caplog.text
    assert "details withheld" in caplog.text


def test_a_provider_repr_never_shows_its_key(keys):
    assert GEMINI_KEY not in repr(gemini.build("gemini"))
    assert OPENAI_KEY not in repr(openai_compat.build("openai"))
