"""The GitHub Spec Kit export of a fixed plan, compared with the checked-in files (golden), and
read back as Spec Kit's templates (v1.0.1) and commands expect it."""

import io
import re
import zipfile

import pytest

from conversations import export_formats
from conversations.spec_exports import LAYOUTS
from tests.conversations.spec_plan import assert_golden, make_plan

pytestmark = pytest.mark.django_db

FOLDER = "specs/007-rate-limiting-for-login"


@pytest.fixture
def plan(user, codebase):
    return make_plan(user, codebase)


def test_the_speckit_files_are_the_golden_ones(plan):
    files = dict(LAYOUTS["speckit"].files(plan))
    assert list(files) == [f"{FOLDER}/spec.md", f"{FOLDER}/plan.md", f"{FOLDER}/tasks.md",
                           ".specify/feature.json"]  # fmt: skip
    for name in ("spec.md", "plan.md", "tasks.md"):
        assert_golden(f"speckit/{FOLDER}/{name}", files[f"{FOLDER}/{name}"])
    assert files[".specify/feature.json"] == f'{{"feature_directory": "{FOLDER}"}}\n'


def test_the_single_markdown_is_the_golden_one(plan):
    assert_golden("speckit.md", export_formats.EXPORTS["speckit"].render(plan))


def test_every_task_is_a_checkbox_with_an_id_a_story_and_its_file_paths(plan):
    tasks = dict(LAYOUTS["speckit"].files(plan))[f"{FOLDER}/tasks.md"]
    lines = [line for line in tasks.splitlines() if line.startswith("- [ ]")]
    assert [line.split()[3] for line in lines] == [f"T{n:03d}" for n in range(1, 7)]
    assert all(re.match(r"- \[ \] T\d{3} \[US1\] ", line) for line in lines)
    # The implementation tasks, one per step, name the step's files as the codebase has them.
    assert "T004 [US1] Count failed logins in `todo/api.py`" in tasks
    assert "(changes `login` at `todo/api.py:27-32`; sketch in plan.md)" in tasks
    assert "T005 [US1] Add the limiter in `todo/ratelimit.py`" in tasks
    assert "names `todo/logging.py`, not in the codebase" in tasks


def test_the_plan_carries_the_quality_line_the_sketch_as_a_patch_and_the_rules(plan):
    text = dict(LAYOUTS["speckit"].files(plan))[f"{FOLDER}/plan.md"]
    assert "> **Checked by PlanAgents.** 3 steps · 1 on real definitions" in text
    assert "```diff\n--- a/todo/api.py\n+++ b/todo/api.py\n@@ -28,4 +28,6 @@ login\n" in text
    assert "- Tests use pytest. (from `AGENTS.md`) — PASS" in text
    assert "| `todo/logging.py` | modify | NOT IN THE CODEBASE | Log refusals" in text


def test_the_zip_holds_the_layout_and_the_same_bytes_each_time(plan):
    archive = export_formats.EXPORTS["speckit"].archive
    assert archive is not None
    data = archive(plan)
    with zipfile.ZipFile(io.BytesIO(data)) as unzipped:
        assert unzipped.namelist() == [name for name, _ in LAYOUTS["speckit"].files(plan)]
        assert (
            unzipped.read(f"{FOLDER}/tasks.md").decode()
            == dict(LAYOUTS["speckit"].files(plan))[f"{FOLDER}/tasks.md"]
        )
    assert archive(plan) == data
