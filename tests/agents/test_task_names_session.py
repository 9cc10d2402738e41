"""A session looks up what its task names before the model's own steps count: a quoted line of
code becomes an evidence card citing that line, a file the task names is looked up, and a
name only an example defines gets no lookup."""

import pytest
from channels.db import database_sync_to_async

from agents.investigation.session import default_steps
from agents.investigation.task_names import Named
from agents.providers.fake import FakeProvider
from conversations.models import Message
from rag.models import CodeFile
from tests.conversations.conftest import jobs_drained, start  # noqa: F401 (fixtures)
from tests.conversations.wsclient import Client

QUOTED = "token = secrets.token_urlsafe(TOKEN_BYTES)"
TASK = f"Tokens are too short: `{QUOTED}` should use more bytes; todo/storage.py keeps them."


def line_of(codebase, path, text):
    content = CodeFile.objects.get(codebase=codebase, path=path).content
    return next(n for n, line in enumerate(content.splitlines(), 1) if line.strip() == text)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
async def test_a_quoted_line_and_a_named_file_become_evidence_cards(
    start,  # noqa: F811
    user,
    codebase,
    settings,
):
    # Investigation is what this tests: on whatever the suite's default is.
    settings.PLANAGENTS_EVIDENCE_STEPS = 6
    plan = {
        "steps": [
            {"id": "E1", "tool": "find_references", "argument": "TokenStore", "why": "users",
             "depends_on": [], "kind": "independent"},
        ],
        "next_action": "synthesize",
    }  # fmt: skip
    proposal = {
        "summary": "Use more bytes.",
        "steps": [
            {
                "title": "Bytes",
                "symbol": "none",
                "detail": "In `todo/auth.py:1`.",
                "files": ["todo/auth.py"],
            }
        ],  # fmt: skip
        "files": [{"path": "todo/auth.py", "action": "modify", "reason": "tokens"}],
        "new_files": [],
    }
    FakeProvider.script(
        "fake", "Tokens are issued in `todo/auth.py:1`.", plan, proposal, "Fine.", "Fine."
    )
    session = await start(task=TASK)
    client = Client(user, session.pk)
    await client.connect()
    await client.until_state("awaiting_human", node="checkpoint")
    await client.close()

    def cards():
        rows = Message.objects.filter(session=session, node="investigate", role="system")
        return {
            (m.data["evidence"]["tool"], m.data["evidence"]["argument"]): m
            for m in rows
            if m.data and "evidence" in m.data
        }

    found = await database_sync_to_async(cards)()
    line = await database_sync_to_async(line_of)(codebase, "todo/auth.py", QUOTED)
    # The card shows the definition around the quoted line, whole, with that line in it.
    quoted = found[("find_symbol", "todo/auth.py::TokenStore.issue")].data["evidence"]
    start, end = (int(n) for n in quoted["location"].rsplit(":", 1)[1].split("-"))
    assert quoted["found"] and quoted["location"].startswith("todo/auth.py:")
    assert start < line <= end
    assert f"{line}: {' ' * 8}{QUOTED}" in quoted["text"]
    assert found[("outline", "todo/storage.py")].data["evidence"]["found"]
    # The model's own step still ran beside them.
    # The app's own lookups of the task's words, marked as such in the plan the page shows.
    plan_text = await database_sync_to_async(
        lambda: Message.objects.get(session=session, turn_key="investigate:plan:1").content
    )()
    assert (
        f"`find_symbol` `todo/auth.py::TokenStore.issue` — the task quotes line {line} "
        "_(the app's own lookup)_" in plan_text
    )


def test_a_name_the_task_lookup_ruled_out_gets_no_lookup_of_its_own():
    task = "Plotting `iris` with `PairGrid` fails."
    assert [s.argument for s in default_steps(task)][1:] == ["iris", "PairGrid"]
    ruled_out = [Named("iris", "name", note="defined only in examples, docs or vendored files")]
    assert [s.argument for s in default_steps(task, (), ruled_out)][1:] == ["PairGrid"]
