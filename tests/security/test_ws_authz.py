"""The session websocket, attacked through the app's real router: the ASGI application with
its origin check and AuthMiddlewareStack, logged in by a real session cookie.

Each frame the consumer understands is tried where it would do something for the owner (the
control test shows it does), then by someone it must refuse: another user, nobody, a foreign
origin, the owner after the session changed hands, and another user who names the owner's
session inside frames sent on their own socket."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from conversations.consumers import CONTROL_ACTIONS, FRAME_TYPES
from conversations.models import Message, Plan, PlanningSession, PlanningState
from rag.models import Codebase
from tests.security.sockets import socket

pytestmark = pytest.mark.django_db(transaction=True)

MARKER = "zq7-ws-owner-only-5521"
RUNNING = PlanningSession.Status.RUNNING
AWAITING = PlanningSession.Status.AWAITING_HUMAN
TIMEOUT = 10


@dataclass(frozen=True)
class Frame:
    body: dict[str, Any]
    status: str  # the session's status where the frame does something for the owner
    node: str  # and its workflow node
    reads: bool = False  # answers with the owner's messages rather than changing anything
    plan: bool = False  # the session has a plan (what Revise reopens)


# Every frame the consumer takes, each control action on its own.
FRAMES = {
    "resume": Frame({"type": "resume", "after_seq": 0}, RUNNING, "propose_changes", reads=True),
    "history": Frame(
        {"type": "history", "after_seq": 0, "before_seq": 99}, RUNNING, "propose_changes", True
    ),
    "user.message": Frame({"type": "user.message", "text": "pwned"}, RUNNING, "propose_changes"),
    "control:approve": Frame({"type": "control", "action": "approve"}, AWAITING, "checkpoint"),
    "control:modify": Frame(
        {"type": "control", "action": "modify", "text": "pwned"}, AWAITING, "checkpoint"
    ),
    "control:stop": Frame({"type": "control", "action": "stop"}, RUNNING, "propose_changes"),
    "control:continue": Frame(
        {"type": "control", "action": "continue"}, AWAITING, "analyze_codebase"
    ),
    "control:cancel": Frame({"type": "control", "action": "cancel"}, RUNNING, "propose_changes"),
    "control:revise": Frame(
        {"type": "control", "action": "revise"},
        PlanningSession.Status.COMPLETED,
        "completed",
        plan=True,
    ),
}


@pytest.fixture(autouse=True)
def no_jobs(monkeypatch):
    """An accepted action would start the session's job; these tests look at the action only."""
    monkeypatch.setattr("conversations.services._dispatch_run", lambda session_id: None)


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("ws-owner", password="owner-pass-123")


@pytest.fixture
def other(django_user_model):
    return django_user_model.objects.create_user("ws-other", password="other-pass-123")


def make_session(
    owner: Any, *, status: str, node: str, text: str, plan: bool = False
) -> PlanningSession:
    codebase = Codebase.objects.create(owner=owner, name="cb", status=Codebase.Status.READY)
    session = PlanningSession.objects.create(
        owner=owner,
        codebase=codebase,
        title="task",
        task=text,
        agent_a_profile="fake",
        agent_b_profile="fake",
        status=status,
        heartbeat_at=timezone.now(),
        last_seq=2,
    )
    PlanningState.objects.create(session=session, current_node=node)
    Message.objects.create(session=session, seq=1, role="user", content=text)
    Message.objects.create(session=session, seq=2, role="agent", agent="A", content=text)
    if plan:
        Plan.objects.create(session=session, version=1, markdown=f"# Plan\n\n{text}")
    return session


def rows(session_id: int) -> list[Any]:
    """Everything a frame could change about one session."""
    return [
        list(PlanningSession.objects.filter(pk=session_id).values()),
        list(PlanningState.objects.filter(session_id=session_id).values()),
        list(Message.objects.filter(session_id=session_id).order_by("seq").values()),
        list(Plan.objects.filter(session_id=session_id).values()),
    ]


async def frames_until(comm: WebsocketCommunicator, last: Any) -> list[dict[str, Any]]:
    """Frames the server sends up to the first for which `last(frame)` holds; a close counts
    as a frame {"type": "closed", "code": …}, and so does silence: {"type": "silent"}."""
    received: list[dict[str, Any]] = []
    while True:
        try:
            output = await comm.receive_output(timeout=TIMEOUT)
        except TimeoutError:
            return [*received, {"type": "silent"}]
        if output["type"] == "websocket.close":
            frame = {"type": "closed", "code": output.get("code")}
        else:
            frame = json.loads(output["text"])
        received.append(frame)
        if last(frame) or frame["type"] == "closed":
            return received


async def until_changed(session_id: int, before: list[Any]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while await database_sync_to_async(rows)(session_id) == before:
        assert time.monotonic() < deadline, "the owner's frame changed nothing"
        await asyncio.sleep(0.02)


def shows_marker(frames: list[dict[str, Any]]) -> bool:
    return any(MARKER in json.dumps(f) for f in frames)


FINAL = {"resume": "session.state", "history": "history.end"}
# Frames are answered in order: once this one is answered, so is every frame sent before it.
SENTINEL = {"type": "history", "after_seq": 0, "before_seq": 1}


def is_sentinel_answer(frame: dict[str, Any]) -> bool:
    return frame["type"] == "history.end" and frame["before_seq"] == 1


def test_the_matrix_covers_every_frame_and_control_action():
    kinds = {name.split(":")[0] for name in FRAMES}
    actions = {name.split(":")[1] for name in FRAMES if name.startswith("control:")}
    assert kinds == set(FRAME_TYPES), "a frame type with no row in FRAMES"
    assert actions == set(CONTROL_ACTIONS), "a control action with no row in FRAMES"


@pytest.mark.parametrize("name", list(FRAMES))
async def test_the_owner_is_heard(name, owner):
    """The control: each frame, from the owner, does what the refusals below must not."""
    frame = FRAMES[name]
    session = await database_sync_to_async(make_session)(
        owner, status=frame.status, node=frame.node, text=MARKER, plan=frame.plan
    )
    before = await database_sync_to_async(rows)(session.pk)
    comm = await socket(owner, session.pk)
    connected, _ = await comm.connect()
    assert connected
    await comm.send_json_to(frame.body)
    if frame.reads:
        replies = await frames_until(comm, lambda f: f["type"] == FINAL[frame.body["type"]])
        assert shows_marker(replies) and replies[-1]["type"] != "closed", replies
    else:
        await until_changed(session.pk, before)
    await comm.disconnect()


@pytest.mark.parametrize("user", ["other", "nobody"])
async def test_only_the_owner_may_open_the_session_socket(user, owner, other):
    session = await database_sync_to_async(make_session)(
        owner, status=RUNNING, node="propose_changes", text=MARKER
    )
    comm = await socket(other if user == "other" else None, session.pk)
    connected, code = await comm.connect()
    assert not connected
    assert code == (4404 if user == "other" else 4401)
    await comm.disconnect()


async def test_a_page_on_another_site_cannot_open_the_socket_with_the_owners_cookie(owner):
    session = await database_sync_to_async(make_session)(
        owner, status=RUNNING, node="propose_changes", text=MARKER
    )
    comm = await socket(owner, session.pk, origin="https://evil.example")
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()


@pytest.mark.parametrize("name", list(FRAMES))
async def test_each_frame_is_refused_once_the_session_changed_hands(name, owner, other):
    frame = FRAMES[name]
    session = await database_sync_to_async(make_session)(
        owner, status=frame.status, node=frame.node, text=MARKER, plan=frame.plan
    )
    comm = await socket(owner, session.pk)
    connected, _ = await comm.connect()
    assert connected
    await database_sync_to_async(PlanningSession.objects.filter(pk=session.pk).update)(owner=other)
    before = await database_sync_to_async(rows)(session.pk)

    await comm.send_json_to(frame.body)
    await comm.send_json_to(SENTINEL)
    replies = await frames_until(comm, is_sentinel_answer)

    assert replies == [
        {"type": "error", "message": "That session does not exist."},
        {"type": "closed", "code": 4404},
    ]
    assert await database_sync_to_async(rows)(session.pk) == before


async def test_frames_on_your_own_socket_cannot_reach_someone_elses_session(owner, other):
    """Frames carry no session id the server believes: naming the owner's does nothing."""
    theirs = await database_sync_to_async(make_session)(
        owner, status=AWAITING, node="checkpoint", text=MARKER
    )
    mine = await database_sync_to_async(make_session)(
        other, status=AWAITING, node="checkpoint", text="mine"
    )
    before = await database_sync_to_async(rows)(theirs.pk)
    comm = await socket(other, mine.pk)
    connected, _ = await comm.connect()
    assert connected
    for frame in FRAMES.values():
        await comm.send_json_to({**frame.body, "session_id": theirs.pk, "session": theirs.pk})
        await comm.send_json_to(SENTINEL)
        replies = await frames_until(comm, is_sentinel_answer)
        assert replies[-1]["type"] != "closed", replies
        assert not shows_marker(replies), (frame, replies)
    assert await database_sync_to_async(rows)(theirs.pk) == before
    await comm.disconnect()
