"""The evidence plan the app makes when the model's is unusable looks up the task's own names,
never the language's: on pylint-4551 the 0.5B model's plan was cut off and the app's plan spent
a step on `find_symbol None`."""

import pytest
from channels.db import database_sync_to_async

from agents.investigation.session import copies_the_guide, default_steps
from agents.providers.fake import FakeProvider
from conversations.models import Message
from tests.conversations.conftest import jobs_drained, start  # noqa: F401 (fixtures)
from tests.conversations.wsclient import Client

TASK = (
    "Use Python type hints for UML generation: pyreverse ignores `None` defaults in "
    "`ClassDiagram`, and `self` attributes set from `get_annotation`."
)


def test_the_default_plan_looks_up_the_tasks_names_not_python_builtins():
    looked_up = [s.argument for s in default_steps(TASK) if s.tool == "find_symbol"]
    assert looked_up == ["ClassDiagram", "get_annotation"]


def test_steps_that_copy_the_tool_guide_are_not_run():
    assert copies_the_guide("find_symbol(name)")
    assert copies_the_guide(" query ")
    assert not copies_the_guide("E1")  # a reference to another step's file
    assert not copies_the_guide("ClassDiagram")
    assert not copies_the_guide("seaborn/_core/plot.py:1-40")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_a_session_runs_the_models_real_lookups_and_not_the_guides_examples(
    start,  # noqa: F811
    user,
    settings,
):
    settings.PLANAGENTS_EVIDENCE_STEPS = 6
    plan = {
        "steps": [
            {"id": "E1", "tool": "search", "argument": "find_symbol(name)", "why": "copied",
             "depends_on": [], "kind": "independent"},
            {"id": "E2", "tool": "find_references", "argument": "TokenStore", "why": "users",
             "depends_on": [], "kind": "independent"},
        ],
        "next_action": "synthesize",
    }  # fmt: skip
    proposal = {
        "summary": "Expire tokens.",
        "steps": [
            {
                "title": "Expire",
                "symbol": "none",
                "detail": "In `todo/auth.py:1`.",
                "files": ["todo/auth.py"],
            }
        ],
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "TokenStore"}],
        "new_files": [],
    }
    FakeProvider.script("fake", "TokenStore is in `todo/auth.py:1`.", plan, proposal, "Fine.")
    session = await start(task="Make the token store drop old tokens")
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()
    ran = await database_sync_to_async(
        lambda: [
            (m.data["evidence"]["tool"], m.data["evidence"]["argument"])
            for m in Message.objects.filter(session=session, node="investigate", role="system")
        ]
    )()
    assert ("find_references", "TokenStore") in ran
    assert all(argument != "find_symbol(name)" for _, argument in ran)
