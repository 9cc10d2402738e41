"""A debate with Agent A on Gemini and Agent B on GLM, both replayed from recorded HTTP
responses through the real SDKs: streaming, signals, echo redos and accounting end to end."""

import pytest
from channels.db import database_sync_to_async

from agents.providers import gemini, glm
from tests.agents.llm_replay import Replay

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


async def test_agent_a_on_gemini_and_agent_b_on_glm_debate_and_each_reply_is_accounted(
    monkeypatch, settings, watched
):
    settings.GEMINI_API_KEY = "AIza-test-key-for-replay"
    settings.GLM_API_KEY = "glm-test-key-for-replay"
    # Agent A's evidence plan first: offered the tools, it answers in text and calls none (the
    # app's own lookups still run); then its reply and its signal.
    a = (
        Replay("gemini")
        .stream("stream_text.sse")
        .stream("stream_text.sse")
        .stream("stream_json_continue.sse")
    )
    # Agent B answers with Agent A's very words, twice (asked once to write its own), then
    # hands over.
    b = Replay("glm").stream("stream_text.sse").stream("stream_text.sse").stream("stream_json.sse")
    monkeypatch.setattr(gemini, "http_client", a.client)
    monkeypatch.setattr(glm, "http_client", b.client)
    session, client = await watched(
        mode="debate", agent_a_profile="gemini", agent_b_profile="glm", max_exchanges=3
    )
    await client.until_state("awaiting_human")

    rows = await database_sync_to_async(
        lambda: list(session.messages.filter(role="agent", node="").order_by("seq"))
    )()
    assert [(m.agent, m.profile, m.model, m.signal, m.state) for m in rows] == [
        ("A", "gemini", "gemini-2.5-flash", "CONTINUE", "complete"),
        ("B", "glm", "glm-4.5-flash", "HANDOVER", "complete"),
    ]
    plan = await database_sync_to_async(session.messages.get)(turn_key="investigate:plan:1")
    assert (plan.agent, plan.profile) == ("A", "gemini")
    assert "functionDeclarations" in str(a.body(0)["tools"])  # offered as native tool calls
    reply = "Add a limiter in app/api.py:10-42 and tests."
    flag = "\n\n_Flagged citations: `app/api.py` is not in the codebase._"
    assert rows[0].content == reply + flag  # the recorded reply cites a file that is not there
    # The redo went to GLM with the correction last, and its echo is kept, flagged.
    assert "copied Agent A's proposal" in b.body(1)["messages"][-1]["content"]
    assert b.body(1)["messages"][:-2] == b.body(0)["messages"]
    assert b.body(1)["messages"][-2] == {"role": "assistant", "content": reply}
    assert rows[1].content.startswith(reply + "\n\n_Flagged: this reply repeats Agent A's")
    assert rows[1].data == {
        "flags": ["echo"],
        "citation_problems": 1,
        "discarded": [{"reason": "it copied Agent A's proposal", "text": reply}],
    }
    # Reply usage (both tries for B) plus signal usage, as the recorded responses reported them.
    assert (rows[0].prompt_tokens, rows[0].completion_tokens) == (42 + 61, 7 + 14)
    assert (rows[1].prompt_tokens, rows[1].completion_tokens) == (42 + 42 + 55, 7 + 7 + 18)
    assert rows[0].cost_usd == pytest.approx((103 * 0.30 + 21 * 2.50) / 1_000_000)
    assert rows[1].cost_usd == 0.0  # glm-4.5-flash is free
    # The browser saw the reply arrive in pieces.
    deltas = [e for e in client.of_type("message.delta") if e["seq"] == rows[0].seq]
    assert deltas and client.texts[rows[0].seq] == rows[0].content
    await client.close()
