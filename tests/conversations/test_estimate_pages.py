"""The estimate on the pages: the new-session form shows the expected calls, tokens, time and
money for each mode and model from this machine's finished sessions (or says there is no
history), starting a session keeps the estimate, its page sets it against the actuals once it
has ended, and the admin lists how far off each estimate was with the median error above."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import LLMCall, SessionEstimate
from conversations import services
from conversations.models import PlanningSession
from rag.models import Codebase

pytestmark = pytest.mark.django_db


@pytest.fixture
def ready(user):
    return Codebase.objects.create(owner=user, name="sample", status=Codebase.Status.READY)


def finished(user, codebase, seconds, *, mode="planning", profile="fake", status="completed"):
    """A session that made one analyze call and two propose calls, `seconds` long in all."""
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="t", task="t", mode=mode, status=status,
        agent_a_profile=profile, agent_b_profile=profile,
    )  # fmt: skip
    ms = int(seconds * 1000)
    for purpose, part in (("analyze:0", 0.5), ("propose:1", 0.25), ("propose:2", 0.25)):
        LLMCall.objects.create(
            session=session, purpose=purpose, profile=profile, model="scripted",
            prompt_tokens=1000, completion_tokens=100, duration_ms=int(ms * part),
        )  # fmt: skip
    return session


def test_the_form_says_there_is_no_history_yet(client, user, ready):
    client.force_login(user)
    page = client.get(reverse("conversations:new")).content.decode()
    assert "Estimate before you start" in page
    assert (
        "No finished planning session on this machine yet: the first run will measure it." in page
    )


def test_the_form_shows_the_estimate_for_the_chosen_mode_and_models(client, user, ready):
    for seconds in (20, 40, 60):
        finished(user, ready, seconds)
    finished(user, ready, 999, status="stopped")  # a stopped session teaches nothing
    client.force_login(user)
    page = client.get(reverse("conversations:new")).content.decode()
    about = page.split('id="estimate-for">', 1)[1].split("</p>", 1)[0]
    assert "For planning mode, A on fake, B on fake (as chosen when the page loaded)." in about
    chosen = page.split('id="estimate-chosen">', 1)[1].split("</p>", 1)[0]
    assert "3 LLM calls · 3,300 tokens · 40 s (30 s–50 s) on this machine" in chosen
    assert "fake: $0 (runs here)" in chosen
    assert "the 3 finished planning sessions on these models on this machine" in page
    # Every mode and model is in the table, each row with the sentences the page's script
    # shows when that row is chosen; debate has no history here.
    debate = page.split('<tr data-mode="debate" data-a="fake" data-b="fake"', 1)[1]
    debate = debate.split("</tr>")[0]
    assert 'data-for="For debate mode, A on fake, B on fake.' in debate
    assert 'data-summary="No finished debate session on this machine yet' in debate
    assert "no history: the first run will measure it" in debate


def test_starting_a_session_keeps_its_estimate(client, user, ready, monkeypatch):
    monkeypatch.setattr(services, "_dispatch_run", lambda session_id: None)
    for seconds in (20, 40, 60):
        finished(user, ready, seconds)
    client.force_login(user)
    response = client.post(
        reverse("conversations:new"),
        {"task": "Add rate limiting", "codebase": ready.pk, "mode": "planning",
         "agent_a_profile": "fake", "agent_b_profile": "fake", "max_exchanges": 2},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    session = PlanningSession.objects.order_by("-pk").first()
    stored = SessionEstimate.objects.get(session=session)
    assert (stored.history, stored.basis, stored.calls, stored.tokens) == (3, "history", 3, 3300)
    assert (stored.seconds, stored.seconds_low, stored.seconds_high) == (40.0, 30.0, 50.0)
    assert stored.cost_usd == 0.0


def estimated(session, seconds=40.0, tokens=3300.0, basis="history"):
    return SessionEstimate.objects.create(
        session=session, mode=session.mode, agent_a_profile="fake", agent_b_profile="fake",
        history=3, basis=basis, calls=3, tokens=tokens, tokens_low=3000, tokens_high=3600,
        seconds=seconds, seconds_low=30, seconds_high=50, cost_usd=0.0,
        detail={"note": "", "steps": [], "cost": {"fake": 0.0}},
    )  # fmt: skip


def test_the_finished_session_shows_estimate_against_actual(client, user, ready):
    session = finished(user, ready, 50)  # 3 calls, 3,300 tokens, 50 s
    estimated(session, seconds=40.0, tokens=2200.0)
    client.force_login(user)
    page = client.get(reverse("conversations:detail", args=[session.pk])).content.decode()
    card = page.split('id="estimate-versus"', 1)[1].split("</div>", 1)[0]
    assert "Estimate vs actual" in card

    def row(what):
        cells = card.split(f'<th scope="row">{what}</th>', 1)[1].split("</tr>", 1)[0]
        return " ".join(cells.split())

    assert row("LLM calls") == "<td>3</td> <td>3</td> <td>0 %</td>"
    assert (
        row("Tokens") == "<td>2,200 <small>(3,000–3,600)</small></td> <td>3,300</td> <td>33 %</td>"
    )
    assert row("Model time (s)") == "<td>40 <small>(30–50)</small></td> <td>50</td> <td>20 %</td>"
    assert row("Money (USD)") == "<td>0</td> <td>0</td> <td>—</td>"
    assert "from 3 finished planning sessions on these models" in card


def test_a_running_session_shows_its_estimate_without_actuals_yet(client, user, ready):
    session = finished(user, ready, 10, status="running")
    estimated(session)
    client.force_login(user)
    page = client.get(reverse("conversations:detail", args=[session.pk])).content.decode()
    card = page.split('id="estimate-versus"', 1)[1].split("</div>", 1)[0]
    assert "<h2>Estimate</h2>" in card
    assert "Actual" not in card and "Off by" not in card


def test_a_session_started_without_history_says_so(client, user, ready):
    session = finished(user, ready, 50)
    SessionEstimate.objects.create(
        session=session, mode="planning", agent_a_profile="fake", agent_b_profile="fake",
        detail={"note": "No finished planning session on this machine yet: the first run will measure it."},
    )  # fmt: skip
    client.force_login(user)
    page = client.get(reverse("conversations:detail", args=[session.pk])).content.decode()
    assert "No estimate at the start: No finished planning session" in page


@pytest.fixture
def staff(client, django_user_model):
    admin_user = django_user_model.objects.create_superuser("staff", password="pw-long-enough-1")
    client.force_login(admin_user)
    return admin_user


def test_the_admin_lists_each_error_and_the_median(client, staff, user, ready):
    # Actual: 50 s and 3,300 tokens each. Errors: time 20 %, 40 %, 60 %; tokens 0 %, 10 %, 30 %.
    for seconds, tokens in ((40, 3300), (30, 3630), (20, 4290)):
        estimated(finished(user, ready, 50), seconds=seconds, tokens=tokens)
    estimated(finished(user, ready, 50, status="running"), seconds=5, tokens=5)  # not over
    page = client.get(reverse("admin:agents_sessionestimate_changelist")).content.decode()
    assert (
        "Median absolute percentage error of completed sessions: "
        "time 40 % over 3 sessions; tokens 10 % over 3 sessions."
    ) in page
    assert '<td class="field-time_off">60 %</td>' in page
    assert '<td class="field-tokens_off">30 %</td>' in page


def test_the_admin_says_when_there_is_nothing_to_check(client, staff):
    page = client.get(reverse("admin:agents_sessionestimate_changelist")).content.decode()
    assert "time no estimate to check yet; tokens no estimate to check yet." in page
