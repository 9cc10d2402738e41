"""Pinned context of a codebase: notes, snippets and files (or some of their lines) pinned on
the codebase page by its owner, bounded in prompts, a file gone from the codebase unresolved."""

import pytest
from django.test import Client
from django.urls import reverse

from rag import pins
from rag.models import Pin
from tests.rag.test_rules import ready_codebase

pytestmark = pytest.mark.django_db

CODE = "".join(f"line {n}\n" for n in range(1, 51))


def test_the_owner_pins_a_note_a_snippet_and_some_lines_of_a_file(alice_client, alice):
    codebase = ready_codebase(alice, {"app/api.py": CODE})
    url = reverse("rag:pin_add", args=[codebase.pk])

    alice_client.post(url, {"kind": "note", "text": "We use pytest, not unittest."})
    alice_client.post(url, {"kind": "snippet", "text": "def helper(): ...", "path": "x.py"})
    alice_client.post(url, {"kind": "file", "path": "app/api.py", "start_line": 3, "end_line": 4})

    items = pins.pinned_items(codebase)
    assert [(i.label, i.kind, i.title, i.text) for i in items] == [
        ("P1", "note", "note", "We use pytest, not unittest."),
        ("P2", "snippet", "snippet from x.py", "def helper(): ..."),
        ("P3", "file", "app/api.py:3-4", "line 3\nline 4"),
    ]
    page = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()
    assert "We use pytest, not unittest." in page and "app/api.py:3-4" in page


def test_a_file_pin_must_name_a_file_of_the_codebase(alice_client, alice):
    codebase = ready_codebase(alice, {"app/api.py": CODE})

    response = alice_client.post(
        reverse("rag:pin_add", args=[codebase.pk]), {"kind": "file", "path": "nope.py"}, follow=True
    )

    assert not codebase.pins.exists()
    assert "No file &#x27;nope.py&#x27; in this codebase." in response.content.decode()


def test_a_pinned_file_gone_from_the_codebase_is_unresolved(alice):
    codebase = ready_codebase(alice, {"app/api.py": CODE})
    Pin.objects.create(codebase=codebase, kind="file", path="app/old.py")

    [item] = pins.pinned_items(codebase)

    assert not item.found and "unresolved" in item.prompt_block()


def test_a_pinned_file_is_bounded_and_pins_beyond_the_budget_are_left_out(alice):
    codebase = ready_codebase(alice, {"big.py": "x = 1\n" * 50_000})
    for _ in range(6):
        Pin.objects.create(codebase=codebase, kind="file", path="big.py")

    items = pins.pinned_items(codebase)
    section = pins.prompt_section(items)

    assert items[0].truncated and len(items[0].text) == pins.ITEM_CHARS
    assert 1 <= len(items) < 6
    assert len(section) <= pins.PINS_CHARS + 100  # the heading line


def test_the_owner_unpins(alice_client, alice):
    codebase = ready_codebase(alice, {"app/api.py": CODE})
    pin = Pin.objects.create(codebase=codebase, kind="note", text="n")

    alice_client.post(reverse("rag:pin_delete", args=[codebase.pk, pin.pk]))

    assert not codebase.pins.exists()


def test_another_users_codebase_pins_are_404(client, alice, bob):
    codebase = ready_codebase(alice, {"app/api.py": CODE})
    pin = Pin.objects.create(codebase=codebase, kind="note", text="Alice's note")
    client.force_login(bob)

    add = client.post(reverse("rag:pin_add", args=[codebase.pk]), {"kind": "note", "text": "x"})
    delete = client.post(reverse("rag:pin_delete", args=[codebase.pk, pin.pk]))

    assert add.status_code == delete.status_code == 404
    assert list(codebase.pins.values_list("text", flat=True)) == ["Alice's note"]


def test_pin_posts_need_the_csrf_token(alice):
    codebase = ready_codebase(alice, {"app/api.py": CODE})
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post(
        reverse("rag:pin_add", args=[codebase.pk]), {"kind": "note", "text": "x"}
    )

    assert response.status_code == 403
    assert not codebase.pins.exists()
