"""The MCP server: PlanAgents' tools and plan resources for coding agents (Claude Code,
Cursor, Codex, Cline…), on the official MCP SDK (`mcp.server.mcpserver.MCPServer`, the SDK
2 name of FastMCP). One server per transport, built by `build(identify)`: `identify` says who
each call acts for (mcp_server.identity). Every tool is a thin shell over mcp_server.codebases
and mcp_server.plans, which call the web app's own services."""

import json
import time
from typing import Any

import anyio
from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent

from mcp_server import codebases, follow, plans
from mcp_server.identity import Caller, Identify
from rag.models import Codebase

INSTRUCTIONS = """PlanAgents plans a code change with two LLM agents on an uploaded codebase and
checks every path and name of the plan against the code. Add a codebase (add_codebase; it is
indexed in the background), look around (search_code, find_symbol), then plan_change: it
reports progress while the agents work and returns the plan as markdown and as JSON with its
quality line. revise_plan asks for changes; get_plan reads any version in any export format.
Plans are also resources: plan://<session>/<version> (or /latest)."""

INDEX_WAIT_SECONDS = 600


def _plan_call_result(snap: plans.Snapshot, plan: dict[str, Any] | None) -> CallToolResult:
    """The plan as markdown, then as JSON (its data, quality and quality line); or, when the
    session rests without one, where it is and what it waits for."""
    state = snap.as_dict()
    if plan is None:
        why = snap.error or (
            f"The proposal breaks critical rule(s) {', '.join(snap.blocking)}: a human must "
            "approve it with a reason on the session's page, or ask for changes (revise_plan)."
            if snap.blocking
            else "The agents wait for you: answer with revise_plan."
            if snap.status == plans.Status.AWAITING_HUMAN
            else "Still working: plan_status follows it."
            if snap.status == plans.Status.RUNNING
            else f"The session ended without a plan: {snap.reply}"
            if snap.reply
            else "The session ended without a plan."
        )
        state["detail"] = why
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(state, indent=1))],
            structured_content=state,
            is_error=snap.status == plans.Status.FAILED,
        )
    result = {"state": state, "plan": plan}
    return CallToolResult(
        content=[
            TextContent(type="text", text=plan["markdown"]),
            TextContent(
                type="text",
                text=json.dumps(
                    {k: v for k, v in plan.items() if k != "markdown"}, indent=1, default=str
                ),
            ),
        ],
        structured_content=result,
    )


def build(identify: Identify) -> MCPServer:
    server = MCPServer("planagents", instructions=INSTRUCTIONS, log_level="WARNING")

    async def caller(ctx: Context) -> Caller:
        request = ctx.request_context.request
        return await sync_to_async(identify)(request)

    async def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await sync_to_async(fn)(*args, **kwargs)

    @server.tool()
    async def list_codebases(ctx: Context) -> list[dict[str, Any]]:
        """Your codebases, newest first: id, name, status (pending, indexing, ready, failed),
        counts and languages."""
        return await run(codebases.list_codebases, await caller(ctx))

    @server.tool()
    async def add_codebase(
        ctx: Context,
        path: str = "",
        content_base64: str = "",
        filename: str = "",
        git_url: str = "",
        ref: str = "",
        name: str = "",
        allow_duplicate: bool = False,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Add a codebase: a git repository (`git_url`, https or ssh, and `ref`: a branch,
        tag or commit, the default branch if empty; fetched shallow, with time and size
        limits), or a zip of a repository or a Repomix pack: `path` to a file on the server's
        machine (stdio only) or its bytes as `content_base64` with `filename`. It is checked as
        on the web page's upload form and indexed in the background; with `wait` the call
        reports the indexing's progress and returns once it is ready (or failed)."""
        who = await caller(ctx)
        if git_url and (path or content_base64):
            raise ToolError("Give a git URL or a file, not both.")
        codebase = (
            await run(codebases.add_from_git, who, url=git_url, ref=ref, name=name)
            if git_url
            else await run(
                codebases.add_codebase,
                who,
                path=path,
                content_base64=content_base64,
                filename=filename,
                name=name,
                allow_duplicate=allow_duplicate,
            )
        )
        deadline = time.monotonic() + INDEX_WAIT_SECONDS
        said = -1
        while wait and time.monotonic() < deadline:
            codebase = await run(codebases.indexing_state, who, codebase.pk)
            if codebase.progress != said:
                said = codebase.progress
                stage = codebase.progress_stage or codebase.get_status_display()
                await ctx.report_progress(codebase.progress, 100, f"Indexing: {stage}")
            if codebase.status in (Codebase.Status.READY, Codebase.Status.FAILED):
                break
            await anyio.sleep(follow.POLL_SECONDS)
        row = await run(codebases.described, codebase)
        if row["status"] == Codebase.Status.FAILED:
            raise ToolError(f"Indexing failed: {row['error']}")
        return row

    @server.tool()
    async def search_code(ctx: Context, codebase: int, query: str, k: int = 8) -> dict[str, Any]:
        """Search a ready codebase (hybrid: vectors, BM25, symbols, paths); each hit cites
        `path:start-end` and shows its code."""
        return await run(codebases.search_code, await caller(ctx), codebase, query, k)

    @server.tool()
    async def find_symbol(ctx: Context, codebase: int, name: str) -> dict[str, Any]:
        """Where a function, class or method is defined: `name`, `Class.method`,
        `pkg.module.func` or `path/to/file.py::Class.method`. Suggests close names when none
        matches."""
        return await run(codebases.find_symbol, await caller(ctx), codebase, name)

    @server.tool()
    async def plan_change(
        ctx: Context,
        codebase: int,
        task: str,
        mode: str = "planning",
        models: list[str] | None = None,
        wait_seconds: float = follow.DEFAULT_WAIT_SECONDS,
    ) -> CallToolResult:
        """Plan a change: start a session on one of your ready codebases and follow it, with
        progress notifications, until the plan is written. `mode`: planning (propose, review,
        validate, then the final plan) or debate. `models`: Agent A's and Agent B's model
        profiles (the server's default if none). The proposal is approved at the checkpoint
        unless it breaks a critical rule of the codebase. Returns the plan as markdown and as
        JSON with its quality line, or where the session waits."""
        who = await caller(ctx)
        session_id = await run(plans.start, who, codebase, task, mode, list(models or []))
        snap = await follow.follow(ctx, who, session_id, wait_seconds)
        plan = await run(plans.plan_result, who, session_id) if snap.plan_version else None
        return _plan_call_result(snap, plan)

    @server.tool()
    async def plan_status(ctx: Context, session: int) -> dict[str, Any]:
        """Where a session is: status, workflow step, its latest plan version, rules that
        block approval, its error."""
        return (await run(plans.snapshot, await caller(ctx), session)).as_dict()

    @server.tool()
    async def get_plan(
        ctx: Context, session: int, version: int | None = None, format: str = "markdown"
    ) -> str:
        """A session's plan (its latest version, or `version`) as `markdown`, or in an export
        format: json, github, handoff, speckit, kiro, agents."""
        who = await caller(ctx)
        if format == "markdown":
            return (await run(plans.plan_result, who, session, version))["markdown"]
        return await run(plans.export, who, session, version, format)

    @server.tool()
    async def revise_plan(
        ctx: Context,
        session: int,
        instruction: str,
        wait_seconds: float = follow.DEFAULT_WAIT_SECONDS,
    ) -> CallToolResult:
        """Ask for changes to a plan (`instruction`, as you would on the plan page): the agents
        revise the proposal and write the next plan version, reported like plan_change. Also
        answers the agents when they wait for you."""
        who = await caller(ctx)
        await run(plans.revise, who, session, instruction)
        snap = await follow.follow(ctx, who, session, wait_seconds)
        plan = await run(plans.plan_result, who, session) if snap.plan_version else None
        return _plan_call_result(snap, plan)

    @server.resource(
        "plan://{session}/{version}",
        name="plan",
        description="A plan version as markdown; `latest` for the newest.",
        mime_type="text/markdown",
    )
    async def plan_resource(session: str, version: str, ctx: Context) -> str:
        if not session.isdigit() or not (version.isdigit() or version == "latest"):
            raise ResourceError("A plan is plan://<session id>/<version number or latest>.")
        number = None if version == "latest" else int(version)
        try:
            plan = await run(plans.plan_result, await caller(ctx), int(session), number)
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        return str(plan["markdown"])

    return server
