"""The API end to end with a token: upload and index a codebase, take a new version, start a
session and follow it, read plans and their versions, export them; bad input gets a clear
error; each token has its own rate."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile

from api.services import create_token
from conversations import export_formats
from conversations.models import Plan, PlanningSession
from rag.indexing import index_codebase
from rag.models import Codebase, CodebaseVersion
from tests.api.world import FILES, MARKER, TokenClient, World, build_world, pack

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(django_user_model) -> World:
    return build_world(django_user_model)


@pytest.fixture
def api(world) -> TokenClient:
    return TokenClient(world.write)


def test_an_uploaded_pack_is_indexed_and_its_new_version_listed(api, world):
    shop = {"shop/cart.py": "def total(items):\n    return sum(items)\n"}
    response = api.post("/api/v1/codebases", {"name": "shop", "pack": pack(shop, "shop.json")})

    assert response.status_code == 201, response.content
    made = response.json()
    assert (made["name"], made["status"]) == ("shop", "pending")
    codebase = Codebase.objects.get(pk=made["id"], owner=world.owner)
    index_codebase(codebase.pk)  # the job the upload dispatched, run here
    detail = api.get(f"/api/v1/codebases/{codebase.pk}").json()
    assert (detail["status"], detail["file_count"], detail["latest_version"]) == ("ready", 1, 1)

    changed = {**shop, "shop/tax.py": "RATE = 0.2\n"}
    response = api.post(f"/api/v1/codebases/{codebase.pk}/versions", {"pack": pack(changed)})

    assert response.status_code == 202, response.content
    assert response.json()["status"] == "pending"
    index_codebase(codebase.pk)
    listed = api.get(f"/api/v1/codebases/{codebase.pk}/versions").json()
    assert listed["count"] == 2
    newest = listed["items"][0]
    assert (newest["number"], newest["added"], newest["added_count"]) == (2, ["shop/tax.py"], 1)


def test_an_empty_upload_is_refused_with_the_upload_pages_words(api):
    response = api.post("/api/v1/codebases", {"pack": SimpleUploadedFile("e.json", b"  ")})

    assert response.status_code == 400
    assert "is empty" in response.json()["detail"]
    assert not Codebase.objects.filter(name="e").exists()


def test_an_upload_without_a_file_says_which_field_is_missing(api):
    response = api.post("/api/v1/codebases", {"name": "nothing"})

    assert response.status_code == 422
    assert "pack" in json.dumps(response.json())


def test_the_same_bytes_again_name_the_existing_codebase(api, world):
    response = api.post("/api/v1/codebases", {"pack": pack(FILES)})

    assert response.status_code == 409
    assert response.json()["existing"] == world.codebase.pk
    both = api.post("/api/v1/codebases", {"pack": pack(FILES), "allow_duplicate": "true"})
    assert both.status_code == 201


def test_the_same_bytes_as_the_current_version_make_no_version_and_are_not_an_error(api, world):
    before = CodebaseVersion.objects.filter(codebase=world.codebase).count()

    response = api.post(f"/api/v1/codebases/{world.codebase.pk}/versions", {"pack": pack(FILES)})

    assert response.status_code == 200, response.content
    assert response.json()["id"] == world.codebase.pk
    assert CodebaseVersion.objects.filter(codebase=world.codebase).count() == before
    world.codebase.refresh_from_db()
    assert world.codebase.status == Codebase.Status.READY


def test_a_session_started_through_the_api_runs_and_reports_its_status(api, world, monkeypatch):
    from conversations.tasks import run_session

    started: list[int] = []
    monkeypatch.setattr("conversations.services._dispatch_run", started.append)

    response = api.post_json(
        "/api/v1/sessions", {"codebase": world.codebase.pk, "task": "Make `handler` say hello"}
    )

    assert response.status_code == 201, response.content
    made = response.json()
    assert (made["status"], made["mode"], made["agent_a_profile"]) == (
        "running",
        "planning",
        "fake",
    )
    assert started == [made["id"]]
    run_session(made["id"])
    status = api.get(f"/api/v1/sessions/{made['id']}").json()
    session = PlanningSession.objects.get(pk=made["id"])
    assert status["status"] == session.status != "running"
    assert status["current_node"] == session.state.current_node
    listed = api.get("/api/v1/sessions").json()
    assert {s["id"] for s in listed["items"]} == {made["id"], world.session.pk}


def test_a_session_approved_through_the_api_writes_its_plan_and_exports_a_zip(
    api, world, monkeypatch
):
    from conversations.tasks import run_session

    started: list[int] = []
    monkeypatch.setattr("conversations.services._dispatch_run", started.append)
    made = api.post_json(
        "/api/v1/sessions", {"codebase": world.codebase.pk, "task": "Make `handler` say hello"}
    ).json()
    run_session(started.pop())
    waiting = api.get(f"/api/v1/sessions/{made['id']}").json()
    assert (waiting["status"], waiting["current_node"]) == ("awaiting_human", "checkpoint")
    assert waiting["latest_plan_version"] is None

    approved = api.post_json(f"/api/v1/sessions/{made['id']}/approve", {})
    assert approved.status_code == 200, approved.content
    run_session(started.pop())
    done = api.get(f"/api/v1/sessions/{made['id']}").json()
    assert done["status"] == "completed" and done["latest_plan_version"] == 1
    again = api.post_json(f"/api/v1/sessions/{made['id']}/approve", {})
    assert again.status_code == 409 and "no proposal waiting" in again.json()["detail"]

    archive = api.get(f"/api/v1/plans/{made['id']}/export/speckit?zip=1")
    assert archive["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    assert any(n.startswith("specs/") and n.endswith("/tasks.md") for n in names)
    assert api.get(f"/api/v1/plans/{made['id']}/export/json?zip=1").status_code == 404


def test_a_session_stopped_through_the_api_ends(api, world, monkeypatch):
    from conversations.tasks import run_session

    started: list[int] = []
    monkeypatch.setattr("conversations.services._dispatch_run", started.append)
    made = api.post_json(
        "/api/v1/sessions", {"codebase": world.codebase.pk, "task": "Make `handler` say hello"}
    ).json()
    run_session(started.pop())
    stopped = api.post_json(f"/api/v1/sessions/{made['id']}/stop", {})
    assert stopped.status_code == 200, stopped.content
    for run in started:
        run_session(run)
    assert api.get(f"/api/v1/sessions/{made['id']}").json()["status"] in ("completed", "stopped")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"task": "   "}, "task"),
        ({"task": "x", "mode": "chaos"}, "mode"),
        ({"task": "x", "agent_a_profile": "no-such-model"}, "agent_a_profile"),
    ],
)
def test_a_session_with_bad_input_is_refused_with_what_to_fix(api, world, body, words):
    response = api.post_json("/api/v1/sessions", {"codebase": world.codebase.pk, **body})

    assert response.status_code == 400
    assert words in response.json()["detail"]
    assert PlanningSession.objects.count() == 1


def test_a_session_needs_a_ready_codebase(api, world):
    Codebase.objects.filter(pk=world.codebase.pk).update(status=Codebase.Status.INDEXING)

    response = api.post_json("/api/v1/sessions", {"codebase": world.codebase.pk, "task": "x"})

    assert response.status_code == 400


def test_plans_their_versions_and_each_export(api, world):
    Plan.objects.create(
        session=world.session, version=2, markdown="# Plan v2\n\nSecond.\n", structured={}
    )

    listed = api.get("/api/v1/plans").json()
    assert listed["items"][0]["session"] == world.session.pk
    assert listed["items"][0]["latest_version"] == 2
    assert api.get(f"/api/v1/plans/{world.session.pk}").json()["version"] == 2
    versions = api.get(f"/api/v1/plans/{world.session.pk}/versions").json()["items"]
    assert [v["version"] for v in versions] == [2, 1]
    first = api.get(f"/api/v1/plans/{world.session.pk}/versions/1").json()
    assert MARKER in first["markdown"] and first["quality"] == {"steps": 0}
    assert api.get(f"/api/v1/plans/{world.session.pk}/versions/9").status_code == 404
    for kind, export in export_formats.EXPORTS.items():
        response = api.get(f"/api/v1/plans/{world.session.pk}/export/{kind}?version=1")
        assert response.status_code == 200, kind
        assert response["Content-Type"] == export.content_type
        assert response.content == _bytes(export.render(Plan.objects.get(pk=world.plan.pk)))


def _bytes(body: str | bytes) -> bytes:
    return body if isinstance(body, bytes) else body.encode()


def test_an_unknown_export_names_the_ones_there_are(api, world):
    response = api.get(f"/api/v1/plans/{world.session.pk}/export/pdf")

    assert response.status_code == 404
    assert "json" in response.json()["detail"]


def test_a_session_without_a_plan_says_so(api, world):
    bare = PlanningSession.objects.create(
        owner=world.owner, codebase=world.codebase, title="t", task="t",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip

    response = api.get(f"/api/v1/plans/{bare.pk}")

    assert response.status_code == 404
    assert response.json()["detail"] == "No plan yet"


def test_each_token_has_its_own_rate_and_a_clear_429(api, world, settings):
    settings.PLANAGENTS_API_RATE = "3/min"
    cache.clear()
    try:
        for _ in range(3):
            assert api.get("/api/v1/plans").status_code == 200
        refused = api.get("/api/v1/plans")
        assert refused.status_code == 429
        assert int(refused["Retry-After"]) > 0
        assert "more than 3/min requests" in refused.json()["detail"]
        # Another token of the same owner, and another user's, count apart.
        assert TokenClient(world.read).get("/api/v1/plans").status_code == 200
        assert TokenClient(world.others).get("/api/v1/plans").status_code == 200
    finally:
        cache.clear()


def test_a_bad_rate_setting_stops_the_start_up(settings):
    from django.apps import apps
    from django.core.exceptions import ImproperlyConfigured

    settings.PLANAGENTS_API_RATE = "lots"
    with pytest.raises(ImproperlyConfigured, match="PLANAGENTS_API_RATE"):
        apps.get_app_config("api").ready()


def test_lists_are_paged(api, world):
    for n in range(3):
        create_token(world.owner, f"t{n}", "read")  # unrelated rows: lists are per kind
    page = api.get("/api/v1/sessions?limit=1&offset=1").json()
    assert page == {"items": [], "count": 1}
