"""Plans are rendered by us from the agent's JSON, with every path marked against the codebase."""

import json

from pydantic_core import from_json

from agents.plan import annotate_files, render_plan, render_proposal

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
