"""`planagents` against a real daphne server (`--server`, a token): the plan is written once
the human approves in the browser (or `--approve` does, through the API), sync reports the plans a new version
touches, exports come over the API, and a bad token or someone else's id fails in one line."""

from __future__ import annotations

import json
import os
import threading
import zipfile
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from cli import main
from tests.api.server import MAKE_USER, Server, daphne, manage

TASK = "Add rate limiting to the handler"
SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
SERVER_ENV = {
    "PLANAGENTS_FAKE_LLM": "1",
    "PLANAGENTS_FAKE_LLM_DELAY": "0",
    "PLANAGENTS_DEFAULT_PROFILE": "fake",
    "PLANAGENTS_FALLBACK_PROFILE": "fake",
    "PLANAGENTS_API_RATE": "100000/min",
    "HF_HUB_OFFLINE": "1",
}
# What the human does on the session page: approve the proposal once it waits for them. The
# final plan's job runs in the process that approves, so the shell waits for it to end.
APPROVE = (
    "import time; from conversations import services; from planagents import shutdown; "
    "from conversations.models import PlanningSession as S\n"
    "for _ in range(1200):\n"
    "    s = S.objects.filter(status='awaiting_human').first()\n"
    # A person takes a moment: the command has seen the checkpoint and said so by then.
    "    if s: time.sleep(1.0); services.approve(s.owner, s.pk); break\n"
    "    time.sleep(0.1)\n"
    "time.sleep(0.5); shutdown.wait_for_running(120); print('approved', s.pk)\n"
)
INDEXED = "from rag.models import CodeFile; print(sorted(CodeFile.objects.values_list('path', flat=True)))"


def server_env(server: Server) -> dict[str, str]:
    env = {**os.environ, "PLANAGENTS_DATA_DIR": str(server.data), "DJANGO_DEBUG": "0"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("DATABASE_URL", None)
    return {**env, **SERVER_ENV}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    with daphne(tmp_path_factory.mktemp("cli-daphne"), SERVER_ENV) as running:
        yield running


@pytest.fixture(autouse=True)
def _fast(monkeypatch):
    monkeypatch.setattr(main, "POLL_SECONDS", 0.1)
    monkeypatch.delenv("PLANAGENTS_TOKEN", raising=False)


def run(*args: str, token: str | None = None):
    env = {"PLANAGENTS_TOKEN": token} if token else None
    return CliRunner().invoke(main.app, list(args), env=env)


@pytest.fixture(scope="module")
def planned(server, tmp_path_factory):
    """A directory planned against the server: (directory, output folder, session id, output)."""
    root = tmp_path_factory.mktemp("shop")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(
        "def handler(request):\n    return helper(request)\n\n\ndef helper(request):\n    return 1\n"
    )
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "schema.py").write_text("GENERATED = True\n")
    (root / ".env").write_text(f"STRIPE_KEY={SECRET}\n")
    out = tmp_path_factory.mktemp("out")
    approved: list[str] = []
    human = threading.Thread(
        target=lambda: approved.append(manage(server_env(server), "shell", "-c", APPROVE))
    )
    human.start()
    result = CliRunner().invoke(
        main.app,
        [
            "plan", str(root), TASK, "--server", server.url, "--token", server.write,
            "--profile", "fake", "--out", str(out), "--timeout", "120",
        ],
    )  # fmt: skip
    human.join(timeout=150)
    assert result.exit_code == 0, result.output
    session = int(approved[0].split()[-1])
    return root, out, session, result.output


def test_plan_against_a_server_writes_the_plan_once_the_human_approves(planned):
    root, out, session, output = planned

    assert f"Session #{session} waits for you" in output
    assert (out / "plan.md").read_text().startswith("# Plan")
    assert json.loads((out / "plan.json").read_text())["steps"]
    assert json.loads((root / ".planagents.json").read_text())["codebase"]


def test_the_server_indexes_neither_the_ignored_file_nor_the_secret(server, planned):
    indexed = manage(server_env(server), "shell", "-c", INDEXED)

    assert "src/app.py" in indexed
    assert "generated/schema.py" not in indexed
    assert ".env" not in indexed


def test_export_over_the_api_prints_the_format(server, planned):
    _, _, session, _ = planned

    result = run(
        "export", str(session), "--format", "github", "--server", server.url, token=server.read
    )

    assert result.exit_code == 0, result.output
    assert "## " in result.stdout


def test_sync_against_the_server_reports_the_plan_resting_on_a_changed_file(server, planned):
    root, _, session, _ = planned
    (root / "src" / "app.py").write_text("def handler(request):\n    return 'changed'\n")

    result = run("sync", str(root), "--server", server.url, token=server.write)

    assert result.exit_code == 0, result.output
    assert "1 changed" in result.output
    assert "1 plan(s) rest on files this version changed" in result.output
    assert f"#{session} v1" in result.output and "src/app.py: changed" in result.output


def test_a_second_sync_with_nothing_changed_makes_no_version_and_says_so(server, planned):
    root = planned[0]
    assert run("sync", str(root), "--server", server.url, token=server.write).exit_code == 0

    result = run("sync", str(root), "--server", server.url, token=server.write)

    assert result.exit_code == 0, result.output
    assert "Nothing changed since version" in result.output
    assert "No plan went stale." in result.output


def test_a_bad_token_fails_with_the_401_in_one_line(server, planned):
    _, _, session, _ = planned

    result = run("export", str(session), "--server", server.url, token="pa_not-a-real-token")

    assert result.exit_code == 1
    assert "refused the token (401)" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_someone_elses_plan_is_not_found(server, planned):
    _, _, session, _ = planned
    others = manage(server_env(server), "shell", "-c", MAKE_USER).split()[-3]

    result = run("export", str(session), "--server", server.url, token=others)

    assert result.exit_code == 1
    assert "No such session (404)" in result.output


def test_a_layouts_zip_comes_through_the_api(server, planned, tmp_path):
    _, _, session, _ = planned

    result = run(
        "export", str(session), "--format", "kiro", "--zip", "--out", str(tmp_path / "k.zip"),
        "--server", server.url, token=server.read,
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    names = zipfile.ZipFile(tmp_path / "k.zip").namelist()
    assert any(n.startswith(".kiro/specs/") and n.endswith("/requirements.md") for n in names)


def test_with_approve_the_command_approves_through_the_api(server, planned, tmp_path):
    root, _, _, _ = planned
    out = tmp_path / "approved"

    result = run(
        "plan", str(root), "Say hello from the handler", "--server", server.url,
        "--profile", "fake", "--out", str(out), "--timeout", "120", "--approve",
        "--no-remember", token=server.write,
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert "Approved the proposal: writing the final plan." in result.output
    assert "waits for you" not in result.output
    assert (out / "plan.md").read_text().startswith("# Plan")
