"""Comparing two plan versions: sections added, removed, changed and unchanged, each step and
each table row on its own, words marked on either side, everything readable and escaped."""

import re

import pytest
from django.urls import reverse

from conversations.models import Plan, PlanningSession, PlanningState
from conversations.plan_diff import MAX_TOKENS, diff_plans, sections, side_by_side, word_diff

V1 = """# Plan: Rate limiting

## Summary

Throttle login attempts per user.

## Steps

1. Add a limiter.

## Risks

- Shared IPs.
"""
V2 = """# Plan: Rate limiting

## Summary

Throttle login attempts per address.

## Steps

1. Add a limiter.

## Testing

- A sixth attempt is refused.
"""
# Two versions as agents.plan renders them: tables, numbered steps with their files.
RICH_V1 = """# Plan: Rate limiting

## Decisions

| Decision | Agent A proposed | Agent B objected | Resolved | By | Evidence
|---|---|---|---|---|---
| Keep counts in memory | — | none raised | kept | Agent A | `todo/auth.py:12-20`

## Steps

1. **Add a limiter** — Count failures per user in `todo/limits.py`.
   Files: `todo/limits.py`
2. **Wire it in** — Call the limiter from the login view.
   Files: `todo/views.py`

## Files

| File | Change | Status | Why
|---|---|---|---
| `todo/limits.py` | create | new file | The counter.
| `todo/views.py` | modify | exists | Calls the counter.
| `todo/old.py` | delete | exists | Dead code.
"""
RICH_V2 = """# Plan: Rate limiting

## Decisions

| Decision | Agent A proposed | Agent B objected | Resolved | By | Evidence
|---|---|---|---|---|---
| Keep counts in the cache | — | none raised | kept | Agent A | `todo/auth.py:12-20`

## Steps

1. **Add a migration** — A table for lockouts.
   Files: `todo/migrations/0002_lockout.py`
2. **Add a limiter** — Count failures per address in `todo/limits.py`.
   Files: `todo/limits.py`
3. **Wire it in** — Call the limiter from the login view.
   Files: `todo/views.py`

## Files

| File | Change | Status | Why
|---|---|---|---
| `todo/limits.py` | create | new file | The counter, per address.
| `todo/views.py` | modify | exists | Calls the counter.
| `todo/settings.py` | modify | exists | The limit.
"""


def _by_title(diffs):
    return {d.title: d for d in diffs}


def _text(html):
    """What a reader sees of a diff: its text without the marks."""
    return re.sub(r"</?(ins|del)>", "", html)


def test_it_cuts_a_plan_at_its_second_level_headings():
    found = sections(V1)
    assert [s.title for s in found] == ["", "Summary", "Steps", "Risks"]
    assert found[1].body == "Throttle login attempts per user."


def test_it_reports_sections_added_removed_changed_and_unchanged():
    diffs = _by_title(diff_plans(V1, V2))
    assert diffs["Summary"].status == "changed"
    assert diffs["Steps"].status == "unchanged"
    assert diffs["Risks"].status == "removed"
    assert diffs["Testing"].status == "added"
    assert diffs[""].status == "unchanged"


def test_a_removed_section_stays_where_it_stood():
    assert [d.title for d in diff_plans(V1, V2)] == ["", "Summary", "Steps", "Risks", "Testing"]


def test_a_changed_section_shows_only_the_changed_words():
    html = _by_title(diff_plans(V1, V2))["Summary"].html
    assert html == "Throttle login attempts per <del>user.</del><ins>address.</ins>"


def test_each_side_marks_its_own_words_removed_or_added():
    (row,) = _by_title(diff_plans(V1, V2))["Summary"].rows
    assert row.status == "changed"
    assert [p.html for p in row.old.parts] == ["Throttle login attempts per <del>user.</del>"]
    assert [p.html for p in row.new.parts] == ["Throttle login attempts per <ins>address.</ins>"]


def test_added_and_removed_sections_are_wholly_inserted_or_deleted():
    diffs = _by_title(diff_plans(V1, V2))
    assert diffs["Testing"].html == "<ins>• A sixth attempt is refused.</ins>"
    assert diffs["Risks"].html == "<del>• Shared IPs.</del>"
    (added,) = diffs["Testing"].rows
    assert not added.old.present and added.new.present
    assert added.new.marker == "•"
    (removed,) = diffs["Risks"].rows
    assert removed.old.present and not removed.new.present


def test_it_escapes_everything_and_writes_no_tag_but_its_own():
    html = word_diff("<b>old</b> & x", '<script>alert("x")</script> & <ins>y')
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html and "&amp;" in html
    assert set(re.findall(r"<[^>]*>", html)) == {"<ins>", "</ins>", "<del>", "</del>"}
    assert "&lt;ins&gt;y" in html  # the forged tag is text


def test_a_script_in_a_step_is_shown_as_text_on_both_sides():
    old = "## Steps\n\n1. **Log in** — as before.\n"
    new = "## Steps\n\n1. **Log in** — <script>alert(1)</script> `<b>x</b>`\n"
    (row,) = _by_title(diff_plans(old, new))["Steps"].rows
    html = row.old.parts[0].html + row.new.parts[0].html + row.inline
    assert "<script" not in html and "<b>" not in html
    assert "<ins>&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;x&lt;/b&gt;</ins>" in html
    assert set(re.findall(r"<[^>]*>", html)) == {"<ins>", "</ins>", "<del>", "</del>"}


def test_identical_texts_have_no_marks():
    assert word_diff("same words here", "same words here") == "same words here"


def test_words_split_by_a_single_space_are_marked_as_one_change():
    old, new = side_by_side("send a mail now", "send an email now")
    assert (old, new) == ("send <del>a mail</del> now", "send <ins>an email</ins> now")


def test_a_word_left_standing_between_two_rewrites_is_part_of_the_change():
    html = word_diff("Reason follows from the code.", "Document the limit.")
    assert html == "<del>Reason follows from the code.</del><ins>Document the limit.</ins>"


def test_a_paragraph_rewritten_whole_is_still_one_row_changed():
    diffs = _by_title(diff_plans("## Summary\n\nOld words.\n", "## Summary\n\nNew text.\n"))
    (row,) = diffs["Summary"].rows
    assert row.status == "changed"
    assert row.old.parts[0].html == "<del>Old words.</del>"
    assert row.new.parts[0].html == "<ins>New text.</ins>"


def test_a_text_too_long_to_match_word_by_word_is_shown_replaced_whole():
    old, new = "a " * MAX_TOKENS, "b " * MAX_TOKENS
    assert word_diff(old, new) == f"<del>{old}</del><ins>{new}</ins>"


def test_repeated_headings_pair_up_in_order():
    old = "## Note\n\na\n\n## Note\n\nb\n"
    new = "## Note\n\na\n\n## Note\n\nc\n"
    assert [d.status for d in diff_plans(old, new)] == ["unchanged", "changed"]


def test_markdown_syntax_is_not_shown():
    steps = _by_title(diff_plans(RICH_V1, RICH_V2))["Steps"]
    shown = " ".join(p.html for r in steps.rows for side in (r.old, r.new) for p in side.parts)
    assert "Add a limiter — Count failures per" in shown
    assert "Files: todo/limits.py" in shown
    assert "**" not in shown and "`" not in shown


def test_each_step_is_a_row_of_its_own_paired_across_renumbering():
    rows = _by_title(diff_plans(RICH_V1, RICH_V2))["Steps"].rows
    assert [r.status for r in rows] == ["added", "changed", "unchanged"]
    assert [(r.old.marker, r.new.marker) for r in rows] == [("", "1."), ("1.", "2."), ("2.", "3.")]
    limiter = rows[1]
    assert "per <del>user</del> in" in limiter.old.parts[0].html
    assert "per <ins>address</ins> in" in limiter.new.parts[0].html
    assert _text(rows[0].new.parts[0].html).startswith("Add a migration — A table for lockouts.")


def test_table_rows_are_diffed_row_by_row_and_cell_by_cell():
    files = _by_title(diff_plans(RICH_V1, RICH_V2))["Files"]
    assert [r.status for r in files.rows] == ["changed", "unchanged", "removed", "added"]
    changed, unchanged, removed, added = files.rows
    assert [(p.label, p.html) for p in changed.new.parts] == [
        ("File", "todo/limits.py"),
        ("Change", "create"),
        ("Status", "new file"),
        ("Why", "The <ins>counter, per address.</ins>"),
    ]
    assert changed.old.parts[3].html == "The <del>counter.</del>"
    assert _text(removed.old.parts[0].html) == "todo/old.py" and not removed.new.present
    assert _text(added.new.parts[0].html) == "todo/settings.py" and not added.old.present
    assert unchanged.new.parts[0].html == "todo/views.py"
    every = [p.html for r in files.rows for s in (r.old, r.new) for p in s.parts]
    assert not any("|" in html or "---" in html for html in every)


def test_empty_table_cells_are_left_out():
    decisions = _by_title(diff_plans(RICH_V1, RICH_V2))["Decisions"]
    (row,) = decisions.rows
    assert [p.label for p in row.new.parts] == [
        "Decision", "Agent B objected", "Resolved", "By", "Evidence",
    ]  # fmt: skip
    assert row.old.parts[0].html == "Keep counts in <del>memory</del>"
    assert row.new.parts[0].html == "Keep counts in <ins>the cache</ins>"


@pytest.fixture
def two_versions(db, user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip
    PlanningState.objects.create(session=session)
    Plan.objects.create(session=session, version=1, markdown=V1)
    Plan.objects.create(
        session=session, version=2, markdown=V2, author_kind=Plan.Author.HUMAN, author=user,
        note="Edited Summary",
    )  # fmt: skip
    return session


def _columns(page):
    return re.findall(r'<div class="diff-side (old|new)[ "]', page)


def test_the_compare_page_shows_the_two_versions_side_by_side(client, user, two_versions):
    client.force_login(user)
    url = reverse("conversations:plan_compare", args=[two_versions.pk])
    page = client.get(url, {"a": "1", "b": "2"}).content.decode()
    assert "Changes from v1 to v2" in page
    heads = re.findall(r'<div class="diff-head (old|new)">(.*?)</div>', page, re.S)
    assert [side for side, _ in heads] == ["old", "new"]
    assert "v1" in heads[0][1] and "Agents" in heads[0][1]
    assert "v2" in heads[1][1] and "Human edit by alice — Edited Summary" in heads[1][1]
    assert "<time" in heads[0][1] and "<time" in heads[1][1]
    assert "Throttle login attempts per <del>user.</del>" in page
    assert "Throttle login attempts per <ins>address.</ins>" in page
    assert "<del>user.</del><ins>" not in page  # not one inline column any more
    # Summary changed, Risks removed, Testing added: an old and a new column each.
    assert _columns(page) == ["old", "new"] * 3
    assert "<pre" not in page


def test_unchanged_sections_are_one_line_that_opens(client, user, two_versions):
    client.force_login(user)
    url = reverse("conversations:plan_compare", args=[two_versions.pk])
    page = client.get(url, {"a": "1", "b": "2"}).content.decode()
    steps = re.search(r'<details class="diff-section unchanged">(.*?)</details>', page, re.S)
    assert steps is not None
    assert re.search(r"<summary>\s*Title — unchanged\s*</summary>", steps.group(1))
    assert re.search(r"<summary>\s*Steps — unchanged\s*</summary>", page)
    assert '<section class="diff-section removed">' in page
    assert '<section class="diff-section added">' in page


def test_the_older_version_is_always_on_the_left(client, user, two_versions):
    client.force_login(user)
    url = reverse("conversations:plan_compare", args=[two_versions.pk])
    reverse_page = client.get(url, {"a": "2", "b": "1"}).content.decode()
    assert "Changes from v1 to v2" in reverse_page
    assert "per <del>user.</del>" in reverse_page and "per <ins>address.</ins>" in reverse_page


def test_the_compare_page_escapes_what_the_versions_say(client, user, two_versions):
    Plan.objects.filter(session=two_versions, version=2).update(
        markdown=V2.replace("per address.", "per <img src=x onerror=alert(1)> **now**")
    )
    client.force_login(user)
    url = reverse("conversations:plan_compare", args=[two_versions.pk])
    page = client.get(url, {"a": "1", "b": "2"}).content.decode()
    assert "<img" not in page
    assert "<ins>&lt;img src=x onerror=alert(1)&gt; now</ins>" in page


def test_the_plan_page_lists_versions_with_a_link_to_each_diff(client, user, two_versions):
    client.force_login(user)
    page = client.get(reverse("conversations:plan", args=[two_versions.pk])).content.decode()
    compare = reverse("conversations:plan_compare", args=[two_versions.pk])
    assert f'href="{compare}?a=1&amp;b=2"' in page
    assert 'name="a"' in page and 'name="b"' in page


@pytest.mark.parametrize("query", [{"a": "1", "b": "3"}, {"a": "x", "b": "2"}, {"a": "²"}])
def test_a_version_that_does_not_exist_is_not_found(client, user, two_versions, query):
    client.force_login(user)
    url = reverse("conversations:plan_compare", args=[two_versions.pk])
    assert client.get(url, query).status_code == 404


def test_only_the_owner_compares_versions(client, other_user, two_versions):
    url = reverse("conversations:plan_compare", args=[two_versions.pk])
    assert client.get(url).status_code == 302
    client.force_login(other_user)
    assert client.get(url, {"a": "1", "b": "2"}).status_code == 404
