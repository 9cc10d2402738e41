"""The world the API tests share: an owner with an indexed codebase, a session and a plan
(each carrying MARKER), tokens of every kind, another user with a write token, and a client
that sends a token."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.test import Client

from api.models import ApiToken
from api.services import create_token, revoke_token
from conversations.models import Message, Plan, PlanningSession, PlanningState
from rag.models import Codebase
from tests.security.packs import indexed_codebase, json_pack

MARKER = "zq7-api-owner-only-5521"
FILES = {
    "src/app.py": f"def handler():\n    return '{MARKER}'\n",
    "src/util.py": "def helper(x):\n    return x + 1\n",
}
CHANGED = {**FILES, "src/extra.py": "VALUE = 1\n"}


@dataclass
class World:
    owner: Any
    other: Any
    codebase: Codebase
    session: PlanningSession
    plan: Plan
    write: str  # the owner's write token
    read: str  # the owner's read token
    revoked: str  # the owner's revoked write token
    others: str  # the other user's write token


def build_world(django_user_model: Any) -> World:
    owner = django_user_model.objects.create_user(f"owner-{MARKER}", password="owner-pass-123")
    other = django_user_model.objects.create_user("other", password="other-pass-123")
    codebase = indexed_codebase(owner, f"codebase {MARKER}", FILES)
    session = PlanningSession.objects.create(
        owner=owner,
        codebase=codebase,
        title=f"Task {MARKER}",
        task=f"Task {MARKER}",
        agent_a_profile="fake",
        agent_b_profile="fake",
        status=PlanningSession.Status.COMPLETED,
        last_seq=1,
    )
    PlanningState.objects.create(session=session, current_node="completed")
    Message.objects.create(session=session, seq=1, role="user", content=f"Task {MARKER}")
    plan = Plan.objects.create(
        session=session,
        version=1,
        markdown=f"# Plan\n\n{MARKER}\n",
        structured={"summary": MARKER, "files": [], "quality": {"steps": 0}},
    )
    revoked = create_token(owner, "old laptop", ApiToken.Scope.WRITE)
    revoke_token(owner, revoked.token.pk)
    return World(
        owner=owner,
        other=other,
        codebase=codebase,
        session=session,
        plan=plan,
        write=create_token(owner, "CI", ApiToken.Scope.WRITE).secret,
        read=create_token(owner, "dashboard", ApiToken.Scope.READ).secret,
        revoked=revoked.secret,
        others=create_token(other, "theirs", ApiToken.Scope.WRITE).secret,
    )


class TokenClient(Client):
    """A test client that sends `Authorization: Bearer <token>` (nothing when token is None)."""

    def __init__(self, token: str | None, **kwargs: Any) -> None:
        if token is not None:
            kwargs["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        super().__init__(**kwargs)

    def post_json(self, path: str, data: dict[str, Any]) -> Any:
        return self.post(path, json.dumps(data), content_type="application/json")


def pack(files: dict[str, str], name: str = "pack.json") -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, json_pack(files))
