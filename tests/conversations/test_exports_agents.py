"""The AGENTS.md section of a fixed plan, compared with the checked-in file (golden): the
hand-off prompt one heading level down, with the quality line and the code to change."""

import pytest

from conversations import export_formats
from conversations.spec_exports import LAYOUTS
from tests.conversations.spec_plan import assert_golden, make_plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(user, codebase):
    return make_plan(user, codebase)


def test_the_agents_section_is_the_golden_one(plan):
    assert_golden("agents.md", export_formats.EXPORTS["agents"].render(plan))


def test_the_section_is_the_handoff_prompt_one_level_down(plan):
    section = export_formats.EXPORTS["agents"].render(plan)
    handoff = export_formats.EXPORTS["handoff"].render(plan)
    headings = [line for line in handoff.splitlines() if line.startswith("#")]
    assert [f"#{h}" for h in headings] == [
        line
        for line in section.splitlines()
        if line.startswith("#") and "Code to change" not in line
    ]
    assert section.startswith("## Task: Rate limiting for login\n")
    assert "### Code to change" in section and "--- a/todo/api.py" in section


def test_the_zip_holds_an_agents_md_with_the_section(plan):
    files = LAYOUTS["agents"].files(plan)
    assert [name for name, _ in files] == ["AGENTS.md"]
    assert files[0][1] == "# AGENTS.md\n\n" + export_formats.EXPORTS["agents"].render(plan)
