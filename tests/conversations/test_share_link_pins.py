"""What a share link shows is chosen when it is made: by default the latest version, pinned, with
the codebase's rules and the investigation's evidence left out (and the page saying so); "always
latest", rules and evidence are the owner's choices. A pinned link never reveals a newer
version, on its page or at any URL the token reaches."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from agents import plan_rules
from conversations import sharing
from conversations.models import Message, Plan, PlanningSession, ShareLink
from rag.models import Codebase

pytestmark = pytest.mark.django_db

RULE = "Never log a password hash, even at debug level"
PIN_NOTE = "The billing team owns src/pay.py"
EXCERPT = "def charge_card(amount): # excerpt from src/pay.py"
NEWER = "Move the limiter to the zebra gateway"
NEWER_EXCERPT = "class ZebraGateway: # found while revising"


def _plan_markdown(title: str) -> str:
    rules = plan_rules.markdown(
        {
            "rules_check": {
                "ran": True,
                "checked": 2,
                "violations": [{"label": "R1", "text": RULE, "explanation": "step 1 logs it"}],
            },
            "pins_used": [{"number": 1, "kind": "note", "text": PIN_NOTE}],
        }
    )
    return (
        f"# {title}\n\n## Summary\n\nLimit requests per user [E1].\n\n## Steps\n\n"
        "1. Document the limit in the README\n\n```markdown\n## Rules\n\n"
        "Five requests a second per user.\n```\n\n"
        f"{rules}\n\n## Testing\n\n- A sixth request is refused.\n"
    )


def _add_plan(session: PlanningSession, version: int, markdown: str) -> Plan:
    return Plan.objects.create(session=session, version=version, markdown=markdown)


def _add_evidence(session: PlanningSession, seq: int, text: str, before: Plan | None) -> None:
    message = Message.objects.create(
        session=session, seq=seq, role=Message.Role.SYSTEM, node="investigate",
        turn_key=f"investigate:{seq}", content=text,
    )  # fmt: skip
    if before is not None:
        # Found by the investigation that led to `before`.
        Message.objects.filter(pk=message.pk).update(
            created_at=before.created_at - timedelta(seconds=1)
        )


@pytest.fixture
def session(user):
    codebase = Codebase.objects.create(owner=user, name="api")
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    _add_plan(session, 1, "# Plan one\n\n## Summary\n\nFirst try.\n")
    v2 = _add_plan(session, 2, _plan_markdown("Plan two"))
    Plan.objects.filter(pk=v2.pk).update(note="Edited the Summary")
    _add_evidence(session, 1, f"**E1** search → `src/pay.py:1`\n\n    {EXCERPT}", before=v2)
    return session


@pytest.fixture
def owner_client(client, user):
    client.force_login(user)
    return client


def _create(client: Client, session: PlanningSession, **choices: str):
    url = reverse("conversations:plan_share", args=[session.pk])
    return client.post(url, {"expiry": "never", **choices})


def _token(response) -> str:
    match = re.search(r"/sessions/s/([A-Za-z0-9_-]+)/", response.content.decode())
    assert match, "the new link is shown to the owner"
    return match.group(1)


def _shared(token: str) -> str:
    return reverse("conversations:plan_shared", kwargs={"token": token})


def _revise(session: PlanningSession) -> Plan:
    """A version 3 written after the link was made, with evidence of its own."""
    v3 = _add_plan(session, 3, f"# Plan three\n\n## Summary\n\n{NEWER}.\n")
    _add_evidence(session, 2, f"**E2** find_symbol → {NEWER_EXCERPT}", before=None)
    return v3


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


class _Urls(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [v or "" for k, v in attrs if k in ("href", "src", "action")]


def test_a_new_link_pins_the_latest_version_and_says_so(owner_client, session):
    token = _token(_create(owner_client, session))
    link = ShareLink.objects.get()
    assert link.pinned_plan == session.plans.get(version=2)
    page = _text(Client().get(_shared(token)).content.decode())
    assert "Version 2 of this plan, pinned when the link was made." in page
    assert "No newer version exists." in page
    assert "Plan two" in page
    assert "v2: " in page and "· Agents — Edited the Summary" in page  # what made it


def test_a_pinned_link_says_newer_versions_exist_and_never_shows_them(owner_client, session):
    token = _token(_create(owner_client, session, shows_rules="1", shows_evidence="1"))
    _revise(session)
    _add_plan(session, 4, f"# Plan four\n\n{NEWER}, again.\n")
    anonymous = Client()
    response = anonymous.get(_shared(token))
    page = response.content.decode()
    assert "Plan two" in page
    assert "2 newer versions exist, which this link does not show." in _text(page)
    assert NEWER not in page and NEWER_EXCERPT not in page and "Plan three" not in page
    # Every URL the page offers, and every version number, asked for with this token.
    parser = _Urls()
    parser.feed(page)
    reachable = [u for u in parser.urls if not u.startswith("/static/")]
    asked = reachable + [f"?version={n}" for n in range(0, 6)] + ["?version=", "?version=x"]
    for url in asked:
        target = _shared(token) + url if url.startswith("?") else url
        for method in (anonymous.get, anonymous.head):
            other = method(target)
            assert NEWER not in other.content.decode(), url
            assert NEWER_EXCERPT not in other.content.decode(), url
    assert anonymous.get(_shared(token), {"version": "3"}).status_code == 404
    # Pinned means that version alone, not "up to it".
    assert anonymous.get(_shared(token), {"version": "1"}).status_code == 404
    assert anonymous.get(_shared(token), {"version": "2"}).status_code == 200


def test_a_pinned_link_shows_only_the_evidence_found_before_its_version(owner_client, session):
    token = _token(_create(owner_client, session, shows_evidence="1"))
    _revise(session)
    page = Client().get(_shared(token)).content.decode()
    assert "E1" in page and "charge_card" in page
    assert "E2" not in page and "ZebraGateway" not in page


def test_always_latest_is_a_choice_and_follows_new_versions(owner_client, session):
    token = _token(_create(owner_client, session, pin="latest", shows_evidence="1"))
    assert ShareLink.objects.get().pinned_plan is None
    _revise(session)
    page = Client().get(_shared(token)).content.decode()
    assert NEWER in page and "ZebraGateway" in page
    text = _text(page)
    assert "The latest version of this plan (version 3)." in text
    assert "pinned" not in text
    older = _text(Client().get(_shared(token), {"version": "1"}).content.decode())
    assert "Version 1 of this plan; the latest is version 3." in older


def test_rules_and_evidence_are_left_out_by_default_and_the_page_says_so(owner_client, session):
    token = _token(_create(owner_client, session))
    link = ShareLink.objects.get()
    assert not link.shows_rules and not link.shows_evidence
    page = Client().get(_shared(token)).content.decode()
    assert RULE not in page and PIN_NOTE not in page and "Rules check" not in page
    assert "charge_card" not in page and "Evidence" not in page
    text = _text(page)
    assert "The owner did not share the codebase's rules" in text
    assert "The owner did not share the code excerpts the investigation found" in text
    # What was around the left-out sections is all there, a README's heading in a step's code
    # too: it is code, not one of the plan's sections.
    assert "Limit requests per user" in text and "A sixth request is refused." in text
    assert "## Rules Five requests a second per user." in text


def test_the_owner_chooses_to_share_rules_and_evidence(owner_client, session):
    token = _token(_create(owner_client, session, shows_rules="1", shows_evidence="1"))
    page = Client().get(_shared(token)).content.decode()
    assert RULE in page and PIN_NOTE in page and "charge_card" in page
    assert "did not share" not in page


@pytest.mark.parametrize(
    ("choice", "shown", "hidden"),
    [("shows_rules", RULE, "charge_card"), ("shows_evidence", "charge_card", RULE)],
)
def test_rules_and_evidence_are_chosen_apart(owner_client, session, choice, shown, hidden):
    token = _token(_create(owner_client, session, **{choice: "1"}))
    page = Client().get(_shared(token)).content.decode()
    assert shown in page and hidden not in page
    assert _text(page).count("The owner did not share") == 1


def test_the_owner_is_told_what_a_new_link_shows(owner_client, session):
    pinned = _text(_create(owner_client, session).content.decode())
    assert "version 2 of the plan (not the versions written after it)" in pinned
    assert "without the codebase's rules and without the investigation's code excerpts" in pinned
    latest = _text(_create(owner_client, session, pin="latest", shows_rules="1").content.decode())
    assert "the latest version of the plan and every earlier one" in latest
    assert "with the codebase's rules and without the investigation's code excerpts" in latest


def test_the_owners_list_shows_each_links_pin_and_choices(owner_client, session):
    _create(owner_client, session)
    _create(owner_client, session, pin="latest", shows_rules="1", shows_evidence="1")
    _create(owner_client, session, may_comment="1")
    page = owner_client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    rows = [_text(r) for r in re.findall(r"<tr>(.*?)</tr>", page.split("share-links")[1], re.S)]
    cells = [r.split(" Revoke")[0] for r in rows[1:]]  # the header row first
    # Newest first: created time, shows, rules, evidence, comments, expires.
    assert [c.split(" ", 2)[2] for c in cells] == [
        "v2 only left out left out open never",
        "always the latest shown shown read-only never",
        "v2 only left out left out read-only never",
    ]


def test_the_form_offers_every_pin_and_pins_by_default(owner_client, session):
    page = owner_client.get(reverse("conversations:plan", args=[session.pk])).content.decode()
    form = page.split("plan-share")[1]
    offered = re.findall(r'<input type="radio" name="pin" value="([^"]+)"( checked)?', form)
    assert sorted(v for v, _ in offered) == sorted(sharing.PIN_CHOICES)
    assert [v for v, checked in offered if checked] == ["version"]
    assert 'name="shows_rules" value="1">' in form and 'name="shows_evidence" value="1">' in form


def test_an_unknown_pin_is_refused(owner_client, session):
    response = _create(owner_client, session, pin="everything")
    assert response.status_code == 302
    assert not ShareLink.objects.exists()


def test_deleting_the_pinned_version_closes_the_link_instead_of_showing_another(
    owner_client, session
):
    token = _token(_create(owner_client, session))
    session.plans.get(version=2).delete()
    assert Client().get(_shared(token)).status_code == 404
