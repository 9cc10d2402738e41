"""Guessing passwords gets a username locked out from that address (django-axes)."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

RIGHT = "correct horse battery"


@pytest.fixture(autouse=True)
def _quick_hasher(settings):
    # Every failure before the lockout checks a password: PBKDF2 would make these tests slow.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def log_in(client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address
    )


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_thirty_wrong_passwords_lock_the_user_out_even_with_the_right_one(client, user):
    for _ in range(30):
        log_in(client, "alice", "wrong guess")

    response = log_in(client, "alice", RIGHT)

    assert response.status_code == 429
    assert not logged_in(client)


def test_the_lockout_is_a_page_that_says_what_happened(client, user, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in(client, "alice", "wrong guess")

    response = log_in(client, "alice", "wrong guess")

    assert response.status_code == 429
    assert "registration/locked_out.html" in [t.name for t in response.templates]
    page = response.content.decode()
    assert "Too many failed logins" in page
    assert "Try again in 15 minutes" in page


def test_fewer_failures_than_the_limit_do_not_lock(client, user, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in(client, "alice", "wrong guess")

    response = log_in(client, "alice", RIGHT)

    assert response.status_code == 302
    assert logged_in(client)


def test_another_user_from_the_same_address_can_still_log_in(client, user, other_user):
    for _ in range(30):
        log_in(client, "alice", "wrong guess")

    response = log_in(client, "mallory", RIGHT)

    assert response.status_code == 302
    assert logged_in(client)


def test_the_same_user_from_another_address_can_still_log_in(client, user):
    # Guessing from one address must not let an attacker lock the real user out everywhere.
    for _ in range(30):
        log_in(client, "alice", "wrong guess", address="203.0.113.7")

    response = log_in(client, "alice", RIGHT, address="198.51.100.20")

    assert response.status_code == 302
    assert logged_in(client)
