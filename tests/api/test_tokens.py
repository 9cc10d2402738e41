"""API tokens: made and revoked on the account page, shown once, kept only as a hash."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from api import services
from api.models import ApiToken
from tests.api.world import TokenClient

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def every_stored_value() -> str:
    """Every value of every row in the api table, as text."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
        return " ".join(str(v) for row in cursor.fetchall() for v in row)


def test_the_account_page_shows_a_new_token_once_and_keeps_only_its_hash(user):
    client = logged_in(user)

    response = client.post("/account/tokens/", {"name": "laptop CLI", "scope": "write"})

    assert response.status_code == 200
    secret = response.context["made"].secret
    assert secret.startswith("pa_") and secret in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get(owner=user)
    assert (token.name, token.scope) == ("laptop CLI", "write")
    assert secret not in every_stored_value()
    assert token.digest == services.digest(secret) and secret.startswith(token.prefix)
    again = client.get("/account/tokens/").content.decode()
    assert secret not in again and token.prefix in again


def test_a_token_made_on_the_page_authenticates_the_api(user):
    client = logged_in(user)
    secret = client.post("/account/tokens/", {"name": "CI", "scope": "read"}).context["made"].secret

    assert TokenClient(secret).get("/api/v1/codebases").status_code == 200


def test_a_token_needs_a_name_and_a_known_scope(user):
    client = logged_in(user)

    assert client.post("/account/tokens/", {"name": "  ", "scope": "read"}).status_code == 400
    assert client.post("/account/tokens/", {"name": "x", "scope": "admin"}).status_code == 400
    assert not ApiToken.objects.exists()
    with pytest.raises(services.TokenError, match="scope"):
        services.create_token(user, "x", "admin")


def test_revoking_on_the_page_stops_the_token_at_once(user):
    made = services.create_token(user, "CI", "write")
    api = TokenClient(made.secret)
    assert api.get("/api/v1/sessions").status_code == 200

    response = logged_in(user).post(f"/account/tokens/{made.token.pk}/revoke/")

    assert response.status_code == 302
    assert api.get("/api/v1/sessions").status_code == 401
    made.token.refresh_from_db()
    assert made.token.revoked_at is not None
    assert "revoked" in logged_in(user).get("/account/tokens/").content.decode()


def test_nobody_revokes_another_users_token(user, other_user):
    made = services.create_token(user, "CI", "write")

    response = logged_in(other_user).post(f"/account/tokens/{made.token.pk}/revoke/")

    assert response.status_code == 404
    assert TokenClient(made.secret).get("/api/v1/plans").status_code == 200


def test_the_page_lists_only_the_users_own_tokens(user, other_user):
    services.create_token(other_user, "their-secret-machine", "read")
    services.create_token(user, "my-machine", "read")

    page = logged_in(user).get("/account/tokens/").content.decode()

    assert "my-machine" in page and "their-secret-machine" not in page


def test_a_deactivated_users_token_authenticates_nothing(user):
    made = services.create_token(user, "CI", "read")
    user.is_active = False
    user.save()

    assert services.authenticate(made.secret) is None
    assert TokenClient(made.secret).get("/api/v1/codebases").status_code == 401


def test_last_use_is_written_at_most_once_a_minute(user):
    made = services.create_token(user, "CI", "read")
    assert made.token.last_used_at is None

    first = services.authenticate(made.secret)
    assert first is not None and first.last_used_at is not None
    second = services.authenticate(made.secret)
    assert second is not None and second.last_used_at == first.last_used_at

    ApiToken.objects.filter(pk=made.token.pk).update(
        last_used_at=timezone.now() - timedelta(minutes=2)
    )
    third = services.authenticate(made.secret)
    assert third is not None and third.last_used_at > first.last_used_at


def test_a_user_holds_a_bounded_number_of_live_tokens(user, monkeypatch):
    monkeypatch.setattr(services, "MAX_TOKENS", 2)
    services.create_token(user, "a", "read")
    second = services.create_token(user, "b", "read")
    with pytest.raises(services.TokenError, match="revoke one"):
        services.create_token(user, "c", "read")

    services.revoke_token(user, second.token.pk)
    services.create_token(user, "c", "read")


def test_the_token_pages_need_a_login():
    response = Client().get("/account/tokens/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_token_sent_under_another_scheme_is_refused_and_never_logged(user, settings, caplog):
    settings.DEBUG = True
    made = services.create_token(user, "CI", "read")

    response = TokenClient(None, HTTP_AUTHORIZATION=f"Token {made.secret}").get("/api/v1/plans")

    assert response.status_code == 401
    assert made.secret not in caplog.text
