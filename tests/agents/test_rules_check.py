"""The rules check pass on its own: one structured call through the one repair path, rule
numbers the prompt never showed dropped, a check that cannot run blocking nothing, and the
approval gate reading the check of the proposal at the checkpoint and the human's override."""

import pytest

from agents import rules, rules_gate
from agents.providers.base import ProviderError
from agents.providers.fake import FakeProvider
from agents.turns import Agent
from conversations.models import Message, PlanningSession, PlanningState
from rag.models import Rule
from tests.rag.test_rules import ready_codebase

pytestmark = pytest.mark.django_db

AGENT = Agent("B", "fake")


@pytest.fixture
def session(user):
    codebase = ready_codebase(user, {"legacy/auth.py": "x = 1\n"})
    Rule.objects.create(codebase=codebase, text="Never touch legacy/", severity="critical")
    Rule.objects.create(codebase=codebase, text="Add a test per change.")
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="t", agent_a_profile="fake",
        agent_b_profile="fake", status=PlanningSession.Status.AWAITING_HUMAN,
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="checkpoint", iteration=1)
    return session


def test_invalid_json_is_repaired_once_and_unknown_rules_are_dropped(session):
    FakeProvider.script(
        "fake",
        '{"violations": [{"rule": 1',  # cut off in its only item: asked again, shorter
        {"violations": [
            {"rule": 1, "explanation": "Edits legacy/auth.py."},
            {"rule": 1, "explanation": "Said twice."},
            {"rule": 7, "explanation": "No rule 7 was shown."},
        ]},
    )  # fmt: skip

    result = rules.check(
        session, AGENT, "proposal", "Edit legacy/auth.py", turn_key="rules:proposal:1"
    )

    calls = FakeProvider.calls("fake")
    assert len(calls) == 2 and "stops before the object ends" in calls[1].prompt
    assert "R1 [critical]: Never touch legacy/\nR2: Add a test per change." in calls[0].prompt
    assert [(v["label"], v["explanation"]) for v in result["violations"]] == [
        ("R1", "Edits legacy/auth.py.")
    ]
    assert result["critical"] == 1
    assert [v["label"] for v in rules_gate.blocking(session.pk)] == ["R1"]


def test_a_check_is_not_run_twice_for_one_turn_key(session):
    FakeProvider.script("fake", {"violations": []})
    rules.check(session, AGENT, "proposal", "x", turn_key="rules:proposal:1")

    again = rules.check(session, AGENT, "proposal", "x", turn_key="rules:proposal:1")

    assert len(FakeProvider.calls("fake")) == 1
    assert again["violations"] == [] and again["checked"] == 2


def test_a_check_that_cannot_run_is_said_and_blocks_nothing(session):
    FakeProvider.script("fake", *[ProviderError("down")] * 8)

    result = rules.check(session, AGENT, "proposal", "x", turn_key="rules:proposal:1")

    assert result["ran"] is False
    assert rules_gate.blocking(session.pk) == []
    shown = Message.objects.get(session=session, node=rules.NODE)
    assert "could not run" in shown.content


def test_an_override_for_this_iteration_lifts_the_block_and_an_old_one_does_not(session):
    FakeProvider.script("fake", {"violations": [{"rule": 1, "explanation": "legacy"}]})
    rules.check(session, AGENT, "proposal", "x", turn_key="rules:proposal:1")
    blocking = rules_gate.blocking(session.pk)
    old = rules_gate.override_record(session.pk, blocking, "old reason")
    old["rules_override"]["iteration"] = 0
    Message.objects.create(session=session, seq=90, role="user", content="old", data=old)
    assert rules_gate.blocking(session.pk)

    now = rules_gate.override_record(session.pk, blocking, "ok this once")
    Message.objects.create(session=session, seq=91, role="user", content="now", data=now)

    assert rules_gate.blocking(session.pk) == []


def test_with_no_enabled_rules_there_is_no_call_and_no_message(session):
    session.codebase.rules.update(enabled=False)

    assert rules.check(session, AGENT, "plan", "x", turn_key="rules:plan:1") is None
    assert FakeProvider.calls("fake") == []
    assert not Message.objects.filter(session=session).exists()
