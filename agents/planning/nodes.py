"""The planning workflow's nodes. Each takes the node context and returns what to store in the
PlanningState and, where it branches, which node comes next."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from django.conf import settings

from agents import plan_rules, rules_gate
from agents import rules as rules_check
from agents.citations import (
    NEW_DEFINITION,
    Definition,
    cite_symbols,
    extract_citations,
    ground_steps,
    offered_definitions,
    sources_of,
)
from agents.decision_log import decision_log
from agents.echoes import (
    is_copied,
    with_details_from,
    with_targets_from,
    without_copied_sentences,
    without_looking_steps,
    without_looping,
    without_repeated_steps,
    without_unchanging_steps,
)
from agents.investigation.evidence import Evidence, candidate_paths, evidence_context
from agents.investigation.session import failed_frames, load_evidence, profile_summary
from agents.investigation.session import investigate as run_investigation
from agents.investigation.task_names import named_files
from agents.investigation.tools import Workspace
from agents.loops import hand_over, noted, session_loop
from agents.models import LLMCall
from agents.objections import without_unfinished_end
from agents.plan import (
    append_version,
    build_version,
    check_file,
    code_span,
    codebase_paths,
    render_plan,
    render_proposal,
    unique_files,
    with_step_files,
)
from agents.planning.sketching import sketch_steps
from agents.prompts import (
    AGENT_A,
    AGENT_B,
    OBJECTIONS_CUE,
    agent_messages,
    code_context,
    language_rule,
)
from agents.providers.base import ChatMessage
from agents.review_checks import action_risks, checks_block, review_points
from agents.runtime import TurnStream
from agents.schemas import NO_SYMBOL, PlanDraft, Proposal, merge_new_files, with_file_choices
from agents.transcript import hit_citations, human_notes, retrieve_for
from agents.turns import agent_for, structured_turn, text_turn
from agents.verification import flag_citations, kept, verify_objections
from conversations.models import Message, Plan, PlanningSession, PlanningState
from conversations.store import message_payload
from planagents.streaming import publish
from rag import index as rag_index
from rag import profile as rag_profile
from rag.models import CodeFile
from rag.navigation import Navigator
from rag.paths import FileSet, find_citations
from rag.pins import PinnedItem
from rag.retrieval import Hit, closest_paths, rerank_paths
from rag.roles import LEXICAL_ONLY

PROPOSAL_TOKENS = 1200
PLAN_TOKENS = 1600
REVIEW_TOKENS = 320
STEP_RULE = (
    "Each step changes the code and says how; finding, reading or understanding the code is "
    "not a step."
)
"""The 1.5B model's first step was "Identify the problematic line": nothing a developer does."""
_CHANGEABLE = frozenset({"function", "method", "class"})
"""The kinds of definition a step may be retargeted to by name (`NodeContext.defined`)."""
NEW_DEFINITION_FILES = 4
"""The candidate files a step may add a new definition to (the first ones: the enum's order is
the evidence's)."""


APP_REASON = re.compile(
    r"added by the app|\bThe task (?:names|quotes)\b|The reported traceback fails here"
)
"""How the app gives its reason for a file it adds to a plan. The model copies the wording from
the approved proposal: astropy-13977's plan listed seven more files "The task names
`__rlshift__` …, defined here; added by the app", names the task never wrote."""

DEFINITION_CHUNKS = 24
"""Retrieval's chunks whose definitions a step may change (agents.citations.offered_definitions):
the first PLANAGENTS_RETRIEVAL_K are shown as code, the rest only named."""


@dataclass
class NodeContext:
    session: PlanningSession
    state: PlanningState
    hits: list[Hit] = field(default_factory=list)
    further: list[Hit] = field(default_factory=list)
    """Retrieval's next chunks after `hits`, best first: not shown, their definitions offered."""
    paths: FileSet = field(default_factory=FileSet)
    evidence: list[Evidence] = field(default_factory=list)
    profile: str = ""
    pinned: list[PinnedItem] = field(default_factory=list)
    """The codebase's pins this session shows its agents ([P1]…)."""
    _definitions: dict[str, Definition] | None = field(default=None, repr=False)
    _candidates: tuple[tuple[int, int], tuple[str, ...]] | None = field(default=None, repr=False)
    _aside: frozenset[str] | None = field(default=None, repr=False)
    _named: list[tuple[str, str]] | None = field(default=None, repr=False)

    @classmethod
    def load(cls, session: PlanningSession, state: PlanningState) -> NodeContext:
        extra = state.feedback
        shown = settings.PLANAGENTS_RETRIEVAL_K
        found = retrieve_for(session, extra, max(shown, DEFINITION_CHUNKS))
        return cls(
            session,
            state,
            found[:shown],
            found[shown:],
            codebase_paths(session.codebase),
            load_evidence(session.pk, INVESTIGATION),
            profile_summary(session),
            pinned=rules_check.session_pins(session),
        )

    def grounding(self, code_budget: int = 4200) -> list[str]:
        """What every agent prompt starts with, the same for each node so a prompt cache holds
        it: the codebase profile, the evidence, the retrieved code (less once there is
        evidence). The node's own request comes after it."""
        parts = [f"Codebase:\n{self.profile}" if self.profile else ""]
        parts += rules_check.prompt_sections(self.session, self.pinned)  # rules, pins: bounded
        if self.evidence:
            parts.append(evidence_context(self.evidence))
            code_budget = min(code_budget, 1800)
        parts.append(code_context(self.hits, budget=code_budget))
        return [p for p in parts if p]

    def candidates(self) -> tuple[str, ...]:
        """The real files a proposal or plan may name: evidence first, then retrieval's
        chunks shown (not the next ones: a step targeting one of their definitions gets its
        file from the target; offered as files, astropy-13977's plan listed seven), where
        a method the task calls is followed down the imports from the first file (rag.rerank:
        the file doing the work moves up; the enum's order is the order the model reads)."""
        # A node asks twice (its prompt, then its schema); the context lives across nodes.
        key = (len(self.evidence), len(self.hits))
        if self._candidates is None or self._candidates[0] != key:
            found = candidate_paths(self.evidence, [h.path for h in self.hits])
            ordered = rerank_paths(self.session.codebase, self.session.task, found)
            aside = self.set_aside()
            self._candidates = (
                key,
                tuple(p for p in ordered if p in self.paths and p not in aside),
            )
        return self._candidates[1]

    def set_aside(self) -> frozenset[str]:
        """Vendored and generated files the task does not name: a plan never changes them
        (a fix goes in the project's own code, or upstream), so they are offered to no
        proposal or plan and left out of one's Files. The index knows each file's role."""
        if self._aside is None:
            kept = CodeFile.objects.filter(
                codebase_id=self.session.codebase_id, role__in=LEXICAL_ONLY
            ).values_list("path", flat=True)
            task = self.session.task
            self._aside = frozenset(p for p in kept if not _named_in(p, task))
        return self._aside

    def file_schema(self, schema: type[Proposal] | type[PlanDraft]) -> type[Any]:
        """`schema` with its files held to the candidates and each step's symbol to the
        definitions shown, once investigation found some."""
        candidates = self.candidates()
        if not (self.evidence and candidates):
            return schema
        new = tuple(f"{NEW_DEFINITION}{path}" for path in candidates[:NEW_DEFINITION_FILES])
        return with_file_choices(schema, candidates, (*self.definitions(), *new))

    def definitions(self) -> dict[str, Definition]:
        """The definitions a step may change, likeliest first, by name: file and lines. Those
        of vendored and generated files the task does not name are not offered (`set_aside`):
        a plan changes the project's own code."""
        if self._definitions is None:
            navigator = Navigator(rag_index.index_dir(self.session.codebase_id))
            sources = sources_of(self.evidence, self.hits)
            aside = self.set_aside()
            further = [s for s in sources_of((), self.further) if s.path not in aside]
            offered = offered_definitions(sources, further, navigator.outline)
            self._definitions = {n: d for n, d in offered.items() if d.path not in aside}
        return self._definitions

    def defined(self, name: str) -> list[tuple[str, Definition]]:
        """Every function, method or class of the project's own code named `name` exactly, or
        written `Class.method` and defined there, by qualified name and place (tests,
        vendored and generated files aside)."""
        navigator = Navigator(rag_index.index_dir(self.session.codebase_id))
        result = navigator.find_symbol(name)
        if result.match not in ("exact", "qualified"):
            return []
        name = name.rsplit(".", 1)[-1]
        aside = self.set_aside()
        return [
            (hit.qualified_name, Definition(hit.path, hit.start_line, hit.end_line))
            for hit in result.hits
            if hit.name == name
            and hit.kind in _CHANGEABLE
            and hit.path not in aside
            and hit.role != "test"
        ]

    def test_command(self) -> str:
        found = rag_profile.load(rag_index.index_dir(self.session.codebase_id))
        return found.test_command if found else ""

    def fill_files(self, data: dict[str, Any]) -> dict[str, Any]:
        """A reply in the plain shape, with what the model cannot be trusted with fixed by
        code: a "new" file that exists is modified instead, a file whose reason is the app's
        words (`APP_REASON`) is the app's to add or not, and a reply naming no file gets the
        files the evidence found."""
        data = cite_symbols(
            merge_new_files(data),
            self.definitions() if self.evidence else {},
            self.candidates() if self.evidence else (),
            sources_of(self.evidence, ()),
            self.defined if self.evidence else None,
        )
        files = []
        aside = self.set_aside()
        copied = False
        for entry in data.get("files") or []:
            resolved = self.paths.resolve(str(entry.get("path", "")))
            if APP_REASON.search(str(entry.get("reason") or "")):
                copied = True
                continue
            if resolved.path in aside:
                continue
            if entry.get("action") == "create" and resolved.found:
                entry = {**entry, "path": resolved.path, "action": "modify"}
            files.append(entry)
        data = _without_step_files(data, aside, self.paths)
        if not files and not copied and self.evidence:
            for item in self.evidence:
                if (
                    item.found
                    and item.path in self.paths
                    and item.path not in {f["path"] for f in files}
                ):
                    reason = f"Where the evidence points ([{item.label}]); the model named no file."
                    files.append({"path": item.path, "action": "modify", "reason": reason})
                if len(files) >= 2:
                    break
        listed = {f["path"] for f in files}
        for name, path in self.failed_at() if self.evidence else []:
            if path not in listed:
                listed.add(path)
                reason = f"The reported traceback fails here, in `{name}`; added by the app."
                files.append({"path": path, "action": "modify", "reason": reason})
        for path, why in self.named_files() if self.evidence else []:
            if path not in listed and path not in aside:
                listed.add(path)
                files.append(
                    {"path": path, "action": "modify", "reason": f"{why}; added by the app."}
                )
        return {**data, "files": files}

    def named_files(self) -> list[tuple[str, str]]:
        """The files the task itself names (a path, a quoted line, a definition written as
        code: agents.investigation.task_names), each with why. The task's own words decide
        first: a plan that leaves out the file the reporter pointed at needs a reason."""
        if self._named is None:
            workspace = Workspace.of(self.session.codebase)
            self._named = named_files(
                self.session.task,
                self.paths,
                workspace.navigator or Navigator(rag_index.index_dir(self.session.codebase_id)),
            )
        return self._named

    def failed_at(self) -> list[tuple[str, str]]:
        """(function, file) where each traceback pasted in the task failed in this codebase:
        the frame's own file, or, when the file moved since the reporter's version, the one
        file defining that function. A bug plan names that file whatever the model chose
        (seaborn-2848: the error surfaces in `_lookup_single`, the 0.5B plan named two other
        files)."""
        found: list[tuple[str, str]] = []
        navigator = Navigator(rag_index.index_dir(self.session.codebase_id))
        for name, path in failed_frames(self.session.task, self.paths):
            if path is None:
                hits = navigator.find_symbol(name).hits
                defined = {h.path for h in hits if h.name == name}
                path = defined.pop() if len(defined) == 1 else None
            if path is not None and path in self.paths:
                found.append((name, path))
        return found

    def review_points(self) -> list[str]:
        """What code can tell about the current proposal (agents.review_checks)."""
        navigator = Navigator(rag_index.index_dir(self.session.codebase_id))
        return review_points(
            self.state.proposal or {},
            self.evidence,
            self.paths,
            navigator.related,
            task=self.session.task,
            analysis=self.session.task_analysis or {},
        )

    def messages(self, role: str, shared: list[str], own: list[str]) -> list[ChatMessage]:
        """A turn's messages (agents.prompts.agent_messages): `shared`, what the turns of
        both agents start with, then the role, then the turn's `own` parts."""
        return agent_messages(
            role, self.session.task_analysis, self.session.language, shared=shared, own=own
        )

    def notes(self) -> str:
        notes = human_notes(self.session)
        return (
            ("\n\nNotes from the human:\n" + "\n".join(f"- {n}" for n in notes[-5:]))
            if notes
            else ""
        )


INVESTIGATION = "investigate"
"""The turn-key prefix of a session's investigation (it runs once, before the first proposal)."""


@dataclass
class NodeResult:
    changes: dict[str, Any] = field(default_factory=dict)
    next_node: str | None = None  # None: the table's default


def analyze_codebase(ctx: NodeContext) -> NodeResult:
    """Agent A's reading of the code as it is, after the investigation: it sees the evidence,
    and its prompt starts as the proposal's does (`turn_start`), so the local model's
    prompt cache holds that start for the proposal. Before the investigation, with a prompt of
    its own, the proposal read its 3,000-token start uncached (bench/logs/grounding-findings.md)."""
    shared = turn_start(ctx)
    prompt = (
        "Analyze the code above for the task: which files and functions matter and how they "
        "work today, citing `path:line`. Describe the code as it is; do not propose the change "
        "yet. At most 180 words. "
        f"{language_rule(ctx.session.language)}\n\nYour analysis:"
    )
    message = text_turn(
        ctx.session,
        agent_for(ctx.session, "A"),
        turn_key=f"analyze:{ctx.state.iteration}",
        node="analyze_codebase",
        messages=ctx.messages(AGENT_A, shared, [prompt]),
        max_tokens=320,
        # The 0.5B model "analyses" by pasting the code it was shown back: redone once.
        answering="\n\n".join(shared[:-1]),
        answering_label="the code context",
    )
    _store_citations(ctx, message)
    return NodeResult({"analysis": message.content})


def investigate(ctx: NodeContext) -> NodeResult:
    """Agent A plans what to look up; the app runs it with read-only tools ([E1]…)."""
    ctx.evidence = run_investigation(ctx.session, agent_for(ctx.session, "A"), key=INVESTIGATION)
    return NodeResult({})


def turn_start(ctx: NodeContext) -> list[str]:
    """What the analysis's, every proposal's and every review's prompt start with: the
    grounding, then the task."""
    return [*ctx.grounding(), f"Task: {ctx.session.task}{ctx.notes()}"]


def propose_changes(ctx: NodeContext) -> NodeResult:
    iteration = ctx.state.iteration + 1
    shared = turn_start(ctx)
    parts: list[str] = []
    if ctx.state.analysis:
        parts.append(f"Analysis so far:\n{ctx.state.analysis}")
    if ctx.state.proposal and ctx.state.review:
        parts.append(f"Reviewer's critique of the previous proposal:\n{ctx.state.review}")
    problems = ctx.state.validation.get("problems") if ctx.state.validation else None
    if problems and not ctx.state.validation.get("ok"):
        parts.append(
            "The previous proposal failed validation:\n" + "\n".join(f"- {p}" for p in problems)
        )
    if ctx.state.feedback:
        parts.append(f"The human asked for these changes:\n{ctx.state.feedback}")
    request = (
        "Propose the change as JSON. summary: two or three sentences on what changes and why. "
        "steps: the ordered implementation steps, each with a short title, a detail that cites "
        f"{_cite(ctx)}, and the files it touches. {STEP_RULE} {_files_rule(ctx)} "
        + language_rule(ctx.session.language)
    )
    parts.append(request)
    schema = ctx.file_schema(Proposal)
    message, proposal = structured_turn(
        ctx.session,
        agent_for(ctx.session, "A"),
        turn_key=f"propose:{iteration}",
        node="propose_changes",
        messages=ctx.messages(AGENT_A, shared, parts),
        schema=schema,
        render=lambda data, complete: render_proposal(
            merge_new_files(data), ctx.paths, complete=complete
        ),
        # On seaborn-3010 the 0.5B model's proposal ran past 600 tokens twice and the session
        # paused. The budget fits five full steps and their files; a reply cut off in its
        # files still keeps the files it finished (providers.base.salvage).
        max_tokens=PROPOSAL_TOKENS,
    )
    _store_citations(ctx, message)
    drafted = ctx.fill_files(proposal.model_dump())
    data, looked = without_looking_steps(without_copies(drafted, request, ctx.test_command()))
    data, idle, idle_files = without_unchanging_steps(data)
    _note_left_out(
        ctx, message, drafted, data, what="the proposal", looked=looked, idle=(idle, idle_files)
    )
    data = ground_steps(without_repeated_steps(data), sources_of(ctx.evidence, ctx.hits), ctx.paths)
    data = with_step_files(data, ctx.paths)
    return NodeResult({"proposal": data, "iteration": iteration})


def review_and_refine(ctx: NodeContext) -> NodeResult:
    proposal_md = render_proposal(ctx.state.proposal, ctx.paths)
    points = ctx.review_points()
    _show_checks(ctx, points)
    request = (
        "Review Agent A's proposal (between the <proposal> tags) against the code: what is "
        "wrong or missing, which files or tests it forgets, what you would change. "
        + ("Say for each of the app's checks whether it matters and why. " if points else "")
        + f"Cite {_cite(ctx)}. Write only your review, at most 180 words. "
        f"{language_rule(ctx.session.language)}\n\nYour review: {OBJECTIONS_CUE}"
    )
    shared = turn_start(ctx)
    own = [f"<proposal>\n{proposal_md}\n</proposal>", checks_block(points), request]
    message = text_turn(
        ctx.session,
        agent_for(ctx.session, "B"),
        turn_key=f"review:{ctx.state.iteration}",
        node="review_and_refine",
        messages=ctx.messages(AGENT_B, shared, own),
        max_tokens=REVIEW_TOKENS,
        # A "review" that restates the proposal, or the task and the instruction, is no review.
        answering=f"{proposal_md}\n{ctx.session.task}\n{request}",
        answering_label="Agent A's proposal and the task",
        # A review that objects to nothing (a refusal, a question back, praise) is asked once
        # more, then kept and shown as "no objection raised" (agents.objections).
        reviewing=f"{proposal_md}\n{ctx.session.task}",
    )
    _store_citations(ctx, message)
    review = message.content
    if _ran_out(message, REVIEW_TOKENS):  # its last sentence is unfinished: no objection
        review = without_unfinished_end(review)
    return NodeResult({"review": review})


def _ran_out(message: Message, max_tokens: int) -> bool:
    """Whether the reply's last call stopped at its token limit (the model was cut off)."""
    last = LLMCall.objects.filter(message=message).order_by("-pk").first()
    return last is not None and last.completion_tokens >= max_tokens


def _show_checks(ctx: NodeContext, points: list[str]) -> None:
    """The page shows what the app told Agent B about the proposal, before B's review."""
    if not points:
        return
    stream = TurnStream(
        ctx.session.pk,
        turn_key=f"checks:{ctx.state.iteration}",
        role=Message.Role.SYSTEM,
        node="review_and_refine",
    )
    if stream.existing() is None:
        stream.open()
        listed = "\n".join(f"- {p}" for p in points)
        stream.finish(
            content=f"**The app's checks of the proposal**, for Agent B to judge:\n{listed}",
            data={"review_points": points},
        )


def verify_review(ctx: NodeContext) -> NodeResult:
    """Agent B's objections checked against the evidence: only those kept or updated reach
    Agent A's next proposal (and the final plan). Nothing to check without evidence."""
    checked = verify_objections(
        ctx.session,
        agent_for(ctx.session, "A"),
        ctx.state.review,
        ctx.evidence,
        turn_key=f"verify:{ctx.state.iteration}",
        restating=f"{render_proposal(ctx.state.proposal or {}, ctx.paths)}\n{ctx.session.task}",
    )
    if checked is None:
        return NodeResult({})
    return NodeResult({"review": kept(checked) or NOTHING_KEPT})


def check_rules(ctx: NodeContext) -> NodeResult:
    """The proposal checked against the codebase's rules (no call when it has none). A critical
    violation holds approval at the checkpoint until the human overrides it with a reason."""
    proposal_md = render_proposal(ctx.state.proposal or {}, ctx.paths)
    key = rules_gate.proposal_key(ctx.state.iteration)
    rules_check.check(
        ctx.session, agent_for(ctx.session, "B"), "proposal", proposal_md, turn_key=key
    )
    return NodeResult({})


def check_plan_rules(ctx: NodeContext) -> NodeResult:
    """The final plan checked against the rules; the plan then says what the check found, the
    overrides the human gave and the pins the agents were shown."""
    plan = ctx.session.plans.order_by("-version").first()
    if plan is None or "rules_check" in plan.structured:
        return NodeResult({})  # no plan, or this one already carries its check (a re-run)
    key = f"rules:plan:{plan.version}"
    result = rules_check.check(
        ctx.session, agent_for(ctx.session, "B"), "plan", plan.markdown, turn_key=key
    )
    structured = {**plan.structured, **rules_check.plan_data(ctx.session.pk, result, ctx.pinned)}
    section = plan_rules.markdown(structured)
    markdown = f"{plan.markdown.rstrip()}\n\n{section}\n" if section else plan.markdown
    Plan.objects.filter(pk=plan.pk).update(markdown=markdown, structured=structured)
    if section:
        publish(ctx.session.pk, {"type": "plan.updated", "version": plan.version})
    return NodeResult({})


NOTHING_KEPT = "(Every objection was discarded: the evidence does not support it.)"
LOOP_NODES = ("propose_changes", "review_and_refine")
"""The replies the loop detector compares in planning mode."""


def validate_proposal(ctx: NodeContext) -> NodeResult:
    proposal = ctx.state.proposal or {}
    problems = proposal_problems(ctx.session, proposal, ctx.paths)
    ok = not problems
    failures = ctx.state.validation_failures + (0 if ok else 1)
    retry = not ok and failures <= settings.PLANAGENTS_MAX_VALIDATION_RETRIES
    loop_key = f"loop:{ctx.state.iteration}"
    loop = None
    if retry and not noted(ctx.session.pk, loop_key):
        # The previous failure counts only within this run of retries (not before a checkpoint).
        previous = (ctx.state.validation or {}).get("problems") or []
        loop = session_loop(
            ctx.session.pk,
            nodes=LOOP_NODES,
            problems=problems,
            previous_problems=previous if ctx.state.validation_failures else [],
        )
    looping = retry and (loop is not None or noted(ctx.session.pk, loop_key))
    retry = retry and not looping
    if ok:
        text = f"**Validation passed:** all {len(proposal.get('files', []))} file(s) check out against the codebase."
    else:
        listed = "\n".join(f"- {p}" for p in problems)
        tail = (
            "Sending it back to Agent A."
            if retry
            else "The agents are going in circles; the human decides."
            if looping
            else "Retries used up; the human decides."
        )
        text = f"**Validation found** {len(problems)} problem(s):\n{listed}\n\n{tail}"
    stream = TurnStream(
        ctx.session.pk,
        turn_key=f"validate:{ctx.state.iteration}",
        role=Message.Role.SYSTEM,
        node="validate_proposal",
    )
    if stream.existing() is None:
        stream.open()
        stream.finish(content=text)
    if loop is not None:
        hand_over(ctx.session.pk, loop, turn_key=loop_key)
    validation = {"ok": ok, "problems": problems, "iteration": ctx.state.iteration}
    return NodeResult(
        {"validation": validation, "validation_failures": failures if retry else 0},
        next_node="propose_changes" if retry else "checkpoint",
    )


def _cite(ctx: NodeContext) -> str:
    return "`path:line` and the evidence as [E#]" if ctx.evidence else "`path:line`"


LISTED_DEFINITIONS = 16
"""Definitions named in the request for a step's symbol (the schema's enum holds them all)."""


def _definition_choices(definitions: dict[str, Definition]) -> str:
    """The definitions a step's symbol may name, the likeliest first (grouped by file, with
    their first lines), for the request: a model that only meets the choices in the grammar
    picks "none", not knowing them."""
    by_file: dict[str, list[str]] = {}
    for name, where in list(definitions.items())[:LISTED_DEFINITIONS]:
        by_file.setdefault(where[0], []).append(f"`{name}` {where[1]}")
    listed = "; ".join(f"{path}: {', '.join(names)}" for path, names in by_file.items())
    more = len(definitions) - LISTED_DEFINITIONS
    return f"The definitions a step may change, likeliest first, by file and line: {listed}" + (
        f" (and {more} more)." if more > 0 else "."
    )


def _files_rule(ctx: NodeContext) -> str:
    if ctx.evidence and ctx.candidates():
        definitions = ctx.definitions()
        symbol = (
            "Each step's symbol is the function or class that it changes, "
            f'"{NEW_DEFINITION}<file>" when it adds a new one to that file, or "{NO_SYMBOL}" '
            f"when it changes no code. {_definition_choices(definitions)} "
            if definitions
            else ""
        )
        return (
            f"{symbol}files: every existing file touched, chosen from the codebase's files "
            "offered, with action (modify or delete) and reason. new_files: only files that do "
            "not exist yet, with their path and reason; usually none."
        )
    return (
        "files: every file touched, each with its path (for existing files, exactly as "
        "labelled in the code context), action (modify, create or delete) and reason."
    )


def proposal_problems(
    session: PlanningSession, proposal: dict[str, Any], paths: FileSet
) -> list[str]:
    problems: list[str] = []
    files = unique_files(proposal.get("files") or [])
    if not files:
        problems.append(
            "The proposal names no files; every change must say which files it touches."
        )
    for entry in files:
        action = entry.get("action") or "modify"
        checked = check_file(entry["path"], action, paths)
        path = code_span(checked.path)
        if checked.status == "invalid":
            problems.append(f"{path} is not a usable file path (it {checked.reason}).")
        elif checked.status == "missing":
            near = closest_paths(session.codebase, checked.path)
            hint = f" Did you mean {', '.join(code_span(p) for p in near)}?" if near else ""
            problems.append(f"{path} does not exist in the codebase (action: {action}).{hint}")
        elif action == "create" and checked.status == "exists":
            problems.append(f"{path} already exists; modify it instead of creating it.")
    return problems


def finalize_plan(ctx: NodeContext) -> NodeResult:
    proposal_md = render_proposal(ctx.state.proposal, ctx.paths)
    points = ctx.review_points()
    request = (
        "Write the final implementation plan as JSON. summary: a short paragraph on what the "
        "change does and why. effort: size S, M, L or XL and an estimate such as '2-3 days'. "
        "decisions: the design choices, each with its reason. steps: "
        f"ordered, each with a title, a detail citing {_cite(ctx)}, and its files. "
        f"{STEP_RULE} {_files_rule(ctx)} testing: the concrete tests to add or run. "
        "risks: the concrete failure cases of this change and how to guard against them. "
        + language_rule(ctx.session.language)
    )
    shared = [*ctx.grounding(code_budget=2500), f"Task: {ctx.session.task}{ctx.notes()}"]
    own = [
        f"Approved proposal:\n{proposal_md}",
        f"Reviewer's critique:\n{ctx.state.review}" if ctx.state.review else "",
        checks_block(points),
        request,
    ]
    message, draft = structured_turn(
        ctx.session,
        agent_for(ctx.session, "A"),
        # The checkpoint approved the proposal of this iteration, which stays the same until the
        # next proposal: a run that crashed after this turn finds it finished, not a new one.
        turn_key=f"finalize:{ctx.state.iteration}",
        node="finalize_plan",
        messages=ctx.messages(AGENT_A, shared, own),
        schema=ctx.file_schema(PlanDraft),
        render=lambda data, complete: render_plan(
            merge_new_files(data), ctx.paths, title=ctx.session.title, complete=complete
        ),
        max_tokens=PLAN_TOKENS,
    )
    _store_citations(ctx, message)
    drafted = ctx.fill_files(draft.model_dump())
    copied, looked = without_looking_steps(
        without_copies(drafted, request, ctx.test_command(), points)
    )
    copied, idle, idle_files = without_unchanging_steps(copied)
    # A step whose detail only says where takes what the approved proposal said to do there,
    # and a step that names no definition the one the approved proposal's step changed.
    data = with_details_from(copied, ctx.state.proposal or {})
    filled = (
        [
            n
            for n, (a, b) in enumerate(zip(copied["steps"], data["steps"], strict=False), start=1)
            if a is not b
        ]
        if data is not copied
        else []
    )
    data, targeted = with_targets_from(data, ctx.state.proposal or {})
    _note_left_out(
        ctx,
        message,
        drafted,
        data,
        what="the plan",
        filled=filled,
        looked=looked,
        idle=(idle, idle_files),
        emptied=_emptied_details(drafted.get("steps"), copied.get("steps")),
        targeted=targeted,
    )
    data = ground_steps(without_repeated_steps(data), sources_of(ctx.evidence, ctx.hits), ctx.paths)
    data = with_step_files(data, ctx.paths)
    # An action the task never asked for (deleting a file in a bug fix) is a risk, said so.
    unasked = action_risks(ctx.session.task, ctx.session.task_analysis or {}, data)
    if unasked:
        data["risks"] = [*unasked, *(r for r in data.get("risks") or [] if r not in unasked)]
    # Each step that changes a real definition shows its code and a sketch checked against it.
    data = sketch_steps(
        ctx.session,
        agent_for(ctx.session, "A"),
        data,
        key=f"sketch:{ctx.state.iteration}",
        cited=_cited_line,
    )
    # The disagreement behind the plan comes from the session's messages, not from the model.
    data["decision_log"] = decision_log(ctx.session)
    markdown, structured = build_version(
        data, ctx.session.codebase, title=ctx.session.title, task=ctx.session.task
    )
    # Keyed by its turn, not by a count: human edits and regenerations number versions too,
    # and a re-run of this turn must find its plan, not write over another version.
    note = f"Final plan of proposal {ctx.state.iteration}"
    plan = Plan.objects.filter(session=ctx.session, note=note).first() or append_version(
        ctx.session, markdown, structured, note=note
    )
    publish(ctx.session.pk, {"type": "plan.updated", "version": plan.version})
    return NodeResult({})


def _named_in(path: str, task: str) -> bool:
    """Whether the task names the file: its path, or its name with a folder or an extension
    that makes it unambiguous enough to count (`packages/urllib3/util.py`, `util.py`)."""
    return path in task or (PurePosixPath(path).name in task and "." in PurePosixPath(path).name)


def _without_step_files(
    data: dict[str, Any], aside: frozenset[str], paths: FileSet
) -> dict[str, Any]:
    """`data` whose steps no longer list files set aside (with_step_files would add them back
    to Files)."""
    if not aside:
        return data
    steps = []
    for step in data.get("steps") or []:
        if isinstance(step, dict) and step.get("files"):
            kept = [
                f
                for f in step["files"]
                if not (isinstance(f, str) and paths.resolve(f).path in aside)
            ]
            step = {**step, "files": kept}
        steps.append(step)
    return {**data, "steps": steps}


def _cited_line(step: dict[str, Any]) -> int | None:
    """The first line a step cites in its target's file (to show that part of a long
    definition), None when it cites none there."""
    target = step.get("target") or {}
    for cited in find_citations(str(step.get("detail") or "")):
        if cited.path == target.get("path") and cited.start != target.get("start"):
            return cited.start
    return None


def _without_loops(data: dict[str, Any]) -> dict[str, Any]:
    """The summary, Decisions, Testing, Risks and each step's detail with a looping model's
    repeated sentences taken out (`echoes.without_looping`)."""
    out = dict(data)
    for key in ("summary", "decisions", "testing", "risks"):
        value = out.get(key)
        if isinstance(value, str):
            out[key] = without_looping(value)
        elif isinstance(value, list):
            out[key] = [without_looping(v) if isinstance(v, str) else v for v in value]
    if isinstance(out.get("steps"), list):
        out["steps"] = [
            {**s, "detail": without_looping(s["detail"])}
            if isinstance(s, dict) and isinstance(s.get("detail"), str)
            else s
            for s in out["steps"]
        ]
    return out


def without_copies(
    data: dict[str, Any], request: str, test_command: str, checks: list[str] | None = None
) -> dict[str, Any]:
    """The plan with every field that copies the request's own words taken out: the 0.5B model
    writes "Two or three sentences on what changes and why." as the summary and paraphrases
    "the concrete tests to add or run" as its Testing. A plan shows nothing rather than the
    prompt; where code knows better, it fills the gap (the summary from the steps' titles, the
    tests from the codebase's test command). Sentences that paste the app's `checks` (shown
    to the model as facts, not as text for the plan) are taken out of every field: both local
    models appended them to each step, reason and test. A decision or risk that copies the
    summary is taken out too."""
    prose = ("summary", "decisions", "testing", "risks")  # a proposal has only the summary
    out = _without_loops(_without_checks(dict(data), "\n".join(checks or [])))
    for key in prose:
        value = out.get(key)
        if isinstance(value, str) and is_copied(value, request):
            out[key] = ""
        elif isinstance(value, list):
            out[key] = [v for v in value if not (isinstance(v, str) and is_copied(v, request))]
    # A decision, test or risk that is the summary or a step again is none of these (the 1.5B
    # model copies its summary into Decisions, and on the requests walk one step's detail into
    # Decisions, Testing and Risks and into the next step): the plan says it once, where it
    # first said it.
    if isinstance(out.get("steps"), list):
        out["steps"] = _without_repeated_details(out["steps"])
    said = [str(out.get("summary") or "")]
    said += [str(s.get("detail") or "") for s in out.get("steps") or [] if isinstance(s, dict)]
    said = [text for text in said if text.strip()]
    for key in ("decisions", "testing", "risks"):
        value = out.get(key)
        if said and isinstance(value, list):
            out[key] = [
                v
                for v in value
                if not (isinstance(v, str) and any(is_copied(v, text) for text in said))
            ]
    titles = [str(s.get("title", "")).strip() for s in out.get("steps") or [] if s.get("title")]
    if not str(out.get("summary") or "").strip() and titles:
        out["summary"] = "The change, step by step: " + "; ".join(titles) + "."
    if not out.get("testing") and data.get("testing") is not None:
        run = f"`{test_command}`" if test_command else "the project's tests"
        out["testing"] = [
            f"Add a test that reproduces the task's problem and fails before the change; run {run}."
        ]
    return out


def _without_repeated_details(steps: list[Any]) -> list[Any]:
    """The steps, each whose detail copies an earlier step's detail left with its title only
    (its files stay): a step "Add tests" whose detail is the first step's fix again says
    nothing the first did not."""
    if not isinstance(steps, list):
        return steps
    out: list[Any] = []
    details: list[str] = []
    for step in steps:
        detail = str(step.get("detail") or "") if isinstance(step, dict) else ""
        if detail.strip() and any(is_copied(detail, earlier) for earlier in details):
            step = {**step, "detail": ""}
        elif detail.strip():
            details.append(detail)
        out.append(step)
    return out


def _without_checks(data: dict[str, Any], checks: str) -> dict[str, Any]:
    if not checks:
        return data

    def clean(text: Any) -> Any:
        return without_copied_sentences(text, checks) if isinstance(text, str) else text

    out = dict(data)
    for key in ("summary", "decisions", "testing", "risks"):
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [c for c in (clean(v) for v in value) if c]
        elif isinstance(value, str):
            out[key] = clean(value)
    for key, fields in (("steps", ("title", "detail")), ("files", ("reason",))):
        if isinstance(out.get(key), list):
            out[key] = [
                {**item, **{f: clean(item.get(f)) for f in fields if f in item}}
                if isinstance(item, dict)
                else item
                for item in out[key]
            ]
    return out


def _note_left_out(
    ctx: NodeContext,
    message: Message,
    drafted: dict[str, Any],
    kept: dict[str, Any],
    *,
    what: str,
    filled: Sequence[int] = (),
    looked: Sequence[str] = (),
    idle: tuple[Sequence[str], Sequence[str]] = ((), ()),
    emptied: Sequence[str] = (),
    targeted: Sequence[int] = (),
) -> None:
    """Say on the finalize message what the plan left out of the model's draft (fields that
    repeated the instructions or the plan itself; `emptied`: the titles of steps whose detail
    repeated an earlier step's), so the session page and the plan page tell one story; the
    draft as written stays in the Trace."""
    dropped: list[str] = []
    for key in ("summary", "decisions", "testing", "risks"):
        before, after = drafted.get(key), kept.get(key)
        if isinstance(before, list):
            gone = [v for v in before if isinstance(v, str) and v not in (after or [])]
        else:
            gone = [before] if isinstance(before, str) and before and before != after else []
        dropped += [f"{key.capitalize()}: “{v[:80]}”" for v in gone]
    dropped += [f"the detail of step “{title[:60]}”" for title in emptied]
    taken = [str(n) for n in filled]
    idle_titles, idle_files = idle
    if not dropped and not taken and not looked and not idle_titles and not targeted:
        return
    notes = []
    if dropped:
        notes.append(
            f"Left out of {what}: {len(dropped)} item(s) that repeat the instructions, or "
            f"the summary or a step of {what}, instead of saying something of their own ("
            + "; ".join(dropped)
            + ")."
        )
    if taken:
        notes.append(
            f"Step {', '.join(taken)} said only where to change the code, or repeated an "
            f"earlier step; {what} adds what the approved proposal said to do there."
        )
    if targeted:
        notes.append(
            f"Step {', '.join(str(n) for n in targeted)} named no definition; {what} keeps the "
            "one the approved proposal's step changed."
        )
    if looked:
        titles = "; ".join(f"“{t[:80]}”" for t in looked)
        notes.append(
            f"Left out of {what}: {len(looked)} step(s) that only look at the code, which the "
            f"investigation did ({titles})."
        )
    if idle_titles:
        titles = "; ".join(f"“{t[:80]}”" for t in idle_titles)
        files = ", ".join(code_span(p) for p in idle_files)
        notes.append(
            f"Left out of {what}: {len(idle_titles)} step(s) that change nothing ({titles})"
            + (f", and {files}, which only they named." if files else ".")
        )
    note = "\n\n_" + " ".join(notes) + "_"
    if note in message.content:  # a re-run of this node after a crash
        return
    message.content += note
    Message.objects.filter(pk=message.pk).update(content=message.content)
    publish(ctx.session.pk, {"type": "message.end", "message": message_payload(message)})


def _emptied_details(drafted: Any, kept: Any) -> list[str]:
    """The titles of the kept steps whose detail the draft had and the plan left empty
    (`_without_repeated_details`)."""
    if not isinstance(drafted, list) or not isinstance(kept, list):
        return []
    had = {
        str(s.get("title") or ""): str(s.get("detail") or "")
        for s in drafted
        if isinstance(s, dict)
    }
    return [
        str(s.get("title") or "")
        for s in kept
        if isinstance(s, dict)
        and not str(s.get("detail") or "").strip()
        and had.get(str(s.get("title") or ""), "").strip()
    ]


def _store_citations(ctx: NodeContext, message: Message) -> None:
    cited = [c.as_dict() for c in extract_citations(ctx.session.codebase, message.content)]
    seen = {(c["path"], c["start"], c["end"]) for c in cited}
    context = [c for c in hit_citations(ctx.hits) if (c["path"], c["start"], c["end"]) not in seen]
    Message.objects.filter(pk=message.pk).update(
        citations=cited + [{**c, "context": True} for c in context]
    )
    flag_citations(ctx.session, message, ctx.evidence)
