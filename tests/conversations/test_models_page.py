"""The Models page gives each profile's speed and session time as this machine measured them
(the trace of the calls made here), and says so when nothing was measured: no benchmark's
"about 2 minutes" promise."""

import re

import pytest
from django.urls import reverse

from agents.models import LLMCall
from conversations.models import PlanningSession

pytestmark = pytest.mark.django_db


def row(page: str, name: str) -> str:
    found = re.search(rf'<tr id="profile-{re.escape(name)}">(.*?)</tr>', page, re.S)
    assert found, name
    return found.group(1)


def measured(page: str, name: str) -> str:
    cell = re.search(r'<td class="measured">(.*?)</td>', row(page, name), re.S)
    assert cell, name
    return re.sub(r"<[^>]+>", " ", cell.group(1))


def test_a_profile_never_called_here_says_it_was_not_measured(client, user):
    client.force_login(user)
    page = client.get(reverse("conversations:models")).content.decode()
    for name in ("local-1.5b", "local"):
        assert "Not measured yet: no call was made on it here." in measured(page, name)
    assert "minutes" not in page


def test_the_page_gives_the_speed_and_session_time_this_machine_measured(client, user, codebase):
    def session(status, a="local-1.5b", b="local-1.5b"):
        return PlanningSession.objects.create(
            owner=user, codebase=codebase, title="t", task="t", mode="planning", status=status,
            agent_a_profile=a, agent_b_profile=b,
        )  # fmt: skip

    def calls(of, seconds, count=2, profile="local-1.5b"):
        # 680 new prompt tokens read in 10 s (68/s), then 271 tokens in 10 s more (27/s).
        for _ in range(count):
            LLMCall.objects.create(
                session=of, profile=profile, prompt_tokens=680, completion_tokens=271,
                first_piece_ms=10_000, duration_ms=seconds * 1000 // count,
            )  # fmt: skip

    calls(session("completed"), 20 * 2)  # 40 s of model time
    calls(session("completed"), 20 * 3)  # 60 s
    calls(session("completed"), 20 * 10)  # 200 s
    calls(session("running"), 20 * 50)  # not finished: not a session time
    calls(session("completed", b="local"), 20 * 50)  # shared with another model
    client.force_login(user)
    page = client.get(reverse("conversations:models")).content.decode()

    text = " ".join(measured(page, "local-1.5b").split())
    assert "Reads prompts at ≈68 tokens/s (median of its latest 10 calls)" in text
    assert "took 60 s of model time at the median (3 sessions)" in text
    assert "Not measured yet" in measured(page, "local")  # the 0.5B model has no call here
