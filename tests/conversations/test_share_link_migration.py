"""Links made before links had pins keep showing what they showed: every version, the latest
first, with the rules and the evidence (migration 0008)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("conversations", "0007_plan_comments")]
AFTER = [("conversations", "0008_share_link_pins_and_choices")]


@pytest.mark.django_db(transaction=True)
def test_links_made_before_pins_become_always_latest_with_rules_and_evidence(django_user_model):
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    # The other apps stay where they are: their models as they are today.
    others = [node for node in latest if node[0] != "conversations"]
    try:
        executor.migrate(BEFORE)
        old = executor.loader.project_state(others + BEFORE).apps
        owner = old.get_model("auth", "User").objects.create(username="ann")
        codebase = old.get_model("rag", "Codebase").objects.create(owner=owner, name="api")
        session = old.get_model("conversations", "PlanningSession").objects.create(
            owner=owner, codebase=codebase, title="t", task="t"
        )
        old.get_model("conversations", "Plan").objects.create(
            session=session, version=1, markdown="# v1"
        )
        old.get_model("conversations", "ShareLink").objects.create(
            session=session, token_hash="a" * 64
        )

        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(others + AFTER).apps
        link = new.get_model("conversations", "ShareLink").objects.get()
        assert link.pinned_plan_id is None
        assert link.shows_rules and link.shows_evidence
        # A link made after the migration gets the new defaults from the model, not these.
        fresh = new.get_model("conversations", "ShareLink").objects.create(
            session_id=session.pk, token_hash="b" * 64
        )
        assert not fresh.shows_rules and not fresh.shows_evidence
    finally:
        MigrationExecutor(connection).migrate(latest)
