"""Where a comment written on one plan version sits in the next (conversations.comments), on
the shape `agents.plan.build_version` stores (tests/conversations/spec_plan.py): found by the
step's definition, else by most of the same words, never by its number; outdated otherwise."""

import copy

from conversations import comments
from tests.conversations.spec_plan import STRUCTURED

CITED = [
    {"path": "todo/api.py", "start": 27, "end": 32, "exists": True},
    {"path": "todo/logging.py", "start": 4, "end": 4, "exists": False},
]


def plan(**changes):
    data = copy.deepcopy(STRUCTURED)
    data["citations"] = copy.deepcopy(CITED)
    data.update(changes)
    return data


def on(key, data=None):
    return comments.anchor_for(data or plan(), key)


def test_a_step_anchor_is_its_definition_and_text_not_its_number():
    kind, anchor = on("step-1")
    assert kind == comments.STEP
    assert anchor == {
        "target": {"kind": "definition", "name": "login", "path": "todo/api.py"},
        "title": "Count failed logins",
        "detail": "Check the counter before the password (`login` at `todo/api.py:27`).",
    }


def test_a_step_follows_its_definition_when_a_step_is_inserted_above_it():
    kind, anchor = on("step-1")
    steps = plan()["steps"]
    inserted = {"title": "Read the settings", "detail": "Add LOGIN_LIMIT.", "files": []}
    # Moved down one and reworded: the definition is what makes it the same step.
    moved = {**steps[0], "title": "Refuse the sixth login", "detail": "Before the password."}
    placed = comments.place(kind, anchor, plan(steps=[inserted, moved, *steps[1:]]))
    assert (placed.key, placed.how, placed.changed) == ("step-2", "same definition", True)


def test_a_split_step_keeps_the_comment_on_the_half_most_like_it():
    kind, anchor = on("step-1")
    first = plan()["steps"][0]
    halves = [
        {**first, "title": "Read the limit", "detail": "From settings."},
        {**first, "title": "Count failed logins", "detail": "Check the counter before it."},
    ]
    placed = comments.place(kind, anchor, plan(steps=halves))
    assert placed.key == "step-2"


def test_a_step_without_a_definition_is_found_by_most_of_its_words():
    kind, anchor = on("step-3")  # "Log refusals": no target
    assert anchor["target"] is None
    steps = plan()["steps"]
    reworded = {"title": "Log refusals", "detail": "Write one line per refused login.", "files": []}
    placed = comments.place(kind, anchor, plan(steps=[reworded, steps[0], steps[1]]))
    assert placed.key == "step-1"
    assert placed.how == "similar text (7 of 8 words)"  # "one" is new, "a" is gone


def test_a_step_without_a_definition_left_as_it_was_is_the_same_step():
    kind, anchor = on("step-3")
    steps = plan()["steps"]
    placed = comments.place(kind, anchor, plan(steps=[steps[2], steps[0]]))
    assert (placed.key, placed.how, placed.changed) == ("step-1", "same title and detail", False)


def test_a_step_whose_definition_is_gone_and_words_mostly_differ_is_outdated():
    kind, anchor = on("step-3")
    steps = plan()["steps"]
    other = {"title": "Log refused attempts", "detail": "To the audit table.", "files": []}
    placed = comments.place(kind, anchor, plan(steps=[steps[0], steps[1], other]))
    assert placed.outdated
    assert placed.key is None


def test_a_step_whose_definition_is_gone_does_not_move_to_a_step_on_another_by_its_words():
    kind, anchor = on("step-1")  # on `login`
    steps = plan()["steps"]
    # The same words, on another definition: another step (what a step removed or retargeted
    # left behind in the comment bench), so the comment is outdated.
    other = {**steps[0], "target": {"kind": "definition", "name": "logout",
                                    "path": "todo/api.py", "start": 40, "end": 44}}  # fmt: skip
    placed = comments.place(kind, anchor, plan(steps=[other, steps[1], steps[2]]))
    assert placed.outdated
    # A step that lost its target is still found by its words.
    untargeted = {k: v for k, v in steps[0].items() if k != "target"}
    placed = comments.place(kind, anchor, plan(steps=[untargeted, steps[1], steps[2]]))
    assert (placed.key, placed.how) == ("step-1", "same title and detail")


def test_sharing_half_the_words_is_not_enough():
    assert comments.similar("count failed logins per user", "count failed logins per user name")
    # 3 of 6 words each side: not most of them.
    assert not comments.similar("count failed logins a b c", "count failed logins x y z")


def test_a_new_definition_target_is_matched_by_its_path():
    kind, anchor = on("step-2")
    assert anchor["target"] == {"kind": "new", "path": "todo/ratelimit.py"}
    steps = plan()["steps"]
    rewritten = {**steps[1], "title": "Write the limiter class", "detail": "Sliding window."}
    placed = comments.place(kind, anchor, plan(steps=[rewritten, steps[0]]))
    assert (placed.key, placed.how) == ("step-1", "same definition")


def test_a_section_stays_on_its_key_and_says_when_it_changed():
    kind, anchor = on("testing")
    assert (kind, anchor["key"]) == (comments.SECTION, "testing")
    same = comments.place(kind, anchor, plan())
    assert (same.key, same.changed) == ("testing", False)
    changed = comments.place(kind, anchor, plan(testing=["Another user can log in."]))
    assert (changed.key, changed.changed) == ("testing", True)


def test_a_cited_line_is_there_while_a_cited_range_holds_it():
    assert comments.cited_lines(plan()) == ["todo/api.py:27", "todo/logging.py:4"]
    anchor = comments.line_anchor("todo/api.py:29")
    assert comments.place(comments.LINE, anchor, plan()).line == "todo/api.py:29"
    gone = comments.place(comments.LINE, anchor, plan(citations=CITED[1:]))
    assert gone.outdated
    assert gone.how == "todo/api.py:29 is no longer cited"


def test_a_line_anchor_needs_a_path_and_a_line_number():
    assert comments.line_anchor("todo/api.py:27") == {"path": "todo/api.py", "line": 27}
    assert comments.line_anchor("todo/api.py") is None
    assert comments.line_anchor(":27") is None
    assert comments.line_anchor("a.py:²") is None
