"""Only the session's owner can override a critical rule, and an override needs a reason."""

import pytest

from agents import rules
from agents.providers.fake import FakeProvider
from agents.turns import Agent
from conversations import services
from conversations.models import Message, PlanningSession, PlanningState
from rag.models import Rule
from tests.rag.test_rules import ready_codebase

pytestmark = pytest.mark.django_db


@pytest.fixture
def blocked(user, monkeypatch):
    monkeypatch.setattr(services, "_dispatch_run", lambda session_id: None)  # no job to run
    codebase = ready_codebase(user, {"legacy/auth.py": "x = 1\n"})
    Rule.objects.create(codebase=codebase, text="Never touch legacy/", severity="critical")
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="t", agent_a_profile="fake",
        agent_b_profile="fake", status=PlanningSession.Status.AWAITING_HUMAN,
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="checkpoint", iteration=1)
    FakeProvider.script("fake", {"violations": [{"rule": 1, "explanation": "legacy"}]})
    rules.check(session, Agent("B", "fake"), "proposal", "x", turn_key="rules:proposal:1")
    return session


def test_another_user_cannot_override_or_approve(blocked, other_user):
    with pytest.raises(services.SessionNotFound):
        services.approve(other_user, blocked.pk, "mine now")

    assert not Message.objects.filter(session=blocked, data__has_key="rules_override").exists()
    assert PlanningState.objects.get(session=blocked).current_node == "checkpoint"


@pytest.mark.parametrize("override", ["", "   ", None, 5])
def test_an_override_without_a_reason_is_refused(blocked, user, override):
    with pytest.raises(services.SessionError, match="breaks critical rule"):
        services.approve(user, blocked.pk, override)

    assert PlanningState.objects.get(session=blocked).current_node == "checkpoint"


def test_the_owner_overrides_with_a_reason_and_the_workflow_moves_on(blocked, user):
    services.approve(user, blocked.pk, "  It is a one-line fix.  ")

    [override] = Message.objects.filter(session=blocked, data__has_key="rules_override")
    assert override.data["rules_override"] == {
        "iteration": 1,
        "reason": "It is a one-line fix.",
        "rules": [{"label": "R1", "text": "Never touch legacy/"}],
    }
    assert PlanningState.objects.get(session=blocked).current_node == "finalize_plan"
