"""A review that ran out of tokens mid-sentence loses only its unfinished sentence before its
objections are read: on seaborn-3010 the 1.5B model's review stopped at "A new test file
`tests/test_regression.py` is", and the plan's Decisions kept that fragment as an objection."""

from __future__ import annotations

import pytest

from agents.planning import nodes
from agents.providers.fake import FakeProvider
from tests.conversations.test_prompt_parts import investigated, proposal, session  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

FINISHED = "- The proposal never says where the issue time of a token is stored."
CUT = "- A new test file `tests/test_auth.py` is"


def test_a_review_cut_at_its_token_limit_is_read_without_its_unfinished_item(
    session,  # noqa: F811
    monkeypatch,
):
    words = len(f"{FINISHED}\n{CUT}".split())
    monkeypatch.setattr(nodes, "REVIEW_TOKENS", words)  # the scripted reply fills the limit
    ctx = investigated(session, proposal=proposal(), iteration=1)
    FakeProvider.script("fake", f"{FINISHED}\n{CUT}")
    result = nodes.review_and_refine(ctx)
    assert result.changes["review"] == FINISHED


def test_a_review_that_ended_on_its_own_is_read_whole(session, monkeypatch):  # noqa: F811
    monkeypatch.setattr(nodes, "REVIEW_TOKENS", 320)
    ctx = investigated(session, proposal=proposal(), iteration=1)
    FakeProvider.script("fake", f"{FINISHED}\n{CUT}")
    assert nodes.review_and_refine(ctx).changes["review"] == f"{FINISHED}\n{CUT}"
