"""Every part of every prompt the agents are sent reaches the model: each test runs the real
node (or debate turn, or section rewrite) on a real session with the scripted provider, then
reads the prompt the provider received. A part a refactor drops makes its test fail, naming
the part.

The sessions are started without their job: the test runs the nodes itself, in order, in its
own thread, so each prompt is the one production builds for that state."""

from __future__ import annotations

import os
from typing import Any

import pytest

from agents import debate, plan_writer
from agents.analysis import guidance
from agents.investigation.clarify import QuestionAsked
from agents.investigation.evidence import candidate_paths
from agents.investigation.session import load_evidence, profile_summary
from agents.planning import nodes
from agents.prompts import AGENT_A, AGENT_B, OBJECTIONS_CUE, TEAM, TOOL_GUIDE
from agents.providers.fake import FakeProvider
from agents.verification import NO_OBJECTION_NOTE
from conversations import services
from conversations.models import Message, Plan, PlanningSession, PlanningState
from conversations.store import add_message
from rag.models import Pin, Rule

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

TASK = "Make TokenStore drop tokens older than a day; today they never expire"
NOTE = "Keep the public API of TokenStore unchanged."
RULE = "Every change to todo/auth.py needs a test in tests/."
PIN = "Tokens are stored in memory only; there is no database."
ANALYSIS = "Analysis marker: TokenStore keeps a dict of tokens with no timestamps."
CRITIQUE = "Critique marker: the proposal forgets the tokens issued before the upgrade."
PROBLEM = "`todo/tokens.py` does not exist in the codebase (action: modify)."
FEEDBACK = "Feedback marker: use a monotonic clock, not wall time."
OBJECTION = "The proposal never says where the issue time of a token is stored."


def evidence_plan(next_action: str = "synthesize", question: str = "") -> dict[str, Any]:
    return {
        "steps": [
            {"id": "E1", "tool": "outline", "argument": "todo/auth.py",
             "why": "TokenStore's methods", "depends_on": [], "kind": "independent"},
        ],
        "next_action": next_action,
        "question": question,
    }  # fmt: skip


def proposal(path: str = "todo/auth.py") -> dict[str, Any]:
    return {
        "summary": "Store the issue time with each token and drop old ones on lookup.",
        "steps": [{"title": "Expire old tokens", "detail": f"In `{path}:1`.", "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "TokenStore lives here"}],
    }


@pytest.fixture
def session(user, codebase, monkeypatch):
    """A planning session on the sample project, with a rule, a pin and a human note, whose
    nodes the test runs itself."""
    monkeypatch.setattr(services, "_dispatch_run", lambda session_id: None)
    Rule.objects.create(codebase=codebase, text=RULE)
    Pin.objects.create(codebase=codebase, kind="note", text=PIN)
    return services.start_session(
        user, codebase=codebase, task=TASK, mode="planning",
        agent_a_profile="fake", agent_b_profile="fake",
    )  # fmt: skip


def context(session: PlanningSession, **state: Any) -> nodes.NodeContext:
    """The node context as the runner loads it, with `state` set on the PlanningState."""
    PlanningState.objects.filter(session=session).update(**state)
    fresh = PlanningSession.objects.get(pk=session.pk)
    return nodes.NodeContext.load(fresh, PlanningState.objects.get(session=session))


def investigated(session: PlanningSession, **state: Any) -> nodes.NodeContext:
    FakeProvider.script("fake", evidence_plan())
    ctx = context(session, **state)
    nodes.investigate(ctx)
    assert ctx.evidence, "the investigation found nothing: every grounded prompt needs it"
    return ctx


def missing(prompt: str, parts: dict[str, str]) -> list[str]:
    """The names of the parts whose text the prompt lacks."""
    return [name for name, text in parts.items() if text not in prompt]


def grounding(session: PlanningSession, ctx: nodes.NodeContext) -> dict[str, str]:
    """The parts every grounded prompt starts with (NodeContext.grounding)."""
    summary = profile_summary(session)
    assert summary, "the sample project has a profile"
    return {
        "the codebase profile": f"Codebase:\n{summary}",
        "the codebase's rules": RULE,
        "the pinned context": PIN,
        "the evidence": "Evidence from the codebase (untrusted data",
        "the evidence's items": f"[E1] find_symbol(TokenStore) — {ctx.evidence[0].location}",
        "the retrieved code": "Code context (untrusted):\n\n### todo/",
    }


def a_system(ctx: nodes.NodeContext) -> dict[str, str]:
    """What the system prompt of both agents' turns holds; the role is in the request."""
    line = guidance(ctx.session.task_analysis or {})
    assert line, "the task is analysed: its guidance line is in every system prompt"
    return {"the team and its rules": TEAM, "the task analysis's guidance": line}


def with_note(session: PlanningSession) -> None:
    add_message(session.pk, role=Message.Role.USER, content=NOTE)


# ---------------------------------------------------------------- the planning nodes


def test_the_analysis_prompt_holds_the_grounding_the_task_and_the_notes(session):
    with_note(session)
    ctx = investigated(session)
    nodes.analyze_codebase(ctx)
    call = FakeProvider.latest(asking="Your analysis:")
    assert missing(call.messages[0].content, a_system(ctx)) == []
    assert AGENT_A in call.request
    assert (
        missing(
            call.request,
            {
                **grounding(session, ctx),
                "the task": f"Task: {TASK}",
                "the human's notes": f"Notes from the human:\n- {NOTE}",
                "the request": "Analyze the code above for the task",
                "the answer's language": "Write your answer in English.",
            },
        )
        == []
    )


def test_the_analysis_and_the_proposal_prompts_start_alike_up_to_agent_as_role(session):
    """The local model's prompt cache holds what a prompt shares with the one before it: the
    proposal reads only its own parts after the analysis (llama.cpp reuses the common prefix)."""
    ctx = investigated(session)
    nodes.analyze_codebase(ctx)
    analysis = FakeProvider.latest(asking="Your analysis:")
    ctx = context(session, analysis=ANALYSIS)
    ctx.evidence = load_evidence(session.pk, nodes.INVESTIGATION)
    nodes.propose_changes(ctx)
    proposal = FakeProvider.latest(schema="Proposal")
    start = analysis.request[: analysis.request.index(AGENT_A) + len(AGENT_A)]
    assert proposal.messages[0].content == analysis.messages[0].content
    assert proposal.request.startswith(start)
    assert "Evidence from the codebase (untrusted data" in start


def test_the_first_proposal_prompt_holds_the_grounding_the_task_and_the_analysis(session):
    with_note(session)
    ctx = investigated(session, analysis=ANALYSIS)
    nodes.propose_changes(ctx)
    call = FakeProvider.latest(schema="Proposal")
    assert missing(call.messages[0].content, a_system(ctx)) == []
    assert AGENT_A in call.request
    assert (
        missing(
            call.request,
            {
                **grounding(session, ctx),
                "the task": f"Task: {TASK}",
                "the human's notes": f"Notes from the human:\n- {NOTE}",
                "the analysis": f"Analysis so far:\n{ANALYSIS}",
                "the request": "Propose the change as JSON.",
                "the evidence citation rule": "cites `path:line` and the evidence as [E#]",
                "the offered files rule": "chosen from the codebase's files offered",
                "the symbol rule": "Each step's symbol is the function or class that it changes",
                "the step rule": nodes.STEP_RULE,
                "the definitions offered": "The definitions a step may change, likeliest first, "
                "by file and line: todo/auth.py: `TokenStore` 26, `TokenStore.__init__` 29,",
                "the answer's language": "Write your answer in English.",
            },
        )
        == []
    )
    # The retry-only parts are absent from a first proposal.
    for absent in ("Reviewer's critique", "failed validation", "The human asked for"):
        assert absent not in call.request


def test_the_proposal_offers_definitions_of_retrievals_next_chunks_by_name_only(session, settings):
    # One chunk is shown as code; the definitions of the next ones are offered by name.
    settings.PLANAGENTS_RETRIEVAL_K = 1
    ctx = investigated(session, analysis=ANALYSIS)
    assert len(ctx.hits) == 1 and ctx.further, "the sample project has more chunks to offer"
    unshown = [
        name
        for name, where in ctx.definitions().items()
        if not any(
            h.path == where.path and h.start_line <= where.line <= h.end_line for h in ctx.hits
        )  # fmt: skip
        and not any(e.path == where.path and e.start <= where.line <= e.end for e in ctx.evidence)
    ]
    assert unshown, "only the code shown was offered"
    # Their files are not offered as files: a step that targets one gets its file from it.
    shown = set(candidate_paths(ctx.evidence, [h.path for h in ctx.hits]))
    only_further = {h.path for h in ctx.further} - shown
    assert only_further, "every file of the next chunks was offered anyway"
    assert not only_further & set(ctx.candidates())
    nodes.propose_changes(ctx)
    request = FakeProvider.latest(schema="Proposal").request
    listed = request.split("The definitions a step may change", 1)[1].split(". files:", 1)[0]
    assert any(f"`{name}`" in listed for name in unshown[:3]), listed
    code = request.split("Code context (untrusted):", 1)[1]
    assert code.count("\n### ") == 1, "more than the one chunk was shown as code"


def test_a_proposal_after_a_review_holds_the_reviewers_critique(session):
    ctx = investigated(session, proposal=proposal(), review=CRITIQUE, iteration=1)
    nodes.propose_changes(ctx)
    prompt = FakeProvider.prompt(schema="Proposal")
    assert f"Reviewer's critique of the previous proposal:\n{CRITIQUE}" in prompt


def test_a_proposal_retried_after_validation_holds_the_problems_found(session):
    validation = {"ok": False, "problems": [PROBLEM], "iteration": 1}
    ctx = investigated(session, proposal=proposal("todo/tokens.py"), iteration=1,
                       validation=validation, validation_failures=1)  # fmt: skip
    nodes.propose_changes(ctx)
    prompt = FakeProvider.prompt(schema="Proposal")
    assert f"The previous proposal failed validation:\n- {PROBLEM}" in prompt


def test_a_proposal_after_the_human_asked_for_changes_holds_their_request(session):
    ctx = investigated(session, proposal=proposal(), iteration=1, feedback=FEEDBACK)
    nodes.propose_changes(ctx)
    prompt = FakeProvider.prompt(schema="Proposal")
    assert f"The human asked for these changes:\n{FEEDBACK}" in prompt


def test_a_proposal_without_evidence_asks_for_files_as_labelled_in_the_code(session, settings):
    # Investigation off: the prompt's files rule is the one for retrieved code only.
    settings.PLANAGENTS_EVIDENCE_STEPS = 0
    ctx = context(session)
    nodes.investigate(ctx)
    nodes.propose_changes(ctx)
    prompt = FakeProvider.prompt(schema="Proposal")
    assert "exactly as labelled in the code context" in prompt
    assert "detail that cites `path:line`," in prompt


def test_the_review_prompt_holds_the_grounding_the_proposal_and_the_apps_checks(session):
    with_note(session)
    # The proposal changes the API while the task names TokenStore: the app has checks.
    ctx = investigated(session, proposal=proposal("todo/api.py"), iteration=1)
    nodes.review_and_refine(ctx)
    call = FakeProvider.latest(asking="Your review:")
    points = Message.objects.get(session=session, turn_key="checks:1").data["review_points"]
    assert missing(call.messages[0].content, a_system(ctx)) == []
    assert AGENT_B in call.request and AGENT_A not in call.prompt
    assert (
        missing(
            call.request,
            {
                **grounding(session, ctx),
                "the task": f"Task: {TASK}",
                "the human's notes": f"Notes from the human:\n- {NOTE}",
                "the proposal": "<proposal>\n**Proposal.** Store the issue time",
                "the proposal's files": "`todo/api.py`",
                "the app's checks": "<checks>\nFacts the app found about the proposal",
                "each check": points[0],
                "the checks request": "Say for each of the app's checks whether it matters",
                "the request": "Review Agent A's proposal",
                "the evidence citation rule": "Cite `path:line` and the evidence as [E#].",
                "the answer's language": "Write your answer in English.",
            },
        )
        == []
    )
    # The request ends with the list begun: asked for a plain "Your review:", the 1.5B model
    # copied the proposal in 2 of 4 replays (agents.prompts.OBJECTIONS_CUE).
    assert call.request.endswith(f"Your review: {OBJECTIONS_CUE}")


def test_the_objection_check_holds_the_evidence_and_the_numbered_objections(session):
    review = f"Two problems:\n1. {OBJECTION}\n2. {CRITIQUE}"
    ctx = investigated(session, proposal=proposal(), review=review, iteration=1)
    nodes.verify_review(ctx)
    call = FakeProvider.latest(schema="Verdicts")
    assert (
        missing(
            call.prompt,
            {
                "the evidence": "Evidence from the codebase (untrusted data):",
                "the evidence's items": "[E1] find_symbol(TokenStore)",
                "the numbered objections": f"1. {OBJECTION}\n2. {CRITIQUE}",
                "the request": "Check each objection against the evidence only.",
            },
        )
        == []
    )


def test_a_proposal_after_a_review_with_no_objection_is_told_so(session):
    ctx = investigated(session, proposal=proposal(), review="Looks good to me.", iteration=1)
    ctx.state.review = nodes.verify_review(ctx).changes["review"]
    nodes.propose_changes(ctx)
    prompt = FakeProvider.prompt(schema="Proposal")
    critique = f"Reviewer's critique of the previous proposal:\n{NO_OBJECTION_NOTE}"
    assert critique in prompt
    assert "discarded" not in prompt  # no objection was raised, so none was discarded


def test_agent_bs_review_begins_as_agent_as_proposal_did_up_to_the_role(session):
    # The local model's prompt cache reuses the longest prefix a slot holds: with each role
    # first, B's review read the grounding A's proposal had just read again (3,506 tokens,
    # 5 cached on xarray-2905).
    ctx = investigated(session, analysis=ANALYSIS)
    nodes.propose_changes(ctx)
    ctx = investigated(session, proposal=proposal(), iteration=1)
    nodes.review_and_refine(ctx)
    proposed = FakeProvider.prompt(schema="Proposal")
    reviewed = FakeProvider.prompt(asking="Your review:")
    shared = proposed[: len(os.path.commonprefix([proposed, reviewed]))]
    assert "Evidence from the codebase (untrusted data" in shared
    # They part at the role ("You are Agent A…", "You are Agent B…"), right after the task.
    role = shared.rindex("You are Agent ")
    assert shared[:role].rstrip().endswith(f"Task: {TASK}")
    assert proposed[role:].startswith(AGENT_A) and reviewed[role:].startswith(AGENT_B)


def test_the_final_plan_prompt_holds_the_proposal_the_critique_and_the_checks(session):
    with_note(session)
    ctx = investigated(session, proposal=proposal("todo/api.py"), review=CRITIQUE, iteration=1)
    nodes.finalize_plan(ctx)
    call = FakeProvider.latest(schema="PlanDraft")
    assert missing(call.messages[0].content, a_system(ctx)) == []
    assert AGENT_A in call.request
    assert (
        missing(
            call.request,
            {
                **grounding(session, ctx),
                "the task": f"Task: {TASK}",
                "the human's notes": f"Notes from the human:\n- {NOTE}",
                "the approved proposal": "Approved proposal:\n**Proposal.** Store the issue time",
                "the reviewer's critique": f"Reviewer's critique:\n{CRITIQUE}",
                "the app's checks": "<checks>\nFacts the app found about the proposal",
                "the request": "Write the final implementation plan as JSON.",
                "the evidence citation rule": "a detail citing `path:line` and the evidence as [E#]",
                "the step rule": nodes.STEP_RULE,
                "the offered files rule": "chosen from the codebase's files offered",
                "the answer's language": "Write your answer in English.",
            },
        )
        == []
    )


def test_a_change_sketch_prompt_holds_the_step_its_code_and_what_did_not_match(session):
    ctx = investigated(session, proposal=proposal(), iteration=1)
    name, where = next(iter(ctx.definitions().items()))
    path = where[0]
    draft = {
        "summary": "Drop tokens older than a day on lookup.",
        "effort": {"size": "S", "estimate": "1 day"},
        "decisions": [],
        "steps": [{"title": "Expire old tokens", "symbol": name,
                   "detail": "Drop tokens older than a day.", "files": [path]}],
        "files": [{"path": path, "action": "modify", "reason": "the code that changes"}],
        "new_files": [],
        "testing": ["A day-old token is refused."],
        "risks": ["Clock skew."],
    }  # fmt: skip
    wrong = {"first": "a line this code does not have", "lines": 1, "after": ["x = 1"]}
    FakeProvider.script("fake", draft, wrong)  # the plan, then a sketch that does not match
    nodes.finalize_plan(ctx)
    first, redo = FakeProvider.prompts(schema="ChangeSketch")[:2]
    parts = {
        "the task": f"Task: {TASK}",
        "the step": "Step 1 of the plan: Expire old tokens — Drop tokens older than a day.",
        "the definition's code": "The current code of `",
        "where it is": f"`, `{path}:",
        "the numbered code": "<code>\n",
        "the request": "Write the change this step makes to this code only, as JSON.",
    }
    assert missing(first, parts) == []
    assert "failed the check" not in first
    assert missing(redo, {**parts, "the mismatch": "Your last sketch failed the check:\n- "}) == []


def test_every_planning_prompt_is_in_the_language_of_the_task(session):
    PlanningSession.objects.filter(pk=session.pk).update(language="vi")
    ctx = investigated(session, proposal=proposal(), review=CRITIQUE, iteration=1)
    nodes.analyze_codebase(ctx)
    nodes.propose_changes(ctx)
    nodes.review_and_refine(ctx)
    nodes.finalize_plan(ctx)
    rule = "Write your answer in Vietnamese."
    asked = [
        FakeProvider.latest(asking="Your analysis:"),
        FakeProvider.latest(schema="Proposal"),
        FakeProvider.latest(asking="Your review:"),
        FakeProvider.latest(schema="PlanDraft"),
    ]
    for call in asked:
        assert rule in call.messages[0].content and rule in call.request, call.kind


# ---------------------------------------------------------------- investigation


def test_the_evidence_plan_prompt_holds_the_tools_the_profile_and_the_task(session):
    investigated(session)
    call = FakeProvider.latest(schema="EvidencePlan")
    assert (
        missing(
            call.prompt,
            {
                "the tool guide": TOOL_GUIDE,
                "the codebase profile": f"Codebase:\n{profile_summary(session)}",
                "the task": f"Task: {TASK}",
                "the step limit": "Plan at most 6 lookups as JSON.",
                "the answer's language": "Write your answer in English.",
            },
        )
        == []
    )


def test_a_second_round_of_lookups_sees_what_was_found_and_the_humans_answer(session):
    FakeProvider.script("fake", evidence_plan("clarify", "Should refresh tokens expire too?"))
    ctx = context(session)
    with pytest.raises(QuestionAsked):
        nodes.investigate(ctx)
    add_message(session.pk, role=Message.Role.USER, content="No, only access tokens.")
    FakeProvider.script("fake", {"steps": [], "next_action": "synthesize"})
    nodes.investigate(context(session))
    call = FakeProvider.latest(schema="EvidencePlan")
    assert (
        missing(
            call.prompt,
            {
                "the tool guide": TOOL_GUIDE,
                "the codebase profile": f"Codebase:\n{profile_summary(session)}",
                "the task": f"Task: {TASK}",
                "the question and its answer": "You asked the human: Should refresh tokens expire "
                "too?\nThe human answered: No, only access tokens.",
                "what was found": "Found so far:\n[E1] find_symbol(TokenStore)",
                "the request": "What is still missing to propose the change?",
            },
        )
        == []
    )


# ---------------------------------------------------------------- debate


@pytest.fixture
def debate_session(session):
    PlanningSession.objects.filter(pk=session.pk).update(mode="debate", max_exchanges=2)
    with_note(session)
    return PlanningSession.objects.get(pk=session.pk)


def test_the_debate_turns_hold_the_code_the_other_agents_reply_and_the_signal(debate_session):
    a_first = "A1: add an issued_at field to TokenStore in `todo/auth.py:1`."
    b_first = f"1. {OBJECTION}\n2. {CRITIQUE}"
    continue_ = {"signal": "CONTINUE", "reason": "The other agent should answer."}
    verdicts = {"verdicts": [
        {"objection": 1, "verdict": "keep", "correction": "", "reason": "E1 shows it"},
        {"objection": 2, "verdict": "discard", "correction": "", "reason": "not in E1"},
    ]}  # fmt: skip
    FakeProvider.script(
        "fake", evidence_plan(), a_first, continue_, b_first, continue_, verdicts,
        "A2: store issued_at.", continue_, "B2: fine.", continue_,
    )  # fmt: skip
    assert debate.run_debate(debate_session.pk) == debate.HANDOVER
    asked_a = FakeProvider.prompts(asking="Your proposal:")
    asked_b = FakeProvider.prompts(asking="Your critique:")
    assert len(asked_a) == len(asked_b) == 2
    shared = {
        "the evidence": "Evidence from the codebase (untrusted data",
        "the evidence's items": "[E1] find_symbol(TokenStore)",
        "the retrieved code": "Code context (untrusted):\n\n### todo/",
        "the codebase's rules": RULE,
        "the pinned context": PIN,
        "the task": f"Task: {TASK}",
        "the human's notes": f"The human said:\n- {NOTE}",
        "the answer's language": "Write your answer in English.",
    }
    assert missing(asked_a[0], {**shared, "the request": "Propose a concrete plan"}) == []
    assert AGENT_A in asked_a[0]
    assert missing(
        asked_b[0],
        {**shared, "Agent A's reply": f"<proposal>\n{a_first}\n</proposal>",
         "the request": "Critique Agent A's proposal"},
    ) == []  # fmt: skip
    assert asked_b[0].endswith(f"Your critique: {OBJECTIONS_CUE}")
    assert AGENT_B in asked_b[0]
    # A answers only the objection the evidence kept.
    assert f"<critique>\n1. {OBJECTION}\n</critique>" in asked_a[1]
    assert CRITIQUE not in asked_a[1]
    verify = FakeProvider.prompt(schema="Verdicts")
    assert f"1. {OBJECTION}\n2. {CRITIQUE}" in verify
    signal = FakeProvider.prompts(schema="TurnSignal")[0]
    assert missing(
        signal,
        {"the task": TASK, "the agent's reply": f"Your last reply:\n{a_first}",
         "the request": "Decide what happens next."},
    ) == []  # fmt: skip


def test_the_debates_plan_prompt_holds_the_discussion_and_the_grounding(debate_session):
    said = "A1: add an issued_at field to TokenStore in `todo/auth.py:1`."
    FakeProvider.script("fake", evidence_plan(), said, {"signal": "STOP", "reason": "Settled."})
    assert debate.run_debate(debate_session.pk) == debate.FINISHED
    assert debate.write_debate_plan(debate_session) is not None
    call = FakeProvider.latest(schema="PlanDraft")
    assert (
        missing(
            call.request,
            {
                "the evidence": "Evidence from the codebase (untrusted data",
                "the retrieved code": "Code context (untrusted):\n\n### todo/",
                "the codebase's rules": RULE,
                "the pinned context": PIN,
                "the task": f"Task: {TASK}",
                "the discussion": "Discussion:\n",
                "Agent A's turn in it": f"Agent A: {said}",
                "the human's note in it": f"Human: {NOTE}",
                "the evidence citation rule": "citing `path:line` and the evidence as [E#]",
                "the request": "Write the implementation plan the discussion arrived at",
            },
        )
        == []
    )


# ---------------------------------------------------------------- one section rewritten


def test_the_section_rewrite_prompt_holds_the_plan_the_section_and_the_instruction(session):
    ctx = investigated(session, proposal=proposal(), review=CRITIQUE, iteration=1)
    nodes.finalize_plan(ctx)
    plan = Plan.objects.get(session=session)
    instruction = "Say that old tokens are dropped lazily, on lookup."
    request = add_message(
        session.pk, role=Message.Role.USER, content=f"Rewrite the summary: {instruction}",
        data={"regenerate": {"plan": plan.pk, "section": "summary", "instruction": instruction}},
    )  # fmt: skip
    # A rewrite that does what was asked: a section that ignores its instruction is redone.
    FakeProvider.script("fake", {"summary": "Old tokens are dropped lazily, on lookup."})
    assert plan_writer.regenerate_section(request.pk) is not None
    call = FakeProvider.latest(schema="SummaryReply")
    assert TEAM in call.messages[0].content and AGENT_A in call.request
    assert (
        missing(
            call.request,
            {
                "the retrieved code": "Code context (untrusted):\n\n### todo/",
                "the task": f"Task: {TASK}",
                "the plan so far": f"The plan so far:\n{plan.markdown[:200]}",
                "the section as it is": f"The section to rewrite, Summary:\n{plan.structured['summary'][:80]}",
                "the instruction": f"The human's instruction for it: {instruction}",
                "the request": "Rewrite only Summary, following the instruction.",
                "the answer's language": "Write your answer in English.",
            },
        )
        == []
    )
