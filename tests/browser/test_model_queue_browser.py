"""Issue 20 in a real browser: a session whose model call waits behind another session's says
so while it waits, with how many calls are ahead and about how long, and goes on by itself
when the line frees. The other session's call is a ticket in the server's database, as another
process would hold it; the scripted model queues as the local model does."""

from __future__ import annotations

import re

import pytest

from tests.browser.live import WAIT, django_shell, needs_chromium, serve, start_planning

pytestmark = needs_chromium()

HOLD_THE_LINE = (
    "from agents.models import ModelTicket; from django.utils import timezone; "
    "now = timezone.now(); "
    "ModelTicket.objects.create(purpose='another session', admitted_at=now, seen_at=now, "
    "estimate_s=80)"
)
FREE_THE_LINE = (
    "from agents.models import ModelTicket; "
    "ModelTicket.objects.filter(purpose='another session').delete()"
)


@pytest.fixture
def server(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("PLANAGENTS_FAKE_QUEUED", "1")
    monkeypatch.setenv("PLANAGENTS_LLM_QUEUE_WIDTH", "1")
    monkeypatch.setenv("PLANAGENTS_LLM_QUEUE_STALE", "600")  # the other call stays alive
    with serve(tmp_path_factory.mktemp("queue-data")) as running:
        yield running


def test_a_session_waiting_for_the_model_says_where_it_stands_then_goes_on(server, browser):
    from playwright.sync_api import expect

    django_shell(server, HOLD_THE_LINE)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(WAIT)
    start_planning(page, server, "Add rate limiting to login")

    label = page.locator("#running-label")
    expect(label).to_contain_text(
        "in line for the model: 1 call ahead of this one (1 generating)", timeout=WAIT
    )
    expect(label).to_contain_text(re.compile(r"about \d+ s more at this machine's current speed"))
    # The clock of the wait runs: the page never looks frozen.
    expect(label).to_contain_text(re.compile(r"waited 0:0[2-9]"))
    page.screenshot(path=str(server.folder / "queued.png"))

    django_shell(server, FREE_THE_LINE)
    expect(page.locator("#checkpoint button[data-action=approve]")).to_be_visible(timeout=WAIT)
    assert "in line for the model" not in label.inner_text()
