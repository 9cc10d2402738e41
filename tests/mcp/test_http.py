"""The MCP server over Streamable HTTP at /mcp/ inside a real daphne (started as `make run`
starts it), driven by the SDK's own client with API tokens: a codebase sent as base64, a plan
made with the scripted provider and read back, another user's plan and codebase refused, a
read token kept from writing, and a request without a live token refused before MCP."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.api.server import Server, daphne, manage
from tests.mcp.world import MAKE_USERS, TASK, data, error, make_users, server_env, shop_zip


@dataclass
class World:
    server: Server
    write: str
    read: str
    others: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("mcp-http")
    env = server_env(folder)
    write, read, others = make_users(env)
    extra = {k: env[k] for k in env if k.startswith("PLANAGENTS_") or k == "HF_HUB_OFFLINE"}
    with daphne(folder, extra) as server:
        yield World(server, write, read, others, env)


@asynccontextmanager
async def connected(world: World, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)
    )
    async with (
        http,
        Client(streamable_http_client(f"{world.server.url}/mcp/", http_client=http)) as client,
    ):
        yield client


def post(world: World, headers: dict[str, str]) -> tuple[int, str]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(
        f"{world.server.url}/mcp/",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer pa_made-up"}, {"Authorization": "Token pa_x"}, "revoked-like"],
)
def test_a_request_without_a_live_token_is_refused_before_mcp(world, headers):
    if headers == "revoked-like":
        headers = {"Authorization": f"Bearer {world.write}x"}

    status, body = post(world, headers)

    assert status == 401
    assert "Send a live API token" in json.loads(body)["detail"]


async def test_an_agent_adds_a_codebase_plans_and_reads_the_plan_over_http(world):
    progress: list[tuple[float, str | None, float]] = []

    async with connected(world, world.write) as client:
        added = data(
            await client.call_tool(
                "add_codebase",
                {"content_base64": base64.b64encode(shop_zip()).decode(), "filename": "shop.zip"},
            )
        )
        assert added["status"] == "ready" and added["file_count"] == 10

        hits = data(
            await client.call_tool(
                "search_code", {"codebase": added["id"], "query": "cart total price"}
            )
        )["hits"]
        assert hits and all(
            h["citation"] == f"{h['path']}:{h['start_line']}-{h['end_line']}" for h in hits
        )
        assert "shop/cart.py" in {h["path"] for h in hits}

        started = time.monotonic()

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, message, time.monotonic() - started))

        result = await client.call_tool(
            "plan_change",
            {"codebase": added["id"], "task": TASK, "mode": "planning", "models": ["fake", "fake"]},
            progress_callback=on_progress,
        )
        elapsed = time.monotonic() - started
        made = data(result)
        plan = made["plan"]
        assert made["state"]["status"] == "completed"
        assert json.loads(result.content[1].text)["quality_line"] == plan["quality_line"]  # type: ignore[union-attr]
        assert progress and progress[-1][2] <= elapsed
        print(
            f"\nMCP plan_change: first progress {progress[0][2]:.2f}s, end to end {elapsed:.2f}s, {len(progress)} notifications"
        )

        session = plan["session"]
        status = data(await client.call_tool("plan_status", {"session": session}))
        assert status["status"] == "completed" and status["plan_version"] == 1
        speckit = await client.call_tool(
            "get_plan", {"session": session, "version": 1, "format": "speckit"}
        )
        assert "specs/" in speckit.content[0].text  # type: ignore[union-attr]
        latest = await client.read_resource(f"plan://{session}/latest")
        assert latest.contents[0].text == plan["markdown"]  # type: ignore[union-attr]

    async with connected(world, world.others) as theirs:
        assert f"No session {session} of yours" in error(
            await theirs.call_tool("get_plan", {"session": session})
        )
        assert f"No session {session} of yours" in error(
            await theirs.call_tool("revise_plan", {"session": session, "instruction": "mine now"})
        )
        assert "No codebase" in error(
            await theirs.call_tool("find_symbol", {"codebase": added["id"], "name": "Cart"})
        )
        with pytest.raises(Exception, match="No session"):
            await theirs.read_resource(f"plan://{session}/1")
        assert data(await theirs.call_tool("list_codebases", {})) == []

    async with connected(world, world.read) as reader:
        assert "read-only" in error(
            await reader.call_tool("plan_change", {"codebase": added["id"], "task": TASK})
        )
        assert (
            data(await reader.call_tool("plan_status", {"session": session}))["session"] == session
        )


async def test_a_debate_ends_with_its_plan_when_the_agents_hand_over(world):
    async with connected(world, world.write) as client:
        upload = {"content_base64": base64.b64encode(shop_zip()).decode(), "filename": "shop.zip"}
        codebase = data(
            await client.call_tool("add_codebase", {**upload, "allow_duplicate": True})
        )["id"]
        made = data(
            await client.call_tool(
                "plan_change", {"codebase": codebase, "task": TASK, "mode": "debate"}
            )
        )
    assert made["state"]["mode"] == "debate"
    assert made["plan"]["version"] == 1 and made["plan"]["markdown"].startswith("# ")


async def test_a_local_git_path_is_refused_unless_the_server_allows_it(world, tmp_path):
    async with connected(world, world.write) as client:
        refused = error(await client.call_tool("add_codebase", {"git_url": str(tmp_path)}))
    assert "Local paths are refused on this server (PLANAGENTS_GIT_ALLOW_LOCAL is off)" in refused


REVOKE = (
    "from api.models import ApiToken; from api.services import digest, revoke_token; "
    "t = ApiToken.objects.get(digest=digest({secret!r})); revoke_token(t.owner, t.pk)"
)


async def test_a_token_revoked_mid_session_is_refused_at_its_next_call(world):
    write, _read, _others = make_users_for(world, "late")
    async with connected(world, write) as client:
        assert data(await client.call_tool("list_codebases", {})) == []
        manage(world.env, "shell", "-c", REVOKE.format(secret=write))
        with pytest.raises(MCPError, match="error response"):
            await client.call_tool("list_codebases", {})
    assert post(world, {"Authorization": f"Bearer {write}"})[0] == 401  # what the client got


def make_users_for(world: World, prefix: str) -> tuple[str, str, str]:
    script = MAKE_USERS.replace("'owner'", f"'{prefix}-owner'").replace(
        "'other'", f"'{prefix}-other'"
    )
    return tuple(manage(world.env, "shell", "-c", script).split()[-3:])  # type: ignore[return-value]
