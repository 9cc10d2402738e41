"""What the page is told about where a session is: a progress event when a turn starts (the
prompt being read, its size, how long such turns took before), a workflow panel with every node
of the workflow table, and a redone reply that keeps its discarded attempt."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.providers.fake import FakeProvider, Hold
from agents.workflow import NODES
from conversations import store
from conversations.models import Message, PlanningSession, PlanningState
from conversations.progress import (
    approx_tokens,
    current_progress,
    estimate,
    turn_progress,
    workflow_order,
    workflow_steps,
)
from rag.models import CodeFile
from tests.conversations.test_planning_session import proposal
from tests.scripted import NO_LOOKUPS, kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]


def source_path(codebase):
    return CodeFile.objects.filter(codebase=codebase, role="source").values_list("path", flat=True)[
        0
    ]


async def test_a_turn_opens_with_a_progress_event_saying_the_prompt_is_being_read(watched):
    held = Hold("The login flow starts in the handler. " * 5, pieces=2)  # the analysis
    FakeProvider.script("fake", NO_LOOKUPS, held)  # the investigation's plan comes first
    session, client = await watched()
    progress = await client.until(
        lambda e: e["type"] == "progress" and e.get("node") == "analyze_codebase"
    )
    assert await asyncio.to_thread(held.reached.wait, 60)

    call = FakeProvider.calls("fake", text=True)[0]
    message = await database_sync_to_async(lambda: session.messages.get(node="analyze_codebase"))()
    assert progress["phase"] == "reading"
    assert progress["seq"] == message.seq and progress["node"] == "analyze_codebase"
    assert progress["prompt_tokens"] == approx_tokens([m.content for m in call.messages]) > 0
    assert progress["estimate"] is None  # nothing measured yet for this node and profile
    # It comes before the first token of its message.
    kinds = [(e["type"], e.get("seq")) for e in client.events]
    first_delta = next(
        (
            i
            for i, (kind, seq) in enumerate(kinds)
            if kind == "message.delta" and seq == message.seq
        ),
        len(kinds),
    )
    assert kinds.index(("progress", message.seq)) < first_delta
    held.release.set()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()


def _turn(session, seq, node, profile, latency_ms, state=Message.State.COMPLETE):
    return Message.objects.create(
        session=session, seq=seq, role="agent", agent="A", node=node, profile=profile,
        latency_ms=latency_ms, state=state,
    )  # fmt: skip


def _session(owner, codebase, status=PlanningSession.Status.RUNNING):
    return PlanningSession.objects.create(
        owner=owner, codebase=codebase, title="t", task="t", mode="planning", status=status
    )


def test_the_estimate_is_the_median_of_the_owners_past_turns_of_that_node_and_profile(
    user, other_user, codebase
):
    from tests.conftest import make_codebase

    mine = _session(user, codebase)
    for seq, ms in enumerate([10_000, 30_000, 20_000, 90_000], start=1):
        _turn(mine, seq, "propose_changes", "local", ms)
    _turn(mine, 5, "review_and_refine", "local", 500_000)  # another node
    _turn(mine, 6, "propose_changes", "gemini", 500_000)  # another profile
    _turn(mine, 7, "propose_changes", "local", 0, Message.State.STREAMING)  # not finished
    theirs = _session(other_user, make_codebase(other_user))
    _turn(theirs, 1, "propose_changes", "local", 900_000)  # another owner's

    assert estimate(mine, "propose_changes", "local") == {"seconds": 25.0, "runs": 4}
    assert estimate(mine, "finalize_plan", "local") is None


def test_the_workflow_panel_has_a_row_for_every_node_of_the_workflow(user, codebase):
    session = _session(user, codebase)
    state = PlanningState.objects.create(session=session, current_node="verify_review")
    panel = workflow_steps(session, state)
    nodes = [s["node"] for s in panel["steps"]]
    assert nodes == [n for n in NODES if n != "completed"]  # the end, not a step
    assert nodes.index("investigate") < nodes.index("propose_changes")
    assert nodes.index("review_and_refine") < nodes.index("verify_review")
    assert nodes.index("checkpoint") < nodes.index("finalize_plan") == len(nodes) - 2
    marks = {s["node"]: s["status"] for s in panel["steps"]}
    assert marks["review_and_refine"] == "done" and marks["verify_review"] == "current"
    assert marks["validate_proposal"] == "pending"
    assert (panel["step"], panel["total"]) == (nodes.index("verify_review") + 1, len(nodes))
    payload = store.session_state_payload(session)
    assert payload["workflow"] == panel


def test_a_session_stopped_before_any_step_ran_shows_no_step_done(user, codebase):
    session = _session(user, codebase, PlanningSession.Status.STOPPED)
    state = PlanningState.objects.create(session=session, current_node="stopped")
    Message.objects.create(session=session, seq=1, role="user", content="the task")
    panel = workflow_steps(session, state)
    assert {s["status"] for s in panel["steps"]} == {"pending"}
    assert panel["step"] == 0

    # Stopped while investigating, the first step: that step says so, none is done.
    _turn(session, 2, "investigate", "fake", 0, Message.State.INTERRUPTED)
    marks = {s["node"]: s["status"] for s in workflow_steps(session, state)["steps"]}
    assert marks["investigate"] == "stopped"
    assert "done" not in marks.values()

    # Stopped while analysing, after the investigation: the investigation is done.
    _turn(session, 3, "analyze_codebase", "fake", 0, Message.State.INTERRUPTED)
    marks = {s["node"]: s["status"] for s in workflow_steps(session, state)["steps"]}
    assert marks["investigate"] == "done" and marks["analyze_codebase"] == "stopped"
    assert list(marks.values()).count("done") == 1


async def test_a_redone_reply_keeps_its_discarded_attempt_and_says_why(watched, codebase):
    path = await database_sync_to_async(source_path)(codebase)
    summary = (
        "Count failed logins per user in the login handler, refuse the sixth attempt within a "
        "minute with HTTP 429, and reset the count after a successful login."
    )
    echo = f"Agreed. {summary}"
    review = "The count lives in process memory; two workers would each allow five attempts."
    FakeProvider.script(
        "fake", NO_LOOKUPS, f"See `{path}:1`.", {**proposal(path), "summary": summary}, echo,
        review, kept(1),
    )  # fmt: skip
    session, client = await watched()
    await client.until_state("awaiting_human", node="checkpoint")

    message = await database_sync_to_async(
        lambda: session.messages.get(node="review_and_refine", role="agent")
    )()
    assert message.content == review
    assert message.data["discarded"] == [
        {"reason": "it copied Agent A's proposal and the task", "text": echo}
    ]
    redo = [e for e in client.of_type("progress") if e["phase"] == "redo"]
    assert [(e["seq"], e["reason"]) for e in redo] == [
        (message.seq, "it copied Agent A's proposal and the task")
    ]
    end = next(e for e in client.of_type("message.end") if e["message"]["seq"] == message.seq)
    assert end["message"]["discarded"] == message.data["discarded"]
    await client.close()


def test_a_page_shows_a_stored_message_as_html_not_as_tags(client, user, codebase):
    session = _session(user, codebase, PlanningSession.Status.COMPLETED)
    PlanningState.objects.create(session=session, current_node="completed")
    message = Message.objects.create(
        session=session, seq=1, role="user", content="Add **rate limiting** <script>x()</script>"
    )
    store.message_html(message)  # rendered once and stored, as a finished message is
    client.force_login(user)
    for _ in range(2):  # the first view of a stored rendering, and again
        page = client.get(f"/sessions/{session.pk}/").content.decode()
        assert "<strong>rate limiting</strong>" in page
        assert "&lt;p&gt;" not in page and "<script>x()" not in page


async def test_a_repaired_structured_reply_says_why_its_text_starts_again(watched, codebase):
    path = await database_sync_to_async(source_path)(codebase)
    FakeProvider.script(
        "fake",
        NO_LOOKUPS,  # investigate
        f"See `{path}:1`.",  # analyze_codebase
        '{"summary": "Throttle failed logins in the login handler.", "steps": [',  # cut off
        proposal(path),  # the repair
        f"The proposal does not test the 429 path: add a test to `{path}` for it.",
    )
    session, client = await watched()
    await client.until_state("awaiting_human", node="checkpoint")

    message = await database_sync_to_async(lambda: session.messages.get(node="propose_changes"))()
    redo = [e for e in client.of_type("progress") if e["phase"] == "redo"]
    assert [(e["seq"], e["reason"]) for e in redo] == [
        (message.seq, "its JSON did not fit the form asked for, so the model repairs it")
    ]
    # The label comes before the text is replaced (by a redraw, or by the end of the turn).
    kinds = [(e["type"], e.get("seq") or e.get("message", {}).get("seq")) for e in client.events]
    first = kinds.index(("progress", message.seq))
    restart = kinds.index(("progress", message.seq), first + 1)
    replaced = [
        k
        for k in kinds[first + 1 :]
        if k in (("message.start", message.seq), ("message.end", message.seq))
    ]
    assert replaced and kinds.index(replaced[0], first + 1) > restart
    await client.close()


def test_the_status_line_counts_the_rows_the_sidebar_draws_at_every_node(user, codebase):
    """ "Step k of n" and the sidebar come from one list: n is its length and step k its k-th
    row, wherever the session is (the page said "of 10" beside 11 rows)."""
    session = _session(user, codebase)
    state = PlanningState.objects.create(session=session, current_node="analyze_codebase")
    for node in workflow_order():
        state.current_node = node
        panel = workflow_steps(session, state)
        rows = [s["node"] for s in panel["steps"]]
        assert panel["total"] == len(rows), node
        if node == "completed":
            assert panel["step"] == 0 and {s["status"] for s in panel["steps"]} == {"done"}
        else:
            assert rows[panel["step"] - 1] == node
    assert "completed" not in rows


def test_the_first_call_on_a_local_model_says_it_loads_the_model_first(user, codebase, monkeypatch):
    from agents.providers import PROFILES, local

    monkeypatch.setattr(local, "_models", {})
    session = _session(user, codebase)
    first = _turn(session, 1, "analyze_codebase", "local", 0, Message.State.STREAMING)

    event = turn_progress(session, first, phase="reading", prompt_tokens=1200)
    assert event["loading_model"] is True and event["prompt_tokens"] == 1200
    assert current_progress(session)["loading_model"] is True  # a page connecting now

    # The server is up (in this process): neither the turn nor a reconnecting page says so.
    model = next(p.model for p in PROFILES if p.name == "local")
    monkeypatch.setitem(local._models, model, object())
    assert local.is_loaded("local")
    assert "loading_model" not in current_progress(session)
    assert "loading_model" not in turn_progress(session, first, phase="reading", prompt_tokens=9)


def test_remote_and_scripted_profiles_never_say_they_load_a_model(user, codebase, monkeypatch):
    from agents.providers import local

    monkeypatch.setattr(local, "_models", {})
    session = _session(user, codebase)
    for seq, profile in enumerate(["fake", "gemini", "openai"], start=1):
        message = _turn(session, seq, "analyze_codebase", profile, 0, Message.State.STREAMING)
        event = turn_progress(session, message, phase="reading", prompt_tokens=10)
        assert "loading_model" not in event, profile
    assert not local.is_loaded("fake") and not local.is_loaded("no-such-profile")


def _measured(session, profile, *, read_per_s, write_per_s, reply_tokens=401, calls=3):
    """Calls of `profile` as the trace records them: 2,000 new prompt tokens each."""
    from agents.models import LLMCall

    for _ in range(calls):
        first = int(2000 / read_per_s * 1000)
        LLMCall.objects.create(
            session=session, profile=profile, prompt_tokens=2000,
            completion_tokens=reply_tokens, first_piece_ms=first,
            duration_ms=first + int((reply_tokens - 1) / write_per_s * 1000),
        )  # fmt: skip


def test_the_first_turn_of_a_step_has_an_estimate_at_the_machines_measured_speed(user, codebase):
    session = _session(user, codebase)
    turn = _turn(session, 1, "propose_changes", "local-1.5b", 0, Message.State.STREAMING)
    # Nothing measured on this machine for the model: no estimate, and none is made up.
    assert turn_progress(session, turn, phase="reading", prompt_tokens=1961)["estimate"] is None

    # Calls of other steps measured the machine: 68 tokens/s read, 27 written (the 1.5B model
    # on a quiet 2-core machine), replies of 401 tokens.
    _measured(session, "local-1.5b", read_per_s=68, write_per_s=27)
    event = turn_progress(session, turn, phase="reading", prompt_tokens=1961)
    assert event["estimate"]["basis"] == "speed"
    assert event["estimate"]["seconds"] == pytest.approx(1961 / 68 + 401 / 27, abs=0.2)
    assert (event["estimate"]["read_per_s"], event["estimate"]["write_per_s"]) == (68.0, 27.0)

    # Ten times slower lately: the estimate follows the current speed, and the prompt's size.
    _measured(session, "local-1.5b", read_per_s=6.8, write_per_s=2.7, calls=12)
    loaded = turn_progress(session, turn, phase="reading", prompt_tokens=1961)["estimate"]
    assert loaded["seconds"] == pytest.approx(1961 / 6.8 + 401 / 2.7, rel=0.01)  # about 7 min
    longer = turn_progress(session, turn, phase="reading", prompt_tokens=4000)["estimate"]
    assert longer["seconds"] > loaded["seconds"]
    # Another model's history says nothing about this one.
    other = _turn(session, 2, "propose_changes", "local", 0, Message.State.STREAMING)
    assert turn_progress(session, other, phase="reading", prompt_tokens=1961)["estimate"] is None


def test_a_call_outside_any_message_is_estimated_at_the_machines_measured_speed(user, codebase):
    from agents.models import LLMCall
    from conversations.progress import call_progress

    session = _session(user, codebase)
    assert call_progress("local-1.5b", "EvidencePlan", 1961)["estimate"] is None
    _measured(session, "local-1.5b", read_per_s=68, write_per_s=27)
    # Evidence plans were 120 tokens long here.
    LLMCall.objects.filter(session=session).update(purpose="EvidencePlan")
    _measured(session, "local-1.5b", read_per_s=68, write_per_s=27, reply_tokens=121, calls=1)
    LLMCall.objects.filter(session=session, completion_tokens=121).update(purpose="EvidencePlan")
    event = call_progress("local-1.5b", "EvidencePlan", 1961)
    assert event["seq"] is None and event["phase"] == "reading" and event["prompt_tokens"] == 1961
    reply = 401  # the median of the four plans: three of 401 tokens, one of 121
    assert event["estimate"]["seconds"] == pytest.approx(1961 / 68 + reply / 27, rel=0.02)
    assert call_progress("local-1.5b", "EvidencePlan", 0, phase="done")["phase"] == "done"
