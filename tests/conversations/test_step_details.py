"""A final-plan step whose detail says only where ("path:line: pylint/checkers/classes.py:1756-1781",
the 1.5B model on pylint-4551, the request's "a detail citing path:line" taken literally) shows
what the approved proposal said to do there, and the session says so."""

from __future__ import annotations

import pytest

from agents.echoes import says_only_where, with_details_from
from agents.planning import nodes
from agents.providers.fake import FakeProvider
from conversations.models import Message, Plan
from tests.conversations.test_prompt_parts import investigated, session  # noqa: F401

WHERE_ONLY = "path:line: pylint/checkers/classes.py:1756-1781"
SAID = "Read the annotation of each argument and show it as the attribute's type."


def test_a_detail_of_citations_and_labels_says_only_where():
    assert says_only_where(WHERE_ONLY)
    assert says_only_where("See `todo/auth.py:12-30`.")
    assert says_only_where("")
    assert not says_only_where(f"{SAID} `todo/auth.py:12`")
    assert not says_only_where("Return NotImplemented instead of raising ValueError.")


def test_a_where_only_detail_takes_the_proposal_steps_detail_and_keeps_its_citation():
    plan = {"steps": [
        {"title": "Modify `handle`", "symbol": "Linker.handle", "detail": WHERE_ONLY},
        {"title": "Add a test", "symbol": "none", "detail": "Cover `a: str = None`.",
         "files": ["t.py"]},
    ]}  # fmt: skip
    proposal = {"steps": [
        {"title": "Something else", "symbol": "Linker.handle", "detail": SAID},
        {"title": "Add a test", "symbol": "none", "detail": "A different test.", "files": ["t.py"]},
    ]}  # fmt: skip
    out = with_details_from(plan, proposal)
    assert out["steps"][0]["detail"] == f"{SAID} {WHERE_ONLY}"
    assert out["steps"][1] is plan["steps"][1]  # it says what to do: left as the model wrote it


def test_a_proposal_steps_detail_is_given_to_one_plan_step_only():
    # requests 2.20 with the 1.5B model: three where-only steps on one file each took the
    # proposal's one detail, and the plan said the same thing three times.
    where = {"detail": "`requests/sessions.py:118-132` [E6]", "files": ["requests/sessions.py"]}
    plan = {"steps": [{"title": t, "symbol": "none", **where} for t in ("One", "Two", "Three")]}
    proposal = {"steps": [{"title": "Keep auth", "symbol": "none", "detail": SAID,
                           "files": ["requests/sessions.py"]}]}  # fmt: skip
    out = with_details_from(plan, proposal)["steps"]
    assert out[0]["detail"] == f"{SAID} {where['detail']}"
    assert out[1]["detail"] == out[2]["detail"] == where["detail"]


def test_without_a_matching_proposal_step_the_detail_stays():
    plan = {
        "steps": [{"title": "Modify `handle`", "symbol": "Linker.handle", "detail": WHERE_ONLY}]
    }
    proposal = {"steps": [{"title": "Other", "symbol": "Other.thing", "detail": SAID}]}
    assert with_details_from(plan, proposal) == plan


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
def test_the_final_plan_shows_what_the_proposal_said_and_its_message_says_where_it_came_from(
    session,  # noqa: F811
):
    ctx = investigated(session, iteration=1)
    name, where = next(iter(ctx.definitions().items()))
    path = where[0]
    cited = f"path:line: {path}:{where[1]}"
    ctx.state.proposal = {
        "summary": "Drop tokens older than a day on lookup.",
        "steps": [{"title": "Expire old tokens", "symbol": name, "detail": SAID, "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
    }
    draft = {
        "summary": "Drop tokens older than a day on lookup.",
        "effort": {"size": "S", "estimate": "1 day"},
        "decisions": [],
        "steps": [{"title": f"Modify `{name}`", "symbol": name, "detail": cited,
                   "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
        "new_files": [],
        "testing": ["A day-old token is refused."],
        "risks": ["Clock skew."],
    }  # fmt: skip
    FakeProvider.script("fake", draft, {"first": "", "lines": 1, "after": []})
    nodes.finalize_plan(ctx)
    step = Plan.objects.get(session=session).structured["steps"][0]
    assert step["detail"].startswith(SAID)
    said = Message.objects.get(session=session, node="finalize_plan", role="agent").content
    assert (
        "Step 1 said only where to change the code, or repeated an earlier step; the plan adds "
        "what the approved" in said
    )


def test_steps_that_only_look_at_the_code_are_left_out_and_named():
    from agents.echoes import without_looking_steps

    plan = {"steps": [
        {"title": "Identify the problematic code", "detail": "In `a.py:3`."},
        {"title": "Understand the issue", "detail": "Read it."},
        {"title": "Return NotImplemented from `Quantity.__array_ufunc__`", "detail": SAID},
        {"title": "Look up hue levels through the palette", "detail": SAID},
        {"title": "Xác định đoạn mã lỗi", "detail": "Ở `a.py:3`."},
        # xarray-2905 on local-1.5b: the sketch went under the "Find" step, the change under
        # the next one ("whose code and sketch are under step 1").
        {"title": "Find the location of the `Variable.__setitem__` method", "detail": SAID},
        {"title": "Look at the traceback", "detail": SAID},
        {"title": "Tìm hàm `merge_setting`", "detail": SAID},
    ]}  # fmt: skip
    kept, looked = without_looking_steps(plan)
    assert [s["title"] for s in kept["steps"]] == [
        "Return NotImplemented from `Quantity.__array_ufunc__`",
        "Look up hue levels through the palette",
    ]
    assert looked == [
        "Identify the problematic code",
        "Understand the issue",
        "Xác định đoạn mã lỗi",
        "Find the location of the `Variable.__setitem__` method",
        "Look at the traceback",
        "Tìm hàm `merge_setting`",
    ]
    only = {"steps": plan["steps"][:2]}
    assert without_looking_steps(only) == (only, [])  # nothing else: kept, not emptied


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
def test_the_final_plan_leaves_out_a_step_that_only_looks_and_says_so(session):  # noqa: F811
    ctx = investigated(session, iteration=1)
    name, where = next(iter(ctx.definitions().items()))
    path = where[0]
    ctx.state.proposal = {"summary": "Expire tokens.", "steps": [], "files": []}
    draft = {
        "summary": "Drop tokens older than a day on lookup.",
        "effort": {"size": "S", "estimate": "1 day"},
        "decisions": [],
        "steps": [
            {"title": "Identify the problematic code", "symbol": name, "detail": SAID,
             "files": [path]},
            {"title": f"Drop old tokens in `{name}`", "symbol": name, "detail": SAID,
             "files": [path]},
        ],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
        "new_files": [],
        "testing": ["A day-old token is refused."],
        "risks": ["Clock skew."],
    }  # fmt: skip
    FakeProvider.script("fake", draft, {"first": "", "lines": 1, "after": []})
    nodes.finalize_plan(ctx)
    steps = Plan.objects.get(session=session).structured["steps"]
    assert [s["title"] for s in steps] == [f"Drop old tokens in `{name}`"]
    said = Message.objects.get(session=session, node="finalize_plan", role="agent").content
    assert "1 step(s) that only look at the code" in said
    assert "“Identify the problematic code”" in said


def test_steps_that_change_nothing_are_left_out_with_the_files_only_they_named():
    from agents.echoes import without_unchanging_steps

    # The requests 2.20 walk with the 1.5B model: its step 2 changed nothing, and its file was
    # in Files as "modify" with the reason of another file.
    plan = {
        "steps": [
            {"title": "Change `should_strip_auth`", "detail": SAID,
             "files": ["requests/sessions.py"]},
            {"title": "No changes to `CaseInsensitiveDict` in `requests/structures.py`",
             "detail": "It remains unchanged.", "files": ["requests/structures.py"]},
            {"title": "Keep `merge_setting` unchanged", "detail": "As is.",
             "files": ["requests/sessions.py"]},
            {"title": "Không thay đổi `Session`", "detail": "Giữ nguyên.", "files": []},
            # Changing what was unchanged so far is a change.
            {"title": "Make the port check treat unchanged default ports as equal",
             "detail": SAID, "files": ["requests/sessions.py"]},
        ],
        "files": [
            {"path": "requests/sessions.py", "action": "modify", "reason": "r"},
            {"path": "requests/structures.py", "action": "modify", "reason": "r"},
        ],
    }  # fmt: skip
    kept, titles, files = without_unchanging_steps(plan)
    assert [s["title"] for s in kept["steps"]] == [
        "Change `should_strip_auth`",
        "Make the port check treat unchanged default ports as equal",
    ]
    assert titles == [s["title"] for s in plan["steps"][1:4]]
    assert files == ["requests/structures.py"]  # sessions.py: a kept step changes it
    assert [f["path"] for f in kept["files"]] == ["requests/sessions.py"]
    only = {"steps": plan["steps"][1:2], "files": plan["files"]}
    assert without_unchanging_steps(only) == (only, [], [])  # nothing else: kept


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
def test_the_final_plan_leaves_out_a_step_that_changes_nothing_and_says_so(session):  # noqa: F811
    ctx = investigated(session, iteration=1)
    name, where = next(iter(ctx.definitions().items()))
    path = where[0]
    other = next(p for p in ctx.candidates() if p != path)
    ctx.state.proposal = {"summary": "Expire tokens.", "steps": [], "files": []}
    draft = {
        "summary": "Drop tokens older than a day on lookup.",
        "effort": {"size": "S", "estimate": "1 day"},
        "decisions": [],
        "steps": [
            {"title": f"Drop old tokens in `{name}`", "symbol": name, "detail": SAID,
             "files": [path]},
            {"title": f"No changes to `{other}`", "symbol": "none", "detail": "None needed.",
             "files": [other]},
        ],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"},
                  {"path": other, "action": "modify", "reason": "the code that changes"}],
        "new_files": [],
        "testing": ["A day-old token is refused."],
        "risks": ["Clock skew."],
    }  # fmt: skip
    FakeProvider.script("fake", draft, {"first": "", "lines": 1, "after": []})
    nodes.finalize_plan(ctx)
    plan = Plan.objects.get(session=session).structured
    assert [s["title"] for s in plan["steps"]] == [f"Drop old tokens in `{name}`"]
    assert [f["path"] for f in plan["files"]] == [path]
    said = Message.objects.get(session=session, node="finalize_plan", role="agent").content
    assert f"1 step(s) that change nothing (“No changes to `{other}`”), and `{other}`" in said


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
def test_a_step_that_repeats_an_earlier_one_takes_the_proposals_detail_and_the_page_says_so(
    session,  # noqa: F811
):
    # The requests walk's plan (local-1.5b): step 2 "Add tests" repeated step 1's detail, and
    # Testing and Risks repeated it again.
    ctx = investigated(session, iteration=1)
    name, where = next(iter(ctx.definitions().items()))
    path = where[0]
    test_detail = "A token issued two days ago is refused by `TokenStore.check`."
    ctx.state.proposal = {
        "summary": "Drop tokens older than a day on lookup.",
        "steps": [
            {"title": "Expire old tokens", "symbol": name, "detail": SAID, "files": [path]},
            {"title": "Add tests", "symbol": "none", "detail": test_detail, "files": [path]},
        ],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
    }
    fix = f"{SAID} Compare the issue time with the clock in `{path}:{where[1]}`."
    draft = {
        "summary": "Drop tokens older than a day on lookup.",
        "effort": {"size": "S", "estimate": "1 day"},
        "decisions": [],
        "steps": [{"title": "Expire old tokens", "symbol": name, "detail": fix, "files": [path]},
                  {"title": "Add tests", "symbol": "none", "detail": fix, "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
        "new_files": [],
        "testing": [fix],
        "risks": [fix],
    }  # fmt: skip
    FakeProvider.script("fake", draft, {"first": "", "lines": 1, "after": []})
    nodes.finalize_plan(ctx)
    plan = Plan.objects.get(session=session).structured
    assert [s["detail"] for s in plan["steps"]][1].startswith(test_detail)
    assert plan["risks"] == []
    assert fix not in plan["testing"]
    said = Message.objects.get(session=session, node="finalize_plan", role="agent").content
    assert "the detail of step “Add tests”" in said
    assert "Testing: “" in said and "Risks: “" in said


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_drained")
def test_a_plan_step_naming_no_definition_keeps_the_approved_proposals_and_says_so(
    session,  # noqa: F811
):
    # xarray-2905 (local-1.5b): the approved proposal's steps changed `Variable.__setitem__`;
    # the final plan's named "none", and the plan showed no code and no sketch.
    ctx = investigated(session, iteration=1)
    name, where = next(iter(ctx.definitions().items()))
    path = where[0]
    ctx.state.proposal = {
        "summary": "Drop tokens older than a day on lookup.",
        "steps": [{"title": "Expire old tokens", "detail": SAID, "files": [path],
                   "target": {"kind": "definition", "name": name, "path": path,
                              "start": where[1], "end": where[2]}}],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
    }  # fmt: skip
    draft = {
        "summary": "Drop tokens older than a day on lookup.",
        "effort": {"size": "S", "estimate": "1 day"},
        "decisions": [],
        "steps": [{"title": "Expire old tokens", "symbol": "none",
                   "detail": f"{SAID} In `{path}`.", "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
        "new_files": [],
        "testing": ["A day-old token is refused."],
        "risks": ["Clock skew."],
    }  # fmt: skip
    FakeProvider.script("fake", draft, {"first": "", "lines": 1, "after": []})
    nodes.finalize_plan(ctx)
    step = Plan.objects.get(session=session).structured["steps"][0]
    assert step["target"]["name"] == name and step["code"]["path"] == path
    said = Message.objects.get(session=session, node="finalize_plan", role="agent").content
    assert "Step 1 named no definition; the plan keeps the one the approved proposal's" in said
    assert "said only where" not in said
