"""Downloading the spec-layout exports from the plan page: the owner gets each as markdown or
a zip, another user gets 404, a visitor is sent to log in; the card offers each."""

import io
import zipfile

import pytest
from django.urls import reverse

from conversations import export_formats
from conversations.spec_exports import LAYOUTS
from tests.conversations.spec_plan import make_plan

pytestmark = pytest.mark.django_db

KINDS = ["speckit", "kiro", "agents"]


@pytest.fixture
def plan(user, codebase):
    return make_plan(user, codebase)


def _url(plan, kind):
    return reverse("conversations:plan_export", args=[plan.session_id, kind])


@pytest.mark.parametrize("kind", KINDS)
def test_the_owner_downloads_the_layout_as_a_zip(client, user, plan, kind):
    client.force_login(user)
    response = client.get(_url(plan, kind), {"zip": "1", "version": "1"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="plan-7-v1-{kind}.zip"'
    with zipfile.ZipFile(io.BytesIO(response.content)) as unzipped:
        got = {name: unzipped.read(name).decode() for name in unzipped.namelist()}
    assert got == dict(LAYOUTS[kind].files(plan))


@pytest.mark.parametrize("kind", KINDS)
def test_the_owner_downloads_the_layout_as_one_markdown(client, user, plan, kind):
    client.force_login(user)
    response = client.get(_url(plan, kind), {"download": "1"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="plan-7-v1.{kind}.md"'
    assert response.content.decode() == export_formats.EXPORTS[kind].render(plan)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("query", [{}, {"zip": "1"}])
def test_another_user_gets_404_and_a_visitor_is_sent_to_log_in(client, other_user, plan, kind,
                                                               query):  # fmt: skip
    response = client.get(_url(plan, kind), query)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    client.force_login(other_user)
    assert client.get(_url(plan, kind), query).status_code == 404


def test_a_single_document_export_has_no_zip(client, user, plan):
    client.force_login(user)
    assert client.get(_url(plan, "github"), {"zip": "1"}).status_code == 404


def test_the_plan_page_offers_each_layout_as_a_zip_and_as_markdown(client, user, plan):
    client.force_login(user)
    page = client.get(reverse("conversations:plan", args=[plan.session_id])).content.decode()
    for kind in KINDS:
        assert f'href="{_url(plan, kind)}?version=1&amp;zip=1"' in page
        assert f'href="{_url(plan, kind)}?version=1&amp;download=1"' in page
        assert f'data-url="{_url(plan, kind)}?version=1"' in page
