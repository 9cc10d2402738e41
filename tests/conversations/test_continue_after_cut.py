"""A turn cut off by its time limit keeps what it wrote, the pause says exactly what, and
Continue goes on from there: a free-text reply is given back to the model as the start of its
answer; a structured reply keeps its finished items (providers.base.salvage). The held call is
the scripted provider's Hold, never released: only the limit ends it."""

import pytest
from channels.db import database_sync_to_async

from agents import turns
from agents.budget import TimeLimitReached
from agents.plan_writer import ItemsReply
from agents.providers.base import ChatMessage
from agents.providers.fake import FakeProvider, Hold
from conversations import services
from conversations.models import Message, PlanningSession
from planagents.jobs import wait_for_jobs
from tests.conversations.wsclient import Client
from tests.scripted import NO_LOOKUPS

ASK = [ChatMessage("user", "Add rate limiting to login.")]
BEGUN = "A1: count the failures per user and"


@pytest.fixture
def session(user, codebase):
    return PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="Add rate limiting to login",
        mode="debate", agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip


def held(text, pieces):
    return Hold(text, pieces, timeout=20)


def cut_text_turn(session, settings):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0.2
    FakeProvider.script("fake", held(BEGUN + " lock them out for ten minutes.", pieces=7))
    with pytest.raises(TimeLimitReached) as caught:
        turns.text_turn(session, turns.Agent("A", "fake"), turn_key="debate:0", node="",
                        messages=ASK)  # fmt: skip
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0
    return caught.value


@pytest.mark.django_db
def test_a_cut_text_reply_says_how_much_is_kept(session, settings):
    exc = cut_text_turn(session, settings)

    assert turns.kept_by(exc) == (
        "Kept: the first 7 words of Agent A's reply; Continue goes on from there."
    )
    (message,) = session.messages.all()
    assert message.state == "interrupted" and message.content.startswith(BEGUN)


@pytest.fixture
def prefilling(monkeypatch):
    """The scripted provider as llama.cpp's server: a trailing assistant message is continued."""
    monkeypatch.setattr(FakeProvider, "prefills", True)


@pytest.mark.django_db
@pytest.mark.usefixtures("prefilling")
def test_continue_gives_the_cut_reply_to_the_model_as_the_start_of_its_answer(session, settings):
    cut_text_turn(session, settings)
    FakeProvider.script("fake", " lock them out for ten minutes.")

    message = turns.text_turn(session, turns.Agent("A", "fake"), turn_key="debate:0", node="",
                              messages=ASK)  # fmt: skip

    last = FakeProvider.calls("fake")[-1]
    assert list(last.messages) == [*ASK, ChatMessage("assistant", BEGUN)]
    assert message.content == BEGUN + " lock them out for ten minutes."
    assert message.state == "complete" and message.data["resumed_after_words"] == 7
    assert list(session.messages.values_list("pk", flat=True)) == [message.pk]  # the same message


@pytest.mark.django_db
def test_a_model_without_prefill_is_asked_for_the_rest_and_its_repeat_is_trimmed(session, settings):
    cut_text_turn(session, settings)
    FakeProvider.script("fake", "per user and lock them out for ten minutes.")  # repeats 3 words

    message = turns.text_turn(session, turns.Agent("A", "fake"), turn_key="debate:0", node="",
                              messages=ASK)  # fmt: skip

    last = FakeProvider.calls("fake")[-1]
    assert list(last.messages) == [
        *ASK, ChatMessage("assistant", BEGUN), ChatMessage("user", turns.GO_ON)
    ]  # fmt: skip
    assert message.content == BEGUN + " lock them out for ten minutes."


@pytest.mark.django_db
@pytest.mark.usefixtures("prefilling")
def test_a_model_that_starts_over_is_not_glued_after_the_old_start(session, settings):
    cut_text_turn(session, settings)
    again = BEGUN + " block them for ten minutes."
    FakeProvider.script("fake", again)

    message = turns.text_turn(session, turns.Agent("A", "fake"), turn_key="debate:0", node="",
                              messages=ASK)  # fmt: skip

    assert message.content == again
    assert "resumed_after_words" not in message.data


@pytest.mark.django_db
def test_nothing_written_before_the_limit_is_said_so(session, settings):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0.2
    FakeProvider.script("fake", held(BEGUN, pieces=0))
    with pytest.raises(TimeLimitReached) as caught:
        turns.text_turn(session, turns.Agent("B", "fake"), turn_key="debate:1", node="",
                        messages=ASK)  # fmt: skip

    assert turns.kept_by(caught.value) == (
        "Nothing of Agent B's reply was written yet; Continue writes it from the start."
    )


ITEMS = '{"items": ["Lock out after five failures.", "Log each lockout.", "Reset the count on success."]}'


def cut_structured_turn(session, settings, pieces):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0.2
    FakeProvider.script("fake", held(ITEMS, pieces=pieces))
    with pytest.raises(TimeLimitReached) as caught:
        turns.structured_turn(
            session, turns.Agent("A", "fake"), turn_key="risks:0", node="", messages=ASK,
            schema=ItemsReply, render=lambda data, complete: "\n".join(data.get("items") or []),
        )  # fmt: skip
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0
    return caught.value


@pytest.mark.django_db
def test_a_cut_structured_reply_keeps_its_finished_items_for_continue(session, settings):
    exc = cut_structured_turn(session, settings, pieces=10)  # cut inside the third item

    assert turns.kept_by(exc) == (
        "Kept: the finished part of Agent A's reply (2 items); "
        "Continue takes it as written and goes on."
    )
    calls = len(FakeProvider.calls("fake"))
    message, reply = turns.structured_turn(
        session, turns.Agent("A", "fake"), turn_key="risks:0", node="", messages=ASK,
        schema=ItemsReply, render=lambda data, complete: "\n".join(data.get("items") or []),
    )  # fmt: skip

    assert reply.items == ["Lock out after five failures.", "Log each lockout."]
    assert len(FakeProvider.calls("fake")) == calls  # the kept part is the result: no new call
    assert "Its finished parts are kept as written" in message.content
    assert message.state == "complete"


@pytest.mark.django_db
def test_a_structured_reply_cut_before_any_item_finished_is_written_again(session, settings):
    exc = cut_structured_turn(session, settings, pieces=3)  # inside the first item

    assert turns.kept_by(exc) == (
        "Nothing of Agent A's reply was finished enough to keep; Continue writes it from the start."
    )
    FakeProvider.script("fake", ITEMS)
    _, reply = turns.structured_turn(
        session, turns.Agent("A", "fake"), turn_key="risks:0", node="", messages=ASK,
        schema=ItemsReply, render=lambda data, complete: "\n".join(data.get("items") or []),
    )  # fmt: skip
    assert len(reply.items) == 3


# ---------------------------------------------------------------- a debate, on its page


@pytest.fixture
async def jobs_drained():
    yield
    await wait_for_jobs(timeout=60)


def debate_turns(session):
    return list(session.messages.filter(role="agent", node="").values_list("content", "state"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained", "prefilling")
async def test_a_debate_turn_cut_by_its_time_limit_is_shown_kept_and_continued(
    user, codebase, settings
):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0.2
    FakeProvider.script(
        "fake", NO_LOOKUPS, held(BEGUN + " lock them out for ten minutes.", pieces=7)
    )
    session = await database_sync_to_async(services.start_session)(
        user, codebase=codebase, task="Add rate limiting to login", mode="debate",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    ((content, state),) = await database_sync_to_async(debate_turns)(session)
    assert content.startswith(BEGUN) and state == "interrupted"  # shown, as far as it got
    banner = await database_sync_to_async(
        lambda: session.messages.filter(role=Message.Role.SYSTEM).last()
    )()
    assert "Kept: the first 7 words of Agent A's reply; Continue goes on from there." in (
        banner.content
    )
    assert "Nothing was lost" not in banner.content

    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0
    FakeProvider.script("fake", " lock them out for ten minutes.")
    await database_sync_to_async(services.continue_session)(user, session.pk)
    await client.until(
        lambda e: (
            e["type"] == "message.end"
            and e["message"]["content"] == BEGUN + " lock them out for ten minutes."
        )
    )
    resumed = FakeProvider.prompt("fake", schema="text", asking=BEGUN)
    assert resumed.endswith(BEGUN)  # the cut reply is the start of the answer, last
    await client.close()


PROPOSAL = (
    '{"summary": "Throttle failed logins.", "steps": [{"title": "Count failures", "symbol": '
    '"none", "detail": "Count them in `todo/api.py:1`.", "files": ["todo/api.py"]}, {"title": '
    '"Refuse the sixth attempt", "symbol": "none", "detail": "Answer 429.", "files": '
    '["todo/api.py"]}], "files": []}'
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_a_proposal_cut_by_its_time_limit_keeps_its_finished_steps_through_continue(
    start, user, settings
):
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0.2
    cut_in_step_two = PROPOSAL.split().index('"Refuse')
    FakeProvider.script(
        "fake", NO_LOOKUPS, "Login is in todo/api.py.", held(PROPOSAL, pieces=cut_in_step_two + 2)
    )
    session = await start(mode="planning")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human")

    banner = await database_sync_to_async(
        lambda: session.messages.filter(role=Message.Role.SYSTEM).last()
    )()
    assert "Kept: the finished part of Agent A's reply (1 step); Continue takes it as written" in (
        banner.content
    )
    settings.PLANAGENTS_LLM_CALL_TIME_LIMIT = 0
    await database_sync_to_async(services.continue_session)(user, session.pk)
    await client.until_state("awaiting_human", node="checkpoint", timeout=90)

    proposal = await database_sync_to_async(lambda: session.messages.get(turn_key="propose:1"))()
    assert proposal.state == "complete" and proposal.data["steps"][0]["title"] == "Count failures"
    assert [s["title"] for s in proposal.data["steps"]] == ["Count failures"]
    assert "Its finished parts are kept as written" in proposal.content
    assert len([c for c in FakeProvider.calls("fake") if c.kind == "Proposal"]) == 1  # not redone
    await client.close()
