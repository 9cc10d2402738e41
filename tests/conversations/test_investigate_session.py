"""Planning sessions that investigate before proposing, on the scripted provider: the evidence
plan runs with the read-only tools, each result is a message [E#] the page shows, the proposal
prompt carries the evidence, a bad plan never crashes the session, and a resumed run neither
asks the model again nor reruns the tools it already ran."""

import pytest
from channels.db import database_sync_to_async

from agents.investigation.tools import Workspace
from agents.planning import nodes
from agents.providers.fake import FakeProvider
from conversations.models import Message, PlanningState
from tests.conversations.wsclient import Client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

TASK = "Make TokenStore drop tokens older than a day; today they never expire"


@pytest.fixture(autouse=True)
def investigation_on(settings):
    settings.PLANAGENTS_EVIDENCE_STEPS = 6
    settings.PLANAGENTS_EVIDENCE_ROUNDS = 2


def evidence_plan(next_action="synthesize"):
    return {
        "steps": [
            {"id": "E1", "tool": "find_symbol", "argument": "TokenStore",
             "why": "where tokens live", "depends_on": [], "kind": "independent"},
            {"id": "E2", "tool": "related", "argument": "E1", "why": "who uses it",
             "depends_on": ["E1"], "kind": "dependent"},
            {"id": "E3", "tool": "search", "argument": "issue token login",
             "why": "where tokens are issued", "depends_on": [], "kind": "independent"},
        ],
        "next_action": next_action,
    }  # fmt: skip


def proposal(path="todo/auth.py", symbol="none", detail=None):
    detail = f"In `{path}:1` [E1]." if detail is None else detail
    return {
        "summary": "Store the issue time with each token [E1].",
        "steps": [{"title": "Expire", "symbol": symbol, "detail": detail, "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "TokenStore lives here"}],
        "new_files": [],
    }


def evidence_messages(session):
    """The evidence cards in [E#] order (they are saved, and shown, as they finish)."""
    rows = Message.objects.filter(session=session, node="investigate", role="system")
    return sorted(rows, key=lambda m: m.data["evidence"]["number"])


async def run_to_checkpoint(start, user, *script, plan_calls=1):
    """Runs a session on `script` to its checkpoint: the investigation's `plan_calls` replies
    first, then Agent A's analysis (it reads the evidence), then the rest."""
    analysis = "TokenStore is in `todo/auth.py:1`."
    FakeProvider.script("fake", *script[:plan_calls], analysis, *script[plan_calls:])
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    return session, client


async def test_the_proposal_is_written_from_the_evidence(start, user):
    session, client = await run_to_checkpoint(
        start, user, evidence_plan(), proposal(), "Add a test for expiry."
    )
    items = await database_sync_to_async(evidence_messages)(session)
    data = [m.data["evidence"] for m in items]
    # The symbol the task names is looked up first (by the app), and the task searched last.
    assert [(d["id"], d["tool"]) for d in data] == [
        ("E1", "find_symbol"), ("E2", "related"), ("E3", "search"), ("E4", "search")]  # fmt: skip
    assert data[3]["argument"] == TASK
    assert data[0]["tool"] == "find_symbol" and data[0]["location"].startswith("todo/auth.py:")
    # E2 depended on E1 and was given E1's file.
    assert data[1]["tool"] == "related" and data[1]["argument"] == "todo/auth.py"
    assert items[0].content.startswith("**E1 · find_symbol `TokenStore`** — `todo/auth.py:")
    # Each card reached the page live, as its own message.
    assert {m.seq for m in items} <= set(client.texts)

    structured = FakeProvider.calls("fake", text=False)
    plan_call, propose_call = structured[0], structured[1]
    assert "find_symbol(name)" in plan_call.prompt and TASK in plan_call.prompt
    prompt = propose_call.prompt
    assert "[E1] find_symbol(TokenStore) — todo/auth.py:" in prompt
    assert "class TokenStore" in prompt
    # The stable part first, the request last (a prompt cache keeps the prefix).
    assert prompt.index("[E1]") < prompt.index(f"Task: {TASK}") < prompt.index("Propose the change")
    # The files the proposal may name are the real ones the investigation found.
    schema = propose_call.schema.model_json_schema()
    choices = schema["$defs"]["ExistingFileChange"]["properties"]["path"]["enum"]
    assert choices[0] == "todo/auth.py" and "todo/api.py" in choices
    review = FakeProvider.calls("fake", text=True)[-1].prompt
    assert "[E1]" in review
    state = await database_sync_to_async(PlanningState.objects.get)(session=session)
    assert state.proposal["files"][0]["path"] == "todo/auth.py"
    await client.close()


async def test_a_second_round_sees_what_the_first_found(start, user):
    second = {"steps": [{"id": "E1", "tool": "outline", "argument": "todo/auth.py",
                         "why": "its methods", "depends_on": [], "kind": "independent"}],
              "next_action": "synthesize"}  # fmt: skip
    session, client = await run_to_checkpoint(
        start, user, evidence_plan("retrieve"), second, proposal(), "Fine.", "Fine.", plan_calls=2
    )
    replan = FakeProvider.calls("fake", text=False)[1].prompt
    assert "Found so far:" in replan and "[E1] find_symbol(TokenStore) → todo/auth.py:" in replan
    items = await database_sync_to_async(evidence_messages)(session)
    assert [m.data["evidence"]["id"] for m in items] == ["E1", "E2", "E3", "E4", "E5"]
    assert items[-1].data["evidence"]["tool"] == "outline"
    await client.close()


async def test_bad_json_gets_one_repair(start, user):
    session, client = await run_to_checkpoint(
        start, user, "{not json", evidence_plan(), proposal(), "Fine.", "Fine.", plan_calls=2
    )
    structured = FakeProvider.calls("fake", text=False)
    assert "That JSON is not valid" in structured[1].prompt  # the repair, then the real plan
    items = await database_sync_to_async(evidence_messages)(session)
    assert items[0].data["evidence"]["argument"] == "TokenStore"
    await client.close()


async def test_an_unusable_plan_falls_back_to_the_apps_own_and_the_session_goes_on(start, user):
    bad = {"steps": [{"id": "E1", "tool": "grep", "argument": "x", "why": "w",
                      "depends_on": [], "kind": "independent"}], "next_action": "synthesize"}  # fmt: skip
    session, client = await run_to_checkpoint(
        start, user, bad, bad, proposal(), "Fine.", "Fine.", plan_calls=2
    )
    plan_message = await database_sync_to_async(
        lambda: Message.objects.get(session=session, node="investigate", role="agent")
    )()
    assert "the app planned instead" in plan_message.content
    items = await database_sync_to_async(evidence_messages)(session)
    tools = [(m.data["evidence"]["tool"], m.data["evidence"]["argument"]) for m in items]
    assert sorted(tools) == [("find_symbol", "TokenStore"), ("search", TASK)]
    await client.close()


async def test_a_resumed_investigation_reruns_neither_the_model_nor_finished_tools(
    start, user, monkeypatch
):
    session, client = await run_to_checkpoint(
        start, user, evidence_plan(), proposal(), "Fine.", "Fine."
    )
    await client.close()
    ran: list[tuple[str, str]] = []
    real = Workspace.call

    def spy(self, tool, argument):
        ran.append((tool, argument))
        return real(self, tool, argument)

    monkeypatch.setattr(Workspace, "call", spy)

    def rerun_after_crash():
        # The process died after E1 and E2 were saved, before E3 was.
        before = {m.turn_key: m.seq for m in evidence_messages(session)}
        Message.objects.filter(session=session, turn_key="investigate:E3").delete()
        calls = len(FakeProvider.calls("fake"))
        state = PlanningState.objects.get(session=session)
        context = nodes.NodeContext.load(session, state)
        nodes.investigate(context)
        assert len(FakeProvider.calls("fake")) == calls  # the saved plan was reused
        after = {m.turn_key: m.seq for m in evidence_messages(session)}
        return before, after, [e.label for e in context.evidence]

    before, after, labels = await database_sync_to_async(rerun_after_crash)()
    assert ran == [("search", "issue token login")]  # only the step whose result was lost
    assert after["investigate:E1"] == before["investigate:E1"]
    assert after["investigate:E2"] == before["investigate:E2"]
    assert labels == ["E1", "E2", "E3", "E4"]
    ran.clear()
    await database_sync_to_async(
        lambda: nodes.investigate(
            nodes.NodeContext.load(session, PlanningState.objects.get(session=session))
        )
    )()
    assert ran == []


async def test_the_plan_shown_is_the_plan_that_ran(start, user):
    """The 1.5B model wrote one lookup six times; the page showed all six while one ran."""
    step = {"id": "E1", "tool": "outline", "argument": "todo/auth.py", "why": "its methods",
            "depends_on": [], "kind": "independent"}  # fmt: skip
    repeated = {"steps": [step] * 6, "next_action": "synthesize"}
    session, client = await run_to_checkpoint(start, user, repeated, proposal(), "Fine.", "Fine.")
    await client.close()

    shown = await database_sync_to_async(
        lambda: Message.objects.get(session=session, turn_key="investigate:plan:1")
    )()
    ran = shown.data["steps"]
    rows = [line for line in shown.content.splitlines() if line.startswith("- ")]
    assert len(rows) == len(ran)
    assert sum("`todo/auth.py`" in row for row in rows) == 1
    assert "5 of the model's 6 step(s) left out" in shown.content
    mine = [row for row in rows if "the app's own lookup" not in row]
    assert len(mine) == 1 and "`outline` `todo/auth.py`" in mine[0]


async def test_the_apps_own_lookups_run_when_the_model_fills_every_slot(start, user):
    """pylint-5859's 0.5B plan filled all six slots with lookups of `test.py` (a file the issue
    mentions, not in the codebase), and the search of the task itself was cut."""
    steps = [
        {"id": f"E{n}", "tool": tool, "argument": "test.py", "why": "the file the task names",
         "depends_on": [], "kind": "independent"}
        for n, tool in enumerate(
            ["find_symbol", "find_references", "read_file", "outline", "list_dir", "related"], 1
        )
    ]  # fmt: skip
    full = {"steps": steps, "next_action": "synthesize"}
    session, client = await run_to_checkpoint(start, user, full, proposal(), "Fine.", "Fine.")
    await client.close()

    items = await database_sync_to_async(evidence_messages)(session)
    data = [m.data["evidence"] for m in items]
    assert len(data) == 6  # the setting's cap, still
    assert (data[0]["tool"], data[0]["argument"]) == ("find_symbol", "TokenStore")  # the app's
    assert (data[-1]["tool"], data[-1]["argument"]) == ("search", TASK)  # the app's
    mine = [(d["tool"], d["argument"].split(":")[0]) for d in data[1:-1]]
    assert mine == [(s["tool"], "test.py") for s in steps[:4]]  # the model's first four
    # The plan names each step by the card its result became.
    shown = await database_sync_to_async(
        lambda: Message.objects.get(session=session, turn_key="investigate:plan:1")
    )()
    rows = [line for line in shown.content.splitlines() if line.startswith("- ")]
    assert [row.split(":")[0] for row in rows] == [f"- E{n}" for n in range(1, 7)]
    assert "2 of the model's 6 step(s) left out" in shown.content


async def test_the_file_a_called_method_is_handed_down_to_comes_first_in_the_choices(user):
    """The proposal's file choices are re-ranked with the import graph (rag.rerank): the task
    calls `Frame.copy`, whose body hands the work to `Inner.copy` in the module it imports, so
    that module comes first, ahead of the file the search and the lookup found first."""
    import json

    from conversations import services
    from tests.conftest import make_codebase
    from tests.rag.test_rerank import API, CORE, OTHER
    from tests.rag.test_rerank import TASK as COPY_TASK

    files = {"shop/api.py": API, "shop/core.py": CORE, "shop/other.py": OTHER}
    pack = json.dumps({"files": files}).encode()
    codebase = await database_sync_to_async(make_codebase)(user, "shop.json", "shop", pack)
    plan = {"steps": [{"id": "E1", "tool": "find_symbol", "argument": "Frame", "why": "the API",
                       "depends_on": [], "kind": "independent"}], "next_action": "synthesize"}  # fmt: skip
    route = {"route": "change", "confidence": 0.9}  # the task opens with code: phase 1 asks
    FakeProvider.script("fake", route, plan, "Frame.copy is in `shop/api.py:10`.",
                        proposal("shop/core.py"), "Fine.", "Fine.")  # fmt: skip
    session = await database_sync_to_async(services.start_session)(
        user, codebase=codebase, task=COPY_TASK, mode="planning",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    items = await database_sync_to_async(evidence_messages)(session)
    found = [m.data["evidence"]["path"] for m in items if m.data["evidence"]["found"]]
    assert found[0] == "shop/api.py"  # what the investigation found first
    propose_call = FakeProvider.calls("fake", text=False)[2]
    assert propose_call.schema.__name__ == "Proposal"
    schema = propose_call.schema.model_json_schema()
    choices = schema["$defs"]["ExistingFileChange"]["properties"]["path"]["enum"]
    assert choices[:2] == ["shop/core.py", "shop/api.py"]
    await client.close()


async def test_a_step_names_a_definition_it_was_shown_and_cites_its_line(start, user):
    """Each step's symbol is an enum of the definitions in the code the agents were shown;
    the chosen one becomes the step's `path:line` (the model wrote no line of its own)."""
    session, client = await run_to_checkpoint(
        start, user, evidence_plan(),
        proposal(symbol="TokenStore", detail="Give each token an expiry time."), "Fine.", "Fine.",
    )  # fmt: skip
    propose_call = FakeProvider.calls("fake", text=False)[1]
    schema = propose_call.schema.model_json_schema()
    names = schema["$defs"]["GroundedStep"]["properties"]["symbol"]["enum"]
    assert "TokenStore" in names and names[-1] == "none"
    assert "Each step's symbol is the function or class" in propose_call.prompt
    state = await database_sync_to_async(PlanningState.objects.get)(session=session)
    step = state.proposal["steps"][0]
    assert "symbol" not in step
    items = await database_sync_to_async(evidence_messages)(session)
    line = items[0].data["evidence"]["location"].split(":")[1].split("-")[0]
    assert (
        step["detail"] == f"Give each token an expiry time. (`TokenStore` at `todo/auth.py:{line}`)"
    )
    assert step["files"] == ["todo/auth.py"]
    await client.close()


TRACEBACK_TASK = """Logging in crashes when the todo file is empty:
Traceback (most recent call last):
  File "/srv/venv/lib/python3.11/site-packages/todo/auth.py", line 259, in user_for
    todos = storage.list_for(username)
  File "/srv/venv/lib/python3.11/site-packages/todo/storage.py", line 321, in _load
    return [Todo(**row) for row in json.loads(self.path.read_text())]
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"""


async def test_the_file_a_pasted_traceback_fails_in_is_in_the_plan_whatever_the_model_chose(
    start, user
):
    FakeProvider.script(
        "fake", evidence_plan(), "Tokens are in `todo/auth.py:1`.", proposal(), "Fine.", "Fine."
    )
    session = await start(task=TRACEBACK_TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    state = await database_sync_to_async(PlanningState.objects.get)(session=session)
    # The model named auth.py, the caller; the error surfaced in storage.py's `_load` (the
    # innermost frame in this codebase; json's frame below it is not ours).
    assert [(f["path"], f["reason"]) for f in state.proposal["files"]] == [
        ("todo/auth.py", "TokenStore lives here"),
        ("todo/storage.py", "The reported traceback fails here, in `_load`; added by the app."),
    ]
    items = await database_sync_to_async(evidence_messages)(session)
    assert ("find_symbol", "_load") in [
        (m.data["evidence"]["tool"], m.data["evidence"]["argument"]) for m in items
    ]
    await client.close()
