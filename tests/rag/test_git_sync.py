"""Codebases from git, end to end: "Add from git" and "Sync" on the pages, the job through the
one dispatch seam, the zip pipeline (files, .gitignore, withheld secrets), new versions and
stale plans."""

import pytest
from django.urls import reverse
from django.utils.module_loading import import_string

from conversations import stale
from conversations.models import Plan, PlanningSession, PlanningState
from planagents import leases
from planagents.jobs import job_path
from rag import git_sync
from rag.git_sync import fetch_codebase
from rag.indexing import index_codebase, lease_name
from rag.models import Codebase, CodebaseVersion
from tests.rag.git_repos import Repo

pytestmark = pytest.mark.django_db

APP = "def login(user):\n    return check(user)\n\n\ndef check(user):\n    return True\n"
FILES = {
    "app/auth.py": APP,
    "README.md": "# Shop\n",
    ".env": "STRIPE_SECRET_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n",
    ".gitignore": "build/\n",
    "build/bundle.js": "var generated = 1;\n",
}
STRUCTURED = {
    "summary": "Throttle logins.",
    "steps": [{"title": "Count", "detail": "In `app/auth.py:1-2`.", "files": ["app/auth.py"]}],
    "files": [{"path": "app/auth.py", "action": "modify", "reason": "Login"}],
}


@pytest.fixture
def local_on(settings):
    settings.PLANAGENTS_GIT_ALLOW_LOCAL = True
    return settings


@pytest.fixture
def repo(tmp_path):
    repo = Repo(tmp_path / "shop")
    repo.first = repo.commit({"app/auth.py": "def login(user):\n    return True\n"}, "first")
    repo.second = repo.commit(FILES, "second")
    return repo


@pytest.fixture
def queued(monkeypatch):
    calls = []
    monkeypatch.setattr("rag.git_sync.dispatch", lambda job, *ids: calls.append((job, *ids)))
    return calls


def run(queued):
    """Run the jobs dispatched so far, as a worker would."""
    while queued:
        job, *ids = queued.pop(0)
        job(*ids)


def added(alice_client, repo, queued, ref="main"):
    response = alice_client.post(reverse("rag:add_git"), {"url": str(repo.bare), "ref": ref})
    assert response.status_code == 302, response.content.decode()
    codebase = Codebase.objects.get()
    assert response.url == reverse("rag:detail", args=[codebase.pk])
    run(queued)
    codebase.refresh_from_db()
    return codebase


def test_the_upload_page_offers_add_from_git(alice_client):
    page = alice_client.get(reverse("rag:upload")).content.decode()
    assert "Add from git" in page
    assert f'action="{reverse("rag:add_git")}"' in page


def test_adding_from_git_indexes_its_files_and_withholds_a_secret(
    alice_client, local_on, repo, queued
):
    codebase = added(alice_client, repo, queued)
    assert codebase.status == Codebase.Status.READY, codebase.error
    assert (codebase.name, codebase.git_url, codebase.git_ref) == ("origin", str(repo.bare), "main")
    assert codebase.git_commit == repo.second
    paths = set(codebase.files.values_list("path", flat=True))
    assert paths == {"app/auth.py", "README.md", ".env", ".gitignore"}  # build/ is ignored
    secret = codebase.files.get(path=".env")
    assert secret.withheld_reason and secret.content == ""
    assert codebase.files.get(path="app/auth.py").content == APP
    assert list(codebase.versions.values_list("number", flat=True)) == [1]


def test_a_sync_after_a_new_commit_makes_a_new_version_and_the_plan_goes_stale(
    alice, alice_client, local_on, repo, queued
):
    codebase = added(alice_client, repo, queued)
    session = PlanningSession.objects.create(
        owner=alice, codebase=codebase, title="Throttle", task="Throttle logins",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    plan = Plan.objects.create(
        session=session, version=1, markdown="# Plan\n", structured=STRUCTURED
    )
    assert stale.check(Plan.objects.get(pk=plan.pk)).state == "fresh"

    third = repo.commit({"app/auth.py": "def login(user, ip):\n    return check(user)\n"}, "ip")
    response = alice_client.post(reverse("rag:sync", args=[codebase.pk]), follow=True)
    assert "Fetching the repository again" in response.content.decode()
    run(queued)

    codebase.refresh_from_db()
    assert (codebase.status, codebase.git_commit) == (Codebase.Status.READY, third)
    latest = codebase.versions.order_by("-number").first()
    assert (latest.number, latest.changed) == (2, ["app/auth.py"])
    report = stale.check(Plan.objects.get(pk=plan.pk))
    assert report.is_stale and report.files == ["app/auth.py"]


def test_a_sync_while_the_last_versions_vectors_fill_in_is_not_lost(
    alice_client, local_on, repo, queued
):
    codebase = added(alice_client, repo, queued)
    third = repo.commit({"app/auth.py": "def login(user, ip):\n    return True\n"}, "ip")
    with leases.held(lease_name(codebase.pk)):  # the indexing job, still embedding
        git_sync.sync(codebase)
        run(queued)
        codebase.refresh_from_db()
        assert (codebase.status, codebase.git_commit) == (Codebase.Status.PENDING, third)
    # That job sees the codebase pending again when it ends, and indexes the new upload.
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == Codebase.Status.READY
    assert codebase.versions.count() == 2
    assert "ip" in codebase.files.get(path="app/auth.py").content


def test_a_sync_of_the_same_commit_makes_no_new_version(alice_client, local_on, repo, queued):
    codebase = added(alice_client, repo, queued)
    git_sync.sync(codebase)
    run(queued)
    codebase.refresh_from_db()
    assert codebase.status == Codebase.Status.READY
    assert codebase.versions.count() == 1
    assert codebase.git_fetched_at is not None


def test_a_failed_sync_keeps_the_indexed_version_and_says_why(alice_client, local_on, repo, queued):
    codebase = added(alice_client, repo, queued)
    Codebase.objects.filter(pk=codebase.pk).update(git_ref="gone")
    codebase.refresh_from_db()
    git_sync.sync(codebase)
    run(queued)
    codebase.refresh_from_db()
    assert codebase.status == Codebase.Status.READY
    assert "no branch, tag or commit named 'gone'" in codebase.git_error
    assert codebase.files.count() == 4
    page = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()
    assert "The last sync failed" in page


def test_a_first_fetch_that_fails_fails_the_codebase_with_the_reason(
    alice_client, local_on, repo, queued
):
    codebase = added(alice_client, repo, queued, ref="nope")
    assert codebase.status == Codebase.Status.FAILED
    assert "no branch, tag or commit named 'nope'" in codebase.error
    page = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()
    assert "no branch, tag or commit named" in page
    assert 'id="sync"' in page and 'id="retry"' not in page


def test_a_file_url_is_refused_on_the_page_while_the_setting_is_off(
    alice_client, repo, queued, settings
):
    settings.PLANAGENTS_GIT_ALLOW_LOCAL = False
    response = alice_client.post(reverse("rag:add_git"), {"url": repo.bare.as_uri()})
    assert response.status_code == 400
    assert "file:// URLs are refused" in response.content.decode()
    assert not Codebase.objects.exists() and queued == []


def test_a_ref_starting_with_a_dash_is_refused_on_the_page(alice_client, local_on, repo, queued):
    data = {"url": str(repo.bare), "ref": "--upload-pack=touch /tmp/x"}
    response = alice_client.post(reverse("rag:add_git"), data)
    assert response.status_code == 400
    assert "starts with &#x27;-&#x27;" in response.content.decode()
    assert not Codebase.objects.exists() and queued == []


def test_an_ext_url_is_refused_on_the_page(alice_client, local_on, queued):
    response = alice_client.post(reverse("rag:add_git"), {"url": "ext::sh -c touch% /tmp/x"})
    assert response.status_code == 400
    assert "Transport helpers" in response.content.decode()
    assert not Codebase.objects.exists()


def test_a_sync_is_refused_once_the_setting_is_turned_off(alice_client, local_on, repo, queued):
    codebase = added(alice_client, repo, queued)
    local_on.PLANAGENTS_GIT_ALLOW_LOCAL = False
    response = alice_client.post(reverse("rag:sync", args=[codebase.pk]), follow=True)
    assert "Not synced: Local paths are refused" in response.content.decode()
    assert queued == []


def test_an_uploaded_codebase_is_not_synced(alice_client, indexed, queued):
    response = alice_client.post(reverse("rag:sync", args=[indexed.pk]), follow=True)
    assert "Not synced: This codebase was uploaded" in response.content.decode()
    assert 'id="sync"' not in response.content.decode()
    assert queued == []


def test_someone_elses_codebase_cannot_be_synced(client, bob, alice_client, local_on, repo, queued):
    codebase = added(alice_client, repo, queued)
    client.force_login(bob)
    assert client.post(reverse("rag:sync", args=[codebase.pk])).status_code == 404
    assert queued == []


def test_adding_from_git_needs_a_login(client, local_on, repo, queued):
    response = client.post(reverse("rag:add_git"), {"url": str(repo.bare)})
    assert response.status_code == 302 and "login" in response.url
    assert not Codebase.objects.exists()


def test_the_codebase_page_shows_the_source_and_a_sync_button(alice_client, local_on, repo, queued):
    codebase = added(alice_client, repo, queued)
    page = alice_client.get(reverse("rag:detail", args=[codebase.pk])).content.decode()
    assert str(repo.bare) in page and repo.second[:12] in page
    assert f'action="{reverse("rag:sync", args=[codebase.pk])}"' in page


def test_the_job_can_run_on_a_celery_worker():
    assert import_string(job_path(fetch_codebase)) is fetch_codebase


@pytest.mark.django_db(transaction=True)
def test_it_fetches_and_indexes_through_the_job_seam_after_the_commit(
    alice, local_on, repo, monkeypatch
):
    ran = []
    monkeypatch.setattr("planagents.jobs._start", lambda job, args: ran.append(job(*args)))
    source = git_sync.git_source.check_source(str(repo.bare), repo.first)
    codebase = git_sync.add_from_git(alice, "", source)
    assert ran == [None]
    codebase.refresh_from_db()
    assert codebase.status == Codebase.Status.READY, codebase.error
    assert codebase.git_commit == repo.first
    assert CodebaseVersion.objects.filter(codebase=codebase).count() == 1
