"""The codebase page's rules: listed (detected ones included), added, edited, disabled and
deleted by the owner only, every POST behind CSRF."""

import pytest
from django.test import Client
from django.urls import reverse

from rag.models import Rule
from tests.rag.test_rules import ready_codebase

pytestmark = pytest.mark.django_db


def test_the_page_lists_detected_rules_and_unresolved_references(alice_client, alice):
    codebase = ready_codebase(alice, {"AGENTS.md": "- Run `make test` before committing.\n"})
    Rule.objects.create(codebase=codebase, text="Follow @file:docs/missing.md", severity="critical")

    page = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()

    assert "Run `make test` before committing." in page
    assert "from <a" in page and "<code>AGENTS.md</code>" in page
    assert (
        '<code>@file:docs/missing.md</code> <span class="badge missing">unresolved</span>' in page
    )


def test_the_owner_adds_a_critical_rule(alice_client, alice):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})

    response = alice_client.post(
        reverse("rag:rule_add", args=[codebase.pk]),
        {"text": "  Never touch legacy/  ", "severity": "critical"},
    )

    assert response.status_code == 302
    rule = codebase.rules.get()
    assert (rule.text, rule.severity, rule.source) == ("Never touch legacy/", "critical", "")


def test_a_blank_rule_is_refused_with_a_message(alice_client, alice):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})

    response = alice_client.post(
        reverse("rag:rule_add", args=[codebase.pk]),
        {"text": "  ", "severity": "normal"},
        follow=True,
    )

    assert not codebase.rules.exists()
    assert "The rule was not added" in response.content.decode()


def test_the_owner_edits_and_disables_a_detected_rule(alice_client, alice):
    codebase = ready_codebase(alice, {"CLAUDE.md": "- Use tabs.\n"})
    alice_client.get(reverse("rag:detail", args=[codebase.pk]))  # detection on first look
    rule = codebase.rules.get()

    alice_client.post(
        reverse("rag:rule_edit", args=[codebase.pk, rule.pk]),
        {"text": "Use four spaces.", "severity": "critical"},  # "enabled" unticked
    )

    rule.refresh_from_db()
    assert (rule.text, rule.severity, rule.enabled) == ("Use four spaces.", "critical", False)


def test_deleting_a_detected_rule_disables_it_and_a_written_one_goes(alice_client, alice):
    codebase = ready_codebase(alice, {"CLAUDE.md": "- Use tabs.\n"})
    alice_client.get(reverse("rag:detail", args=[codebase.pk]))
    detected = codebase.rules.get()
    written = Rule.objects.create(codebase=codebase, text="Mine")

    alice_client.post(reverse("rag:rule_delete", args=[codebase.pk, detected.pk]))
    alice_client.post(reverse("rag:rule_delete", args=[codebase.pk, written.pk]))
    alice_client.get(reverse("rag:detail", args=[codebase.pk]))  # not detected again

    assert list(codebase.rules.values_list("text", "enabled")) == [("Use tabs.", False)]


def test_another_users_codebase_rules_are_404(client, alice, bob):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})
    rule = Rule.objects.create(codebase=codebase, text="Alice's rule")
    client.force_login(bob)

    posts = [
        (reverse("rag:rule_add", args=[codebase.pk]), {"text": "x", "severity": "normal"}),
        (
            reverse("rag:rule_edit", args=[codebase.pk, rule.pk]),
            {"text": "x", "severity": "normal"},
        ),
        (reverse("rag:rule_delete", args=[codebase.pk, rule.pk]), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 404
    rule.refresh_from_db()
    assert rule.text == "Alice's rule" and codebase.rules.count() == 1


def test_a_rule_of_another_codebase_is_404_even_through_your_own(alice_client, alice, bob):
    mine = ready_codebase(alice, {"app.py": "x = 1\n"})
    theirs = ready_codebase(bob, {"app.py": "x = 1\n"}, name="bob's")
    rule = Rule.objects.create(codebase=theirs, text="Bob's rule")

    url = reverse("rag:rule_edit", args=[mine.pk, rule.pk])
    assert alice_client.post(url, {"text": "x", "severity": "normal"}).status_code == 404
    assert alice_client.post(reverse("rag:rule_delete", args=[mine.pk, rule.pk])).status_code == 404
    assert Rule.objects.filter(pk=rule.pk, text="Bob's rule").exists()


def test_rule_posts_need_the_csrf_token(alice):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post(
        reverse("rag:rule_add", args=[codebase.pk]), {"text": "x", "severity": "normal"}
    )

    assert response.status_code == 403
    assert not codebase.rules.exists()


def test_rule_pages_need_a_login(client, alice):
    codebase = ready_codebase(alice, {"app.py": "x = 1\n"})

    response = client.post(
        reverse("rag:rule_add", args=[codebase.pk]), {"text": "x", "severity": "normal"}
    )

    assert response.status_code == 302 and "login" in response["Location"]
    assert not codebase.rules.exists()
