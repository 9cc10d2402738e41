"""Links made before links had pins keep showing what they showed: every version, the latest
first, with the rules and the evidence (migration 0008)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("conversations", "0007_plan_comments")]
AFTER = [("conversations", "0008_share_link_pins_and_choices")]


def applied_state():
    """The models as the database holds them now: each app at its last applied migration.
    (Another app's latest migration may depend on a later conversations one, as agents'
    SessionEstimate does, so "the other apps as they are today" would be a state the database
    does not have.)"""
    executor = MigrationExecutor(connection)
    last: dict[str, str] = {}
    for app, name in executor.loader.applied_migrations:
        last[app] = max(last.get(app, ""), name)
    return executor.loader.project_state(list(last.items())).apps


@pytest.mark.django_db(transaction=True)
def test_links_made_before_pins_become_always_latest_with_rules_and_evidence(django_user_model):
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(BEFORE)
        old = applied_state()
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
        new = applied_state()
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
