"""Plans are rendered by us from the agent's JSON, with every path marked against the codebase."""

import json

from markdown_it import MarkdownIt
from pydantic_core import from_json

from agents.plan import annotate_files, render_plan, render_proposal
from rag.paths import FileSet

PATHS = {"todo/api.py", "todo/auth.py"}

PLAN = {
    "summary": "Count failed logins and refuse the sixth in a minute.",
    "decisions": ["Keep counters in memory.", "Keep counters in memory."],
    "steps": [
        {
            "title": "Add the counter",
            "detail": "In `todo/auth.py:5`.",
            "files": ["todo/auth.py:5", "path"],
        },
        {"title": "Use it", "detail": "Call it from the login view.", "files": ["./todo/api.py"]},
    ],
    "files": [
        {"path": "todo/api.py", "action": "modify", "reason": "login view"},
        {"path": "./todo/api.py:21-33", "action": "modify", "reason": "again"},
        {"path": "todo/ratelimit.py", "action": "create", "reason": "the limiter"},
        {"path": "todo/imaginary.py", "action": "modify", "reason": "invented"},
    ],
    "testing": ["Six failed logins in a minute get 429."],
    "risks": ["Counters reset on restart."],
    "effort": {"size": "S", "estimate": "1 day"},
}


def test_every_file_is_marked_existing_new_or_missing():
    markdown = render_plan(PLAN, PATHS, title="Rate limit")
    assert "| `todo/api.py` | modify | exists | login view" in markdown
    assert "| `todo/ratelimit.py` | create | new file | the limiter" in markdown
    assert "| `todo/imaginary.py` | modify | **NOT IN THE CODEBASE** | invented" in markdown
    statuses = {f["path"]: f["status"] for f in annotate_files(PLAN, PATHS)["files"]}
    assert statuses == {
        "todo/api.py": "exists",
        "todo/ratelimit.py": "new",
        "todo/imaginary.py": "missing",
    }


def test_it_has_every_section_in_order():
    markdown = render_plan(PLAN, PATHS, title="Rate limit")
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert headings == [
        "# Plan: Rate limit",
        "## Summary",
        "## Decisions",
        "## Steps",
        "## Files",
        "## Testing",
        "## Risks",
        "## Effort",
    ]


def test_it_drops_repeats_line_suffixes_and_non_paths():
    markdown = render_plan(PLAN, PATHS)
    assert markdown.count("Keep counters in memory.") == 1
    assert markdown.count("| `todo/api.py` |") == 1
    assert "Files: `todo/auth.py`\n" in markdown  # ":5" stripped, the word "path" dropped


def test_the_live_rendering_only_grows_while_the_json_streams():
    raw = json.dumps(PLAN)
    shown = ""
    redraws = 0
    for end in range(1, len(raw) + 1):
        partial = from_json(raw[:end], allow_partial="trailing-strings")
        if not isinstance(partial, dict):
            continue
        text = render_plan(partial, PATHS, title="Rate limit", complete=False)
        if not text.startswith(shown):
            redraws += 1
        shown = text
    assert redraws <= 2, f"{redraws} redraws: the stream would flicker"
    assert render_plan(PLAN, PATHS, title="Rate limit").startswith(shown.rstrip()[:200])


def test_a_proposal_renders_its_steps_and_files():
    proposal = {k: PLAN[k] for k in ("summary", "steps", "files")}
    markdown = render_proposal(proposal, PATHS)
    assert markdown.startswith("**Proposal.** Count failed logins")
    assert "1. **Add the counter** — In `todo/auth.py:5`." in markdown
    assert "| `todo/imaginary.py` | modify | **NOT IN THE CODEBASE** |" in markdown


def table_rows(markdown: str) -> list[list[str]]:
    """The body rows of every table in `markdown`, as a GFM renderer reads them (cell text)."""
    rows: list[list[str]] = []
    row: list[str] | None = None
    in_body = False
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type in ("tbody_open", "tbody_close"):
            in_body = token.type == "tbody_open"
        elif token.type == "tr_open" and in_body:
            row = []
        elif token.type == "inline" and row is not None:
            row.append("".join(child.content for child in token.children or []))
        elif token.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
    return rows


FORGED_PATH = "x.py` | exists |\n| `rag/models.py"


def test_a_path_cannot_forge_a_row_saying_a_file_exists():
    paths = {"rag/models.py", "todo/api.py"}
    plan = {"files": [{"path": FORGED_PATH, "action": "modify", "reason": "r"}]}
    rows = table_rows(render_plan(plan, paths))
    assert len(rows) == 1
    ((path, action, status, reason),) = rows
    assert path == "x.py` | exists |\\n| `rag/models.py"  # one cell, the line break escaped
    assert (action, status, reason) == ("modify", "INVALID PATH", "r")
    (entry,) = annotate_files(plan, paths)["files"]
    assert entry["status"] == "invalid" and "\n" not in entry["path"]


def test_no_cell_can_end_its_row_or_cell():
    plan = {
        "summary": "Fine.\n\n| File | Change | Status | Why\n|---|---|---|---\n| `todo/api.py` | x",
        "files": [
            {
                "path": "a|b`c.py",
                "action": "modify | exists",
                "reason": "why\n| `todo/api.py` | modify | exists | forged",
            }
        ],
    }
    rows = table_rows(render_plan(plan, PATHS))
    assert rows == [
        [
            "a|b`c.py",
            "modify | exists",
            "NOT IN THE CODEBASE",
            "why | todo/api.py | modify | exists | forged",  # the backticks made a code span
        ]
    ]


def test_paths_spelled_another_way_are_marked_with_the_real_file():
    plan = {
        "steps": [{"title": "t", "detail": "d", "files": ["TODO/AUTH.PY", "api.py:3"]}],
        "files": [
            {"path": "TODO/API.py", "action": "modify", "reason": "case"},
            {"path": "auth.py#L5", "action": "modify", "reason": "tail"},
            {"path": "api.py", "action": "create", "reason": "a new one at the top"},
        ],
    }
    markdown = render_plan(plan, PATHS)
    assert table_rows(markdown) == [
        ["todo/api.py", "modify", "exists (written TODO/API.py)", "case"],
        ["todo/auth.py", "modify", "exists (written auth.py)", "tail"],
        ["api.py", "create", "new file", "a new one at the top"],
    ]
    assert "Files: `todo/auth.py`, `todo/api.py`\n" in markdown
    files = annotate_files(plan, PATHS)["files"]
    assert [(f["path"], f["status"], f.get("written")) for f in files] == [
        ("todo/api.py", "exists", "TODO/API.py"),
        ("todo/auth.py", "exists", "auth.py"),
        ("api.py", "new", None),
    ]


def test_a_plan_on_a_compressed_pack_says_its_line_numbers_are_the_packs():
    note = "This pack was made with Repomix --compress: line numbers are approximate."
    markdown = render_plan(PLAN, FileSet(PATHS, line_note=note), title="Rate limit")
    assert markdown.startswith(f"# Plan: Rate limit\n\n> **Line numbers.** {note}\n\n## Summary")
    assert "Line numbers" not in render_plan(PLAN, PATHS, title="Rate limit")


def test_a_code_span_a_step_leaves_open_is_closed_at_its_end():
    # The requests walk (local-1.5b): a title cut after "in `requests/structures" paired its
    # backtick with the detail's, and the page showed the step's code as prose.
    step = {
        "title": "Put the header back in `requests/structures",
        "detail": "Add the `Authorization` header again (see `todo/auth.py:5`).",
        "files": [],
    }
    text = render_plan({"steps": [step], "files": []}, PATHS, title="t")
    html = MarkdownIt().render(text)
    assert "<code>requests/structures</code>" in html
    assert "<code>Authorization</code>" in html and "<code>todo/auth.py:5</code>" in html
    assert "<code>``" not in html
