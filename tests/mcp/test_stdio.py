"""The MCP server over stdio (`manage.py mcp` in a child process), driven by the SDK's own
client: a codebase added from a zip on disk, a plan made with the scripted provider and read
back, another user's plan refused, and a server started for nobody refused."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.world import TASK, data, error, make_users, server_env, shop_repository, shop_zip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp-stdio")
    env = server_env(folder)
    env["PLANAGENTS_GIT_ALLOW_LOCAL"] = "1"  # the test's repository is a local path
    tokens = make_users(env)
    pack = folder / "shop.zip"
    pack.write_bytes(shop_zip())
    shop_repository(folder / "shop-repo")
    return env, tokens, pack


@asynccontextmanager
async def served(env: dict[str, str], *args: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", *args], env=env, cwd=str(ROOT)
    )
    async with Client(params, read_timeout_seconds=300) as client:
        yield client


async def test_an_agent_adds_a_codebase_plans_and_reads_the_plan_over_stdio(world):
    env, (write, _read, _others), pack = world
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with served(env, "--user", "owner") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"add_codebase", "plan_change", "get_plan", "revise_plan"} <= tools

        added = data(await client.call_tool("add_codebase", {"path": str(pack)}))
        assert added["status"] == "ready" and added["file_count"] == 10

        found = data(
            await client.call_tool("find_symbol", {"codebase": added["id"], "name": "Cart.total"})
        )
        assert found["hits"][0]["location"].startswith("shop/cart.py:")

        result = await client.call_tool(
            "plan_change",
            {"codebase": added["id"], "task": TASK, "models": ["fake"]},
            progress_callback=on_progress,
        )
        made = data(result)
        plan = made["plan"]
        assert made["state"]["status"] == "completed"
        assert result.content[0].text == plan["markdown"]  # type: ignore[union-attr]
        assert plan["version"] == 1 and plan["quality_line"].startswith(
            str(plan["quality"]["steps"])
        )
        assert any("Step 1 of" in (m or "") for _, _, m in progress), progress

        session = plan["session"]
        read = await client.call_tool("get_plan", {"session": session, "format": "json"})
        assert f'"session": {session}' in read.content[0].text  # type: ignore[union-attr]
        resource = await client.read_resource(f"plan://{session}/1")
        assert resource.contents[0].text == plan["markdown"]  # type: ignore[union-attr]

        progress.clear()
        revised = data(
            await client.call_tool(
                "revise_plan",
                {"session": session, "instruction": "Also cover an empty cart."},
                progress_callback=on_progress,
            )
        )
        assert revised["plan"]["version"] == 2 and revised["state"]["status"] == "completed"
        assert progress, "a revision reports its progress too"
        first = await client.read_resource(f"plan://{session}/1")
        assert first.contents[0].text == plan["markdown"]  # type: ignore[union-attr]

    async with served(env, "--user", "other") as theirs:
        refused = error(await theirs.call_tool("get_plan", {"session": session}))
        assert f"No session {session} of yours" in refused
        assert "No codebase" in error(
            await theirs.call_tool("search_code", {"codebase": added["id"], "query": "cart"})
        )


def test_the_command_refuses_to_serve_nobody(world):
    env = {k: v for k, v in world[0].items() if k != "PLANAGENTS_TOKEN"}
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "--user NAME or $PLANAGENTS_TOKEN" in done.stderr


def test_a_revoked_or_unknown_token_is_refused_at_start(world):
    env = {**world[0], "PLANAGENTS_TOKEN": "pa_made-up"}
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "token is missing, unknown or revoked" in done.stderr


async def test_an_agent_plans_on_a_codebase_added_from_a_local_git_repository(world):
    env, _tokens, pack = world
    async with served(env, "--user", "owner") as client:
        added = data(
            await client.call_tool(
                "add_codebase", {"git_url": str(pack.parent / "shop-repo"), "ref": "main"}
            )
        )
        assert added["status"] == "ready" and added["file_count"] == 10

        made = data(await client.call_tool("plan_change", {"codebase": added["id"], "task": TASK}))

    assert made["state"]["status"] == "completed"
    assert made["plan"]["version"] == 1 and "shop/" in made["plan"]["markdown"]


async def test_a_greeting_is_answered_and_the_call_says_there_is_no_plan(world):
    env, _tokens, pack = world
    async with served(env, "--user", "owner") as client:
        added = {"path": str(pack), "allow_duplicate": True}
        codebase = data(await client.call_tool("add_codebase", added))["id"]
        result = await client.call_tool("plan_change", {"codebase": codebase, "task": "hello"})

    state = data(result)
    assert state["status"] == "completed" and state["plan_version"] is None
    assert (
        state["detail"].startswith("The session ended without a plan: ")
        and len(state["detail"]) > 40
    )
