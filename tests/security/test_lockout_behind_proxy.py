"""Behind a reverse proxy, a lockout holds one client's guesses, not everyone the proxy serves."""

import pytest
from django.test import Client
from django.urls import reverse

from planagents.client_ip import client_ip

pytestmark = pytest.mark.django_db

RIGHT = "correct horse battery"
PROXY = "10.0.0.2"


@pytest.fixture(autouse=True)
def _behind_a_proxy(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.PLANAGENTS_TRUSTED_PROXIES = [f"{PROXY}/32"]


def log_in(client: Client, password: str, *, remote: str, forwarded: str | None = None):
    headers = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    return client.post(reverse("login"), {"username": "alice", "password": password}, **headers)


def test_a_client_behind_the_proxy_is_locked_out_and_another_behind_it_is_not(user, settings):
    guesser, owner = Client(), Client()
    for _ in range(settings.AXES_FAILURE_LIMIT + 2):
        log_in(guesser, "wrong guess", remote=PROXY, forwarded="203.0.113.7")

    assert log_in(guesser, RIGHT, remote=PROXY, forwarded="203.0.113.7").status_code == 429
    response = log_in(owner, RIGHT, remote=PROXY, forwarded="198.51.100.20")
    assert response.status_code == 302


def test_a_forged_forwarded_for_from_an_address_that_is_no_proxy_is_ignored(user, settings):
    # The guesser writes a new X-Forwarded-For on every try; it comes from no proxy, so
    # every try counts against its real address.
    guesser = Client()
    for n in range(settings.AXES_FAILURE_LIMIT + 2):
        log_in(guesser, "wrong guess", remote="203.0.113.7", forwarded=f"192.0.2.{n}")

    response = log_in(guesser, RIGHT, remote="203.0.113.7", forwarded="192.0.2.200")
    assert response.status_code == 429


def test_a_client_cannot_pick_its_address_by_writing_one_before_the_proxys(user, settings):
    # The proxy appends the address it saw; whatever the client wrote stands before it.
    guesser = Client()
    for n in range(settings.AXES_FAILURE_LIMIT + 2):
        log_in(guesser, "wrong guess", remote=PROXY, forwarded=f"192.0.2.{n}, 203.0.113.7")

    response = log_in(guesser, RIGHT, remote=PROXY, forwarded="192.0.2.200, 203.0.113.7")
    assert response.status_code == 429


def test_it_reads_past_a_chain_of_trusted_proxies(rf, settings):
    settings.PLANAGENTS_TRUSTED_PROXIES = [f"{PROXY}/32", "10.1.0.0/16"]
    request = rf.get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.7, 10.1.4.4")
    assert client_ip(request) == "203.0.113.7"


def test_a_hop_that_is_no_address_stops_the_reading_at_the_last_proxy(rf):
    request = rf.get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.7, not-an-ip")
    assert client_ip(request) == PROXY
