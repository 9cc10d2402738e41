"""A socket lives as long as the login that opened it: every action re-checks the login, and a
logout or a deactivation closes the sockets at once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import AsyncClient

from conversations.consumers import SIGNED_OUT_MESSAGE
from conversations.models import PlanningSession, PlanningState
from conversations.routing import websocket_urlpatterns
from rag.models import Codebase
from tests.conversations.wsclient import login_session

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 30  # a safety net: each answer comes in milliseconds


@pytest.fixture
async def session_id(user) -> int:
    """A session waiting for its owner (no agents running), to hold sockets open on."""

    def create() -> int:
        codebase = Codebase.objects.create(owner=user, name="c", status=Codebase.Status.READY)
        session = PlanningSession.objects.create(
            owner=user,
            codebase=codebase,
            title="t",
            task="t",
            agent_a_profile="fake",
            agent_b_profile="fake",
            status=PlanningSession.Status.AWAITING_HUMAN,
        )
        PlanningState.objects.create(session=session, current_node="checkpoint")
        return session.pk

    return await database_sync_to_async(create)()


async def login(user) -> str:
    store = await database_sync_to_async(login_session)(user)
    return str(store.session_key)


def socket(session_id: int, key: str) -> WebsocketCommunicator:
    """A socket through the real stack: the session cookie → channels' session and auth
    middleware → the consumer, as the browser's goes."""
    app = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
    cookie = f"{settings.SESSION_COOKIE_NAME}={key}".encode()
    return WebsocketCommunicator(app, f"/ws/sessions/{session_id}/", headers=[(b"cookie", cookie)])


async def opened(session_id: int, key: str) -> WebsocketCommunicator:
    comm = socket(session_id, key)
    connected, code = await comm.connect(timeout=TIMEOUT)
    assert connected, code
    await answered(comm, {"type": "resume", "after_seq": 0})
    return comm


async def answered(comm: WebsocketCommunicator, frame: dict[str, Any]) -> dict[str, Any]:
    """Send a valid action and return what ends its answer (the state, or an error)."""
    await comm.send_json_to(frame)
    while True:
        event = await comm.receive_json_from(timeout=TIMEOUT)
        if event["type"] in ("session.state", "error"):
            return dict(event)


async def closed(comm: WebsocketCommunicator) -> tuple[int, list[dict[str, Any]]]:
    """Wait for the server to close the socket: its close code and what it sent before."""
    sent = []
    while True:
        out = await comm.receive_output(timeout=TIMEOUT)
        if out["type"] == "websocket.close":
            return out["code"], sent
        sent.append(json.loads(out["text"]))


async def test_a_socket_opens_with_the_login_cookie_and_works(session_id, user):
    comm = await opened(session_id, await login(user))
    assert (await answered(comm, {"type": "resume", "after_seq": 0}))["status"] == "awaiting_human"
    await comm.disconnect()


async def test_a_socket_without_a_login_is_refused(session_id):
    comm = socket(session_id, "no-such-session")
    connected, code = await comm.connect(timeout=TIMEOUT)
    assert not connected and code == 4401


async def test_logging_out_closes_that_logins_sockets_and_leaves_the_others_open(session_id, user):
    here, elsewhere = await login(user), await login(user)
    first, second = await opened(session_id, here), await opened(session_id, here)
    other_browser = await opened(session_id, elsewhere)

    client = AsyncClient()
    client.cookies[settings.SESSION_COOKIE_NAME] = here
    response = await client.post("/accounts/logout/")
    assert response.status_code == 302

    for comm in (first, second):
        code, sent = await closed(comm)
        assert code == 4401
        assert sent == [{"type": "error", "message": SIGNED_OUT_MESSAGE}]
    # The logout reached this socket too (one group per user); its own login is still good.
    assert (await answered(other_browser, {"type": "resume", "after_seq": 0}))["type"] == (
        "session.state"
    )
    await other_browser.disconnect()


async def test_a_deactivated_users_sockets_close_at_once(session_id, user):
    sockets = [await opened(session_id, await login(user)) for _ in range(2)]
    user.is_active = False
    await database_sync_to_async(user.save)()
    for comm in sockets:
        code, sent = await closed(comm)
        assert code == 4401
        assert sent == [{"type": "error", "message": SIGNED_OUT_MESSAGE}]


@pytest.mark.parametrize(
    "end_the_login",
    [
        pytest.param(
            lambda user, key: Session.objects.filter(session_key=key).delete(), id="session-gone"
        ),
        pytest.param(
            lambda user, key: get_user_model().objects.filter(pk=user.pk).update(is_active=False),
            id="deactivated-without-signals",
        ),
        pytest.param(
            lambda user, key: (user.set_password("a new one"), user.save()),
            id="password-changed",
        ),
        pytest.param(
            lambda user, key: Session.objects.filter(session_key=key).update(
                session_data=Session.objects.get(
                    session_key=login_session(
                        get_user_model().objects.create_user("eve")
                    ).session_key
                ).session_data
            ),
            id="session-now-someone-elses",
        ),
    ],
)
async def test_an_action_after_the_login_ended_is_refused_and_the_socket_closed(
    session_id, user, end_the_login
):
    key = await login(user)
    comm = await opened(session_id, key)
    await database_sync_to_async(end_the_login)(user, key)

    await comm.send_json_to({"type": "user.message", "text": "am I"})
    code, sent = await closed(comm)
    assert code == 4401
    assert sent == [{"type": "error", "message": SIGNED_OUT_MESSAGE}]
    said = await database_sync_to_async(
        lambda: PlanningSession.objects.get(pk=session_id).messages.filter(content="am I").count()
    )()
    assert said == 0
