"""Evidence plans and the runner, without a database or a model: the schema holds a plan to
the real tools, tidy_steps makes a small model's plan safe, and run_steps runs independent
steps together and dependent ones after what they need (shown by events, not by timing)."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from agents.investigation.evidence import (
    Evidence,
    EvidencePlan,
    EvidenceStep,
    candidate_paths,
    evidence_context,
    plan_schema,
)
from agents.investigation.runner import Step, run_steps, tidy_steps
from agents.investigation.tools import ToolResult
from agents.schemas import NewFile, PlanDraft, Proposal, merge_new_files, with_file_choices

# Bounds how long a broken behaviour can hang a test; never what makes a test pass.
DEADLINE = 10.0


def step(id, tool="search", argument="x", depends_on=(), kind="independent"):
    return EvidenceStep(
        id=id, tool=tool, argument=argument, why="w", depends_on=list(depends_on), kind=kind
    )


def test_the_plan_schema_rejects_an_unknown_tool():
    with pytest.raises(ValidationError):
        EvidencePlan.model_validate(
            {
                "steps": [
                    {"id": "E1", "tool": "grep", "argument": "x", "why": "w", "kind": "independent"}
                ],
                "next_action": "synthesize",
            }  # fmt: skip
        )


def test_the_plan_schema_caps_the_steps():
    plan = {"steps": [step(f"E{i}").model_dump() for i in range(1, 4)], "next_action": "retrieve"}
    assert plan_schema(3).model_validate(plan)
    with pytest.raises(ValidationError):
        plan_schema(2).model_validate(plan)
    assert plan_schema(2).model_json_schema()["properties"]["steps"]["maxItems"] == 2


def test_tidy_drops_repeats_dangling_dependencies_and_binds_references():
    steps = tidy_steps(
        [
            step("E1", "find_symbol", "TokenStore"),
            step("E5", "find_symbol", "TokenStore"),  # a repeat under another id
            step("E2", "read_file", "E5", depends_on=["E5"], kind="dependent"),
            step("E3", "outline", "todo/api.py", depends_on=["E9", "E3"]),  # dangling, itself
            step("E4", "search", "already ran"),
        ],
        limit=6,
        done={("search", "already ran")},
    )
    assert [(s.id, s.tool, s.argument, s.depends_on) for s in steps] == [
        ("S1", "find_symbol", "TokenStore", ()),
        ("S2", "read_file", "S1", ("S1",)),
        ("S3", "outline", "todo/api.py", ()),
    ]


def test_the_plan_schema_holds_ids_and_dependencies_to_the_step_ids():
    # The 0.5B model wrote "1" for an id and tool names for dependencies.
    schema = plan_schema(3)
    good = {"steps": [step("E1").model_dump(), step("E2", depends_on=["E1"]).model_dump()],
            "next_action": "synthesize"}  # fmt: skip
    assert schema.model_validate(good)
    for bad in ({"id": "1"}, {"depends_on": ["find_symbol"]}, {"id": "E4"}):
        plan = {"steps": [{**step("E1").model_dump(), **bad}], "next_action": "synthesize"}
        with pytest.raises(ValidationError):
            schema.model_validate(plan)
    ids = schema.model_json_schema()["$defs"]["EvidenceStep"]["properties"]["id"]["enum"]
    assert ids == ["E1", "E2", "E3"]


def test_tidy_reads_a_tool_call_written_as_the_argument():
    steps = tidy_steps(
        [
            step("E1", "search", "find_symbol(Inner.copy)"),
            step("E2", "search", "read_file('pkg/core.py:10-20')"),
            step("E3", "find_symbol", "find_symbol(Inner.copy)"),  # the same call again
            step("E4", "search", "grep(copy)"),  # no such tool: a query as written
            step("E5", "search", "copy(deep=True)"),
        ],
        limit=6,
    )
    assert [(s.tool, s.argument) for s in steps] == [
        ("find_symbol", "Inner.copy"),
        ("read_file", "pkg/core.py:10-20"),
        ("search", "grep(copy)"),
        ("search", "copy(deep=True)"),
    ]


def test_tidy_keeps_at_most_the_limit():
    assert len(tidy_steps([step(f"E{i}", argument=f"q{i}") for i in range(9)], limit=4)) == 4


def test_independent_steps_run_concurrently():
    # Each call waits until both are inside a call at once: run one after the other, the
    # barrier breaks (after DEADLINE) and the test fails.
    barrier = threading.Barrier(2, timeout=DEADLINE)

    def call(tool, argument):
        barrier.wait()
        return ToolResult(tool, argument, True, "ok")

    outcome = run_steps([Step("S1", "search", "a", ""), Step("S2", "search", "b", "")], call)
    assert sorted(outcome.order) == ["S1", "S2"]


def test_dependent_steps_run_after_their_dependencies_and_get_their_file():
    events: list[str] = []
    lock = threading.Lock()
    release_s1 = threading.Event()

    def call(tool, argument):
        with lock:
            events.append(f"start {tool} {argument}")
        if argument == "TokenStore":
            # S3 (independent) must finish, and be reported, while S1 is still running.
            assert release_s1.wait(DEADLINE)
            result = ToolResult(tool, argument, True, "found", "todo/auth.py", 10, 30)
        else:
            result = ToolResult(tool, argument, True, "ok", "x.py", 1, 2)
        with lock:
            events.append(f"end {tool} {argument}")
        return result

    finished: list[str] = []

    def reported(step, result):
        finished.append(step.id)
        if step.id == "S3":
            release_s1.set()

    outcome = run_steps(
        [
            Step("S1", "find_symbol", "TokenStore", ""),
            Step("S2", "read_file", "S1", "", ("S1",)),
            Step("S3", "search", "other", ""),
        ],
        call,
        on_result=reported,
    )
    assert events.index("end find_symbol TokenStore") < events.index(
        "start read_file todo/auth.py:10-30"
    )
    assert events.index("end search other") < events.index("end find_symbol TokenStore")
    assert finished == ["S3", "S1", "S2"] == outcome.order
    assert outcome.results["S2"].argument == "todo/auth.py:10-30"


def test_known_results_release_their_dependants_without_rerunning():
    calls: list[str] = []

    def call(tool, argument):
        calls.append(argument)
        return ToolResult(tool, argument, True, "ok")

    known = {"S1": ToolResult("find_symbol", "X", True, "found", "a/x.py", 3, 9)}
    run_steps([Step("S2", "outline", "S1", "", ("S1",))], call, known=known)
    assert calls == ["a/x.py"]


def evidence(n, path, found=True, tool="find_symbol"):
    return Evidence(n, tool, "X", "w", found, "msg", path, 1, 9, f"text of {path}")


def test_evidence_is_numbered_and_rendered_for_prompts_and_cards():
    item = evidence(1, "todo/auth.py")
    assert item.as_dict()["id"] == "E1" and Evidence.from_dict(item.as_dict()) == item
    assert item.markdown().startswith("**E1 · find_symbol `X`** — `todo/auth.py:1-9`")
    context = evidence_context([evidence(2, "", found=False), item])
    assert context.index("[E1]") < context.index("[E2]")  # found items first
    assert "text of todo/auth.py" in context


def test_candidate_paths_put_the_evidence_first():
    items = [evidence(1, "b.py"), evidence(2, "", found=False), evidence(3, "a.py")]
    assert candidate_paths(items, ["c.py", "a.py"]) == ["b.py", "a.py", "c.py"]


def test_the_constrained_schema_rejects_an_invented_path():
    schema = with_file_choices(Proposal, ("todo/auth.py", "todo/api.py"))
    good = {"summary": "s", "steps": [], "files": [
        {"path": "todo/auth.py", "action": "modify", "reason": "r"}]}  # fmt: skip
    assert schema.model_validate(good)
    with pytest.raises(ValidationError):
        schema.model_validate(
            {**good, "files": [{"path": "todo/invented.py", "action": "modify", "reason": "r"}]}
        )
    enum = schema.model_json_schema()["$defs"]["ExistingFileChange"]["properties"]["path"]
    assert enum["enum"] == ["todo/auth.py", "todo/api.py"]


def test_new_files_go_through_their_own_branch_and_bad_paths_are_refused():
    schema = with_file_choices(PlanDraft, ("todo/auth.py",))
    assert schema.model_fields["new_files"].annotation == list[NewFile]
    with pytest.raises(ValidationError, match="not a usable path"):
        NewFile.model_validate({"path": "../etc/passwd", "reason": "r"})
    data = {"files": [{"path": "todo/auth.py", "action": "modify", "reason": "r"}],
            "new_files": [{"path": "todo/limits.py", "reason": "new"}]}  # fmt: skip
    assert merge_new_files(data)["files"][-1] == {
        "path": "todo/limits.py", "action": "create", "reason": "new"}  # fmt: skip
