"""A debate with Agent A on Gemini and Agent B on GLM, both replayed from recorded HTTP
responses through the real SDKs: streaming, signals and accounting end to end."""

import pytest
from channels.db import database_sync_to_async

from agents.providers import gemini, glm
from conversations import services
from tests.agents.llm_replay import Replay
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_agent_a_on_gemini_and_agent_b_on_glm_debate_and_each_reply_is_accounted(
    monkeypatch, user, codebase
):
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-key-for-replay")
    monkeypatch.setenv("GLM_API_KEY", "glm-test-key-for-replay")
    a = Replay("gemini").stream("stream_text.sse").stream("stream_json_continue.sse")
    b = Replay("glm").stream("stream_text.sse").stream("stream_json.sse")  # then HANDOVER
    monkeypatch.setattr(gemini, "http_client", a.client)
    monkeypatch.setattr(glm, "http_client", b.client)
    session = await database_sync_to_async(services.start_session)(
        user,
        codebase=codebase,
        task="Add rate limiting to login",
        mode="debate",
        agent_a_profile="gemini",
        agent_b_profile="glm",
        max_exchanges=3,
    )
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    rows = await database_sync_to_async(
        lambda: list(session.messages.filter(role="agent").order_by("seq"))
    )()
    assert [(m.agent, m.profile, m.model, m.signal) for m in rows] == [
        ("A", "gemini", "gemini-2.5-flash", "CONTINUE"),
        ("B", "glm", "glm-4.5-flash", "HANDOVER"),
    ]
    for message in rows:
        assert message.content == "Add a limiter in app/api.py:10-42 and tests."
        assert message.state == "complete"
    # Reply usage plus signal usage, as the recorded responses reported them.
    assert (rows[0].prompt_tokens, rows[0].completion_tokens) == (42 + 61, 7 + 14)
    assert (rows[1].prompt_tokens, rows[1].completion_tokens) == (42 + 55, 7 + 18)
    assert rows[0].cost_usd == pytest.approx((103 * 0.30 + 21 * 2.50) / 1_000_000)
    assert rows[1].cost_usd == 0.0  # glm-4.5-flash is free
    # The browser saw the reply arrive in pieces.
    deltas = [e for e in client.of_type("message.delta") if e["seq"] == rows[0].seq]
    assert deltas and client.texts[rows[0].seq] == rows[0].content
    await client.close()
