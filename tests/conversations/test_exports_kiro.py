"""The Kiro export of a fixed plan, compared with the checked-in files (golden), and read back
as Kiro's spec format has it: user stories with numbered EARS criteria, the design's sections,
checkbox tasks that cite the criteria."""

import re

import pytest

from conversations import export_formats
from conversations.spec_exports import LAYOUTS, ears
from tests.conversations.spec_plan import assert_golden, make_plan

pytestmark = pytest.mark.django_db

FOLDER = ".kiro/specs/rate-limiting-for-login"


@pytest.fixture
def plan(user, codebase):
    return make_plan(user, codebase)


def test_the_kiro_files_are_the_golden_ones(plan):
    files = dict(LAYOUTS["kiro"].files(plan))
    assert list(files) == [f"{FOLDER}/{n}" for n in ("requirements.md", "design.md", "tasks.md")]
    for name, text in files.items():
        assert_golden(f"kiro/{name}", text)


def test_the_single_markdown_is_the_golden_one(plan):
    assert_golden("kiro.md", export_formats.EXPORTS["kiro"].render(plan))


def test_every_acceptance_criterion_is_ears_and_every_task_cites_real_criteria(plan):
    files = dict(LAYOUTS["kiro"].files(plan))
    requirements = files[f"{FOLDER}/requirements.md"]
    criteria = re.findall(
        r"^(\d+)\. (.*)$", requirements.split("#### Acceptance Criteria")[1], re.M
    )
    assert [int(n) for n, _ in criteria] == list(range(1, 6))
    assert all(re.match(r"(WHEN|IF|WHILE) .+ THE SYSTEM SHALL .+", text) for _, text in criteria)
    assert "**User Story:** As a developer of `sample`, I want this change:" in requirements
    cited = re.findall(r"_Requirements: ([\d., ]+)_", files[f"{FOLDER}/tasks.md"])
    assert cited and {ref for refs in cited for ref in refs.split(", ")} == {
        f"1.{n}" for n in range(1, 6)
    }


def test_a_testing_item_becomes_the_ears_pattern_its_wording_fits():
    assert ears("When the sixth attempt comes, it is refused.") == (
        "WHEN the sixth attempt comes THE SYSTEM SHALL ensure that it is refused"
    )
    assert ears("If the cache is down, logins still work.") == (
        "IF the cache is down THEN THE SYSTEM SHALL ensure that logins still work"
    )
    assert ears("While locked out, a user sees when to retry.") == (
        "WHILE locked out THE SYSTEM SHALL ensure that a user sees when to retry"
    )
    assert ears("Test that another user can still log in.") == (
        "WHEN the change is tested THE SYSTEM SHALL ensure that another user can still log in"
    )
    assert ears("`limit()` returns False at first.") == (
        "WHEN the change is tested THE SYSTEM SHALL ensure that `limit()` returns False at first"
    )


def test_the_design_has_kiros_sections_and_carries_the_sketch(plan):
    design = dict(LAYOUTS["kiro"].files(plan))[f"{FOLDER}/design.md"]
    headings = re.findall(r"^## (.+)$", design, re.M)
    for section in ("Overview", "Architecture", "Components and Interfaces", "Data Models",
                    "Error Handling", "Testing Strategy"):  # fmt: skip
        assert section in headings
    assert '+    if limiter.blocked(body.get("username", "")):' in design
    assert "> **Checked by PlanAgents.** 3 steps" in design
