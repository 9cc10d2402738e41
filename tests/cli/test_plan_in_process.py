"""`planagents plan`, `sync` and `export` run in process (CliRunner), on the scripted provider:
the pack that reaches the index, the files written, stale plans, export formats, bad input."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from typer.testing import CliRunner

from cli import main
from cli.pack import STATE_FILE
from conversations.exports import safe_markdown
from conversations.models import Plan, PlanningSession
from rag.models import CodeFile

pytestmark = pytest.mark.django_db(transaction=True)
TASK = "Add rate limiting to the handler"
SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


@pytest.fixture(autouse=True)
def _fast(settings, monkeypatch):
    settings.PLANAGENTS_API_RATE = "100000/min"
    monkeypatch.setattr(main, "POLL_SECONDS", 0.05)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(
        "def handler(request):\n    return helper(request)\n\n\n"
        "def helper(request):\n    return 'ok'\n"
    )
    (root / "src" / "util.py").write_text("def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n")
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "schema.py").write_text("GENERATED = True\n")
    (root / ".env").write_text(f"STRIPE_KEY={SECRET}\n")
    return root


def run(*args: str):
    result = CliRunner().invoke(main.app, list(args))
    return result


def plan_in(repo, out, *extra: str):
    return run("plan", str(repo), TASK, "--profile", "fake", "--out", str(out), *extra)


def test_plan_writes_plan_md_and_plan_json_with_progress(repo, tmp_path):
    out = tmp_path / "out"

    result = plan_in(repo, out)

    assert result.exit_code == 0, result.output
    plan = Plan.objects.get()
    assert (out / "plan.md").read_text() == safe_markdown(plan.markdown)
    data = json.loads((out / "plan.json").read_text())
    assert data["schema_version"] and data["steps"]
    assert "Indexed" in result.output
    for label in ("Analyze codebase", "Propose changes", "Finalize plan"):
        assert label in result.output
    assert "Approved the proposal" in result.output
    assert PlanningSession.objects.get().status == PlanningSession.Status.COMPLETED


def test_plan_leaves_the_ignored_file_and_the_secret_out_of_the_codebase(repo, tmp_path):
    result = plan_in(repo, tmp_path / "out")

    assert result.exit_code == 0, result.output
    indexed = set(CodeFile.objects.values_list("path", flat=True))
    assert {"src/app.py", "src/util.py"} <= indexed
    assert "generated/schema.py" not in indexed
    assert ".env" not in indexed
    assert not CodeFile.objects.filter(content__contains=SECRET).exists()
    assert "Withheld 1 file(s)" in result.output and ".env:" in result.output


def test_plan_remembers_the_codebase_for_sync(repo, tmp_path):
    result = plan_in(repo, tmp_path / "out")

    assert result.exit_code == 0, result.output
    state = json.loads((repo / STATE_FILE).read_text())
    assert state == {"server": "", "codebase": PlanningSession.objects.get().codebase_id}


def test_debate_mode_ends_the_debate_and_writes_its_plan(repo, tmp_path):
    result = plan_in(repo, tmp_path / "out", "--mode", "debate")

    assert result.exit_code == 0, result.output
    assert PlanningSession.objects.get().mode == "debate"
    assert (tmp_path / "out" / "plan.md").read_text().startswith("# ")


def test_sync_uploads_a_new_version_and_reports_the_plan_it_made_stale(repo, tmp_path):
    assert plan_in(repo, tmp_path / "out").exit_code == 0
    plan = Plan.objects.get()
    named = set(plan.structured["snapshot"]["files"])
    assert "src/app.py" in named, named  # what the scripted plan rests on
    (repo / "src" / "app.py").write_text("def handler(request):\n    return 'changed'\n")

    result = run("sync", str(repo))

    assert result.exit_code == 0, result.output
    assert "version 2: 0 added, 1 changed, 0 removed" in result.output
    assert "1 plan(s) went stale" in result.output
    assert "src/app.py: " in result.output


def test_sync_with_nothing_changed_reports_no_stale_plan(repo, tmp_path):
    assert plan_in(repo, tmp_path / "out").exit_code == 0

    result = run("sync", str(repo))

    assert result.exit_code == 0, result.output
    assert "Nothing changed since version 1 of codebase" in result.output
    assert "no new version was made" in result.output
    assert "No plan went stale." in result.output


def test_sync_without_a_codebase_says_how_to_get_one(repo):
    result = run("sync", str(repo))

    assert result.exit_code == 1
    assert "No codebase to sync" in result.output


@pytest.mark.parametrize(
    ("kind", "expect"),
    [
        ("json", '"schema_version"'),
        ("github", "## "),
        ("handoff", TASK),
        ("speckit", "tasks.md"),
        ("kiro", "requirements.md"),
        ("agents", "##"),
    ],
)
def test_export_prints_each_format(repo, tmp_path, kind, expect):
    assert plan_in(repo, tmp_path / "out").exit_code == 0
    session = PlanningSession.objects.get()

    result = run("export", str(session.pk), "--format", kind)

    assert result.exit_code == 0, result.output
    assert expect in result.stdout


def test_export_zip_writes_the_spec_kit_layout(repo, tmp_path, monkeypatch):
    assert plan_in(repo, tmp_path / "out").exit_code == 0
    session = PlanningSession.objects.get()
    target = tmp_path / "speckit.zip"

    result = run("export", str(session.pk), "--format", "speckit", "--zip", "--out", str(target))

    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(io.BytesIO(target.read_bytes())) as archive:
        listed = archive.namelist()
    assert any(n.startswith("specs/") and n.endswith("/tasks.md") for n in listed), listed


def test_export_of_an_unknown_format_names_the_formats(repo, tmp_path):
    assert plan_in(repo, tmp_path / "out").exit_code == 0
    session = PlanningSession.objects.get()

    result = run("export", str(session.pk), "--format", "pdf")

    assert result.exit_code == 1
    assert "No export 'pdf'; there are: agents, github, handoff, json, kiro, markdown, speckit" in (
        result.output
    )


def test_export_of_someone_elses_plan_is_not_found(django_user_model, repo, tmp_path):
    from tests.api.world import build_world

    world = build_world(django_user_model)  # another owner's session and plan

    result = run("export", str(world.session.pk), "--format", "json")

    assert result.exit_code == 1
    assert "No such session (404)" in result.output


def test_plan_of_a_missing_directory_fails_in_one_line(tmp_path):
    result = run("plan", str(tmp_path / "nope"), TASK, "--profile", "fake")

    assert result.exit_code == 1
    assert result.output.strip().startswith("Error: No such directory:")
    assert len(result.output.strip().splitlines()) == 1


def test_plan_with_an_unknown_mode_fails(repo):
    result = run("plan", str(repo), TASK, "--mode", "brainstorm")

    assert result.exit_code == 1
    assert "Unknown mode 'brainstorm'" in result.output


def test_an_unreachable_server_fails_in_one_line(repo):
    result = run("plan", str(repo), TASK, "--server", "http://127.0.0.1:9", "--token", "pa_x")

    assert result.exit_code == 1
    assert "Cannot reach the server at http://127.0.0.1:9" in result.output


def test_a_server_without_a_token_is_refused_before_anything_is_sent(repo, monkeypatch):
    monkeypatch.delenv("PLANAGENTS_TOKEN", raising=False)

    result = run("export", "1", "--server", "http://127.0.0.1:9")

    assert result.exit_code == 1
    assert "--server needs a token" in result.output


def test_the_runs_token_is_revoked_when_the_command_ends(repo, tmp_path):
    from api.models import ApiToken

    assert plan_in(repo, tmp_path / "out").exit_code == 0

    assert ApiToken.objects.count() == 1
    assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 0
