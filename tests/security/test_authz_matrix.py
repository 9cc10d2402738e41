"""An authorization matrix generated from the URL conf.

Every URL pattern the project serves, admin included, is reversed with the ids of objects that
belong to `owner` and requested with every method: as `other` (logged in, not staff) and as
nobody. Neither may read anything of the owner's (no response carries MARKER, which is planted
in every owned object) or write anything (the database is the same after each request). The
owner, or staff for admin pages, gets the same URLs: proof that they reach real objects.

The role dimension: the same URLs and methods as each reviewer the owner invited (a viewer, a
commenter through the codebase, an approver). A row's `role` is the lowest role that gets
through it; every role below is refused as `other` is, and no role ever sees SECRET (the
transcript, the trace, the codebase's rules and pins: the owner's alone) or writes anything but
what the row's `role_writes` names.

A pattern with no row in MATRIX fails the suite: a new URL must say what it serves."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from agents.models import LLMCall, PlanReviewEvent, SessionEstimate
from api.models import ApiToken
from conversations import sharing
from conversations.models import (
    CommentRequest,
    ImplementationCheck,
    Message,
    Plan,
    PlanComment,
    PlanningSession,
    PlanningState,
    Reviewer,
    ShareLink,
    SignOff,
)
from conversations.permissions import RANKS
from rag.models import Codebase, CodeFile, Pin, Rule
from tests.security.packs import indexed_codebase, json_pack

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse as Response

pytestmark = pytest.mark.django_db

MARKER = "zq7-owner-only-4411"
SECRET = "zq9-not-for-reviewers-2290"  # in what no reviewer may read, whatever their role
VIEWER, COMMENTER, APPROVER = Reviewer.Role.values
ROLES = (VIEWER, COMMENTER, APPROVER)
METHODS = ("get", "head", "post", "put", "delete")
LOGIN_PATHS = {"/accounts/login/", "/admin/login/"}
REFUSED = {403, 404, 405}
FILES = {
    "src/app.py": f"def handler():\n    return '{MARKER}'\n",
    f"docs/{MARKER}.md": "# Notes\n\nNothing to see.\n",
}

PUBLIC = "public"  # anyone, logged in or not
OWN = "own"  # no ids: shows the requesting user's own things
OBJECT = "object"  # one of the owner's objects: the owner only
STAFF = "staff"  # the admin: staff only


@dataclass
class World:
    owner: Any
    other: Any
    staff: Any
    reviewers: dict[str, Any]  # role -> the user invited with it
    invitation: Reviewer  # the viewer's
    codebase: Codebase
    failed: Codebase  # indexing failed: a retry would go through for the owner
    code_file: CodeFile
    named_file: CodeFile
    session: PlanningSession
    plan: Plan
    rule: Rule
    pin: Pin
    call: LLMCall
    review: PlanReviewEvent
    comment_request: CommentRequest
    sign_off: SignOff
    group: Group
    attempt: AccessAttempt
    access_log: AccessLog
    failure_log: AccessFailureLog


@dataclass(frozen=True)
class Row:
    kind: str
    kwargs: Callable[[World], dict[str, object]] = lambda w: {}
    url: Callable[[World], str] | None = None  # for regex patterns, which cannot be filled in
    query: Callable[[World], str] = lambda w: ""
    seen: int = 200  # what the owner (staff, for STAFF rows; anyone, for PUBLIC) gets on GET
    shows_marker: bool = False  # and whether that page shows the owner's MARKER
    role: str = ""  # the lowest reviewer role let through (and shown the MARKER); "": none
    role_writes: frozenset[str] = frozenset()  # the models a role let through may add rows to


def _codebase(w: World) -> dict[str, object]:
    return {"pk": w.codebase.pk}


def _session(w: World) -> dict[str, object]:
    return {"session_id": w.session.pk}


def _section(w: World) -> dict[str, object]:
    return {"session_id": w.session.pk, "key": "summary"}


def _share_link(w: World) -> ShareLink:
    """The owner's share link (made on first use, before any request is judged)."""
    link, _ = ShareLink.objects.get_or_create(session=w.session, token_hash="0" * 64)
    return link


def _comment(w: World) -> dict[str, object]:
    """The owner's comment on their plan (made on first use, before any request is judged)."""
    comment, _ = PlanComment.objects.get_or_create(
        session=w.session,
        plan=w.plan,
        author=w.owner,
        anchor_kind="section",
        anchor={"key": "summary", "text": MARKER},
        text=f"Comment {MARKER}",
    )
    return {"session_id": w.session.pk, "comment_id": comment.pk}


def _check(w: World) -> dict[str, object]:
    """A finished implementation check of the owner's plan (made on first use)."""
    found = ImplementationCheck.objects.filter(plan=w.plan).first() or (
        ImplementationCheck.objects.create(
            session=w.session,
            plan=w.plan,
            number=1,
            source="diff",
            label="fix.diff",
            status="done",
            report={"steps": [], "counts": {}},
        )  # fmt: skip
    )
    return {"session_id": w.session.pk, "check_id": found.pk}


def _viewer(w: World) -> Reviewer:
    """The viewer's invitation to the owner's plan."""
    return w.invitation


def _estimate(w: World) -> SessionEstimate:
    """The estimate made when the owner's session started (made on first use)."""
    estimate, _ = SessionEstimate.objects.get_or_create(
        session=w.session, mode="planning", agent_a_profile="fake", agent_b_profile="fake"
    )
    return estimate


def _api_token(w: World) -> ApiToken:
    """The owner's API token (made on first use, before any request is judged)."""
    token, _ = ApiToken.objects.get_or_create(owner=w.owner, name=MARKER, digest="0" * 64)
    return token


# The REST API authenticates by token, not by login: tests/api/test_authz_matrix.py is its
# matrix, generated from its own routes.
API_PREFIX = "api/v1/"

MATRIX: dict[str, Row] = {
    "": Row(OWN, shows_marker=True),
    "favicon.ico": Row(PUBLIC, seen=301),  # to the static icon
    "accounts/login/": Row(PUBLIC),
    "accounts/logout/": Row(PUBLIC, seen=405),  # logging out needs no login (and is POST)
    "codebases/": Row(OWN, shows_marker=True),
    "codebases/upload/": Row(OWN),
    "codebases/upload/git/": Row(OWN, seen=405),  # a form's POST
    "codebases/<int:pk>/sync/": Row(OBJECT, _codebase, seen=405),  # the Sync button's POST
    "codebases/<int:pk>/": Row(OBJECT, _codebase, shows_marker=True),
    "codebases/<int:pk>/status.json": Row(OBJECT, _codebase),
    "codebases/<int:pk>/tree.json": Row(
        OBJECT, _codebase, query=lambda w: "?folder=docs/", shows_marker=True
    ),
    "codebases/<int:pk>/version/": Row(OBJECT, _codebase, seen=405),
    "codebases/<int:pk>/retry/": Row(OBJECT, lambda w: {"pk": w.failed.pk}, seen=405),
    "codebases/<int:pk>/file/<path:path>": Row(
        OBJECT, lambda w: {"pk": w.codebase.pk, "path": w.code_file.path}, shows_marker=True
    ),
    "sessions/": Row(OWN, shows_marker=True),
    # A reviewer's list of the plans shared with them: empty for the owner.
    "sessions/shared/": Row(OWN, role=VIEWER),
    "sessions/new/": Row(OWN, query=lambda w: f"?codebase={w.codebase.pk}", shows_marker=True),
    "sessions/models/": Row(OWN),
    "sessions/<int:session_id>/": Row(OBJECT, _session, shows_marker=True),
    "sessions/<int:session_id>/plan/": Row(OBJECT, _session, shows_marker=True, role=VIEWER),
    "sessions/<int:session_id>/plan.md": Row(
        OBJECT, _session, query=lambda w: "?version=1", shows_marker=True, role=VIEWER
    ),
    "sessions/<int:session_id>/plan-card/": Row(OBJECT, _session, shows_marker=True),
    "sessions/<int:session_id>/stop/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/export/<slug:kind>/": Row(
        OBJECT,
        lambda w: {"session_id": w.session.pk, "kind": "json"},
        shows_marker=True,
        role=VIEWER,
    ),
    "sessions/<int:session_id>/plan/compare/": Row(
        OBJECT, _session, query=lambda w: "?a=1&b=1", shows_marker=True, role=VIEWER
    ),
    "sessions/<int:session_id>/plan/share/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/approve/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/share/<int:link_id>/revoke/": Row(
        OBJECT, lambda w: {"session_id": w.session.pk, "link_id": _share_link(w).pk}, seen=405
    ),
    "sessions/<int:session_id>/plan/revalidate/": Row(OBJECT, _session, shows_marker=True),
    "sessions/<int:session_id>/plan/replan/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/section/<slug:key>/edit/": Row(OBJECT, _section, seen=405),
    "sessions/<int:session_id>/plan/section/<slug:key>/approve/": Row(OBJECT, _section, seen=405),
    "sessions/<int:session_id>/plan/section/<slug:key>/regenerate/": Row(
        OBJECT, _section, seen=405
    ),
    "sessions/<int:session_id>/plan/write/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/comments/": Row(
        OBJECT,
        _session,
        seen=405,
        role=COMMENTER,
        role_writes=frozenset({"conversations.PlanComment"}),
    ),
    "sessions/<int:session_id>/plan/comments/<int:comment_id>/reply/": Row(
        OBJECT,
        _comment,
        seen=405,
        role=COMMENTER,
        role_writes=frozenset({"conversations.PlanComment"}),
    ),
    # Resolving the owner's thread: the owner's, or its author's (tests/conversations).
    "sessions/<int:session_id>/plan/comments/<int:comment_id>/status/": Row(
        OBJECT, _comment, seen=405
    ),
    "sessions/<int:session_id>/plan/comments/revise/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/reviewers/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/reviewers/<int:reviewer_id>/remove/": Row(
        OBJECT, lambda w: {"session_id": w.session.pk, "reviewer_id": _viewer(w).pk}, seen=405
    ),
    "sessions/<int:session_id>/plan/rule/": Row(OBJECT, _session, seen=405),
    "sessions/<int:session_id>/plan/sign-off/": Row(
        OBJECT, _session, seen=405, role=APPROVER, role_writes=frozenset({"conversations.SignOff"})
    ),
    "sessions/<int:session_id>/revise/": Row(OBJECT, _session, seen=405),
    # Checking an implementation: the owner's (the world's plan is not approved: back to it);
    # a check's report is read as the plan is.
    "sessions/<int:session_id>/plan/implementation/": Row(OBJECT, _session, seen=302),
    "sessions/<int:session_id>/plan/implementation/<int:check_id>/": Row(
        OBJECT, _check, shows_marker=True, role=VIEWER
    ),
    "sessions/<int:session_id>/plan/implementation/<int:check_id>/again/": Row(
        OBJECT, _check, seen=405
    ),
    "sessions/<int:session_id>/trace/<int:call_id>/": Row(
        OBJECT, lambda w: {"session_id": w.session.pk, "call_id": w.call.pk}, shows_marker=True
    ),
    "codebases/<int:pk>/roles/": Row(OBJECT, _codebase, seen=405),
    "codebases/<int:pk>/rules/": Row(OBJECT, _codebase, seen=405),
    "codebases/<int:pk>/rules/<int:rule_id>/": Row(
        OBJECT, lambda w: {"pk": w.codebase.pk, "rule_id": w.rule.pk}, seen=405
    ),
    "codebases/<int:pk>/rules/<int:rule_id>/delete/": Row(
        OBJECT, lambda w: {"pk": w.codebase.pk, "rule_id": w.rule.pk}, seen=405
    ),
    "codebases/<int:pk>/pins/": Row(OBJECT, _codebase, seen=405),
    "codebases/<int:pk>/pins/<int:pin_id>/delete/": Row(
        OBJECT, lambda w: {"pk": w.codebase.pk, "pin_id": w.pin.pk}, seen=405
    ),
    # The share link's token is its authorization: one nobody was given opens nothing.
    "sessions/s/<str:token>/": Row(PUBLIC, lambda w: {"token": "A" * 43}, seen=404),
    # A reader's comment through a "may comment" link: POST only; what each link and each
    # visitor gets is test_a_link_visitor_writes_one_comment_through_its_link_and_nothing_else.
    "sessions/s/<str:token>/comments/": Row(PUBLIC, lambda w: {"token": "A" * 43}, seen=405),
    "account/tokens/": Row(OWN),
    "account/tokens/<int:token_id>/revoke/": Row(
        OBJECT, lambda w: {"token_id": _api_token(w).pk}, seen=405
    ),
    "admin/": Row(STAFF),
    "admin/login/": Row(PUBLIC),
    "admin/logout/": Row(PUBLIC, seen=302),  # to the admin index, which asks to log in
    "admin/password_change/": Row(STAFF),
    "admin/password_change/done/": Row(STAFF),
    "admin/autocomplete/": Row(STAFF, seen=403),  # no admin declares autocomplete fields
    "admin/jsi18n/": Row(STAFF),
    "admin/r/<path:content_type_id>/<path:object_id>/": Row(
        STAFF,
        lambda w: {
            "content_type_id": ContentType.objects.get_for_model(Codebase).pk,
            "object_id": w.codebase.pk,
        },
        seen=404,  # no model has a public page to send staff to
    ),
    "admin/(?P<url>.*)$": Row(STAFF, url=lambda w: "/admin/no-such-page/", seen=404),
    "admin/auth/user/<id>/password/": Row(STAFF, lambda w: {"id": w.owner.pk}, shows_marker=True),
}

# Each model in the admin: the owner's object its pages are tried with, whether it has an add
# page, and whether the object's name (on its history and delete pages) shows the MARKER.
ADMIN_MODELS: dict[str, tuple[Callable[[World], object], bool, bool]] = {
    "auth/group": (lambda w: w.group.pk, True, True),
    "auth/user": (lambda w: w.owner.pk, True, True),
    "rag/codebase": (lambda w: w.codebase.pk, True, True),
    "rag/codefile": (lambda w: w.named_file.pk, True, True),
    "conversations/planningsession": (lambda w: w.session.pk, False, True),
    "conversations/plan": (lambda w: w.plan.pk, False, True),
    "conversations/sharelink": (lambda w: _share_link(w).pk, False, True),
    "conversations/plancomment": (lambda w: _comment(w)["comment_id"], False, True),
    "conversations/commentrequest": (lambda w: w.comment_request.pk, False, True),
    "conversations/reviewer": (lambda w: _viewer(w).pk, False, True),
    "conversations/signoff": (lambda w: w.sign_off.pk, False, True),
    "rag/rule": (lambda w: w.rule.pk, True, True),
    "rag/pin": (lambda w: w.pin.pk, True, True),
    "agents/llmcall": (lambda w: w.call.pk, False, False),
    "agents/planreviewevent": (lambda w: w.review.pk, False, False),
    "agents/sessionestimate": (lambda w: _estimate(w).pk, False, False),
    "axes/accessattempt": (lambda w: w.attempt.pk, False, False),
    "axes/accesslog": (lambda w: w.access_log.pk, False, True),
    "axes/accessfailurelog": (lambda w: w.failure_log.pk, False, True),
}
# The admin's per-app index matches the registered apps' labels, in registration order.
_labels = dict.fromkeys(model._meta.app_label for model in admin.site._registry)
MATRIX[f"admin/(?P<app_label>{'|'.join(_labels)})/$"] = Row(
    STAFF, url=lambda w: "/admin/conversations/"
)
for _prefix, (_object_id, _can_add, _named) in ADMIN_MODELS.items():

    def _kwargs(w: World, object_id: Callable[[World], object] = _object_id) -> dict[str, object]:
        return {"object_id": object_id(w)}

    MATRIX[f"admin/{_prefix}/"] = Row(STAFF, shows_marker=True)
    MATRIX[f"admin/{_prefix}/add/"] = Row(STAFF, seen=200 if _can_add else 403)
    MATRIX[f"admin/{_prefix}/<path:object_id>/history/"] = Row(STAFF, _kwargs, shows_marker=_named)
    MATRIX[f"admin/{_prefix}/<path:object_id>/delete/"] = Row(STAFF, _kwargs, shows_marker=_named)
    MATRIX[f"admin/{_prefix}/<path:object_id>/change/"] = Row(STAFF, _kwargs, shows_marker=True)
    MATRIX[f"admin/{_prefix}/<path:object_id>/"] = Row(STAFF, _kwargs, seen=302)

# The estimates' list names sessions by number, not by title.
MATRIX["admin/agents/sessionestimate/"] = Row(STAFF)

# The trace, the review history and the estimates are records: nobody deletes them, staff
# included.
for _prefix in ("agents/llmcall", "agents/planreviewevent", "agents/sessionestimate"):
    MATRIX[f"admin/{_prefix}/<path:object_id>/delete/"] = Row(
        STAFF, lambda w, p=_prefix: {"object_id": ADMIN_MODELS[p][0](w)}, seen=403
    )


# ---------------------------------------------------------------- the URL conf


def _join(prefix: str, route: str) -> str:
    # As django.urls.resolvers does for ResolverMatch.route: inner regexes lose their "^".
    return prefix + (route[1:] if route.startswith("^") else route)


def url_patterns() -> list[str]:
    """Every pattern the project serves, spelled as `resolve(url).route` spells it."""
    found: list[str] = []

    def walk(resolver: URLResolver, prefix: str) -> None:
        for entry in resolver.url_patterns:
            route = _join(prefix, str(entry.pattern))
            if isinstance(entry, URLResolver):
                walk(entry, route)
            else:
                assert isinstance(entry, URLPattern)
                found.append(route)

    walk(get_resolver(), "")
    return [route for route in found if not route.startswith(API_PREFIX)]


def build_url(route: str, row: Row, world: World) -> str:
    if row.url is not None:
        path = row.url(world)
    else:
        kwargs = row.kwargs(world)
        path = "/" + re.sub(
            r"<(?:\w+:)?(\w+)>", lambda m: quote(str(kwargs[m.group(1)]), safe="/"), route
        )
    # The URL must land on the very pattern it stands for, or the row tests something else.
    assert resolve(path).route == route, (path, resolve(path).route, route)
    return path + row.query(world)


# ---------------------------------------------------------------- the owner's world


@pytest.fixture
def world(django_user_model) -> World:
    owner = django_user_model.objects.create_user(
        f"owner-{MARKER}", email=f"{MARKER}@example.com", password="owner-pass-123"
    )
    other = django_user_model.objects.create_user("other", password="other-pass-123")
    staff = django_user_model.objects.create_superuser("reviewer", password="staff-pass-123")
    codebase = indexed_codebase(owner, f"codebase {MARKER}", FILES)
    session = PlanningSession.objects.create(
        owner=owner,
        codebase=codebase,
        title=f"Task {MARKER}",
        task=f"Task {MARKER}",
        agent_a_profile="fake",
        agent_b_profile="fake",
        status=PlanningSession.Status.AWAITING_HUMAN,
        last_seq=2,
    )
    # At the checkpoint: stop, approve and request changes would all go through for the owner.
    PlanningState.objects.create(session=session, current_node="checkpoint")
    Message.objects.create(session=session, seq=1, role="user", content=f"Task {MARKER}")
    message = Message.objects.create(
        session=session, seq=2, role="agent", agent="A", content=f"{MARKER} {SECRET}"
    )
    plan = Plan.objects.create(
        session=session,
        version=1,
        markdown=f"# Plan\n\n{MARKER}\n",
        structured={"summary": MARKER, "files": []},
    )
    reviewers = {
        role: django_user_model.objects.create_user(f"{role}-r", password="review-pass-123")
        for role in ROLES
    }
    # The commenter reaches the plan through the codebase, the others through the session.
    invitation = Reviewer.objects.create(user=reviewers[VIEWER], role=VIEWER, session=session)
    Reviewer.objects.create(user=reviewers[COMMENTER], role=COMMENTER, codebase=codebase)
    Reviewer.objects.create(user=reviewers[APPROVER], role=APPROVER, session=session)
    access = {
        "username": owner.username,
        "user_agent": f"agent {MARKER}",
        "ip_address": "10.0.0.7",
        "http_accept": "*/*",
        "path_info": "/accounts/login/",
    }
    return World(
        owner=owner,
        other=other,
        staff=staff,
        reviewers=reviewers,
        invitation=invitation,
        codebase=codebase,
        failed=Codebase.objects.create(
            owner=owner, name=f"failed {MARKER}", status=Codebase.Status.FAILED, error="boom"
        ),
        code_file=CodeFile.objects.get(codebase=codebase, path="src/app.py"),
        named_file=CodeFile.objects.get(codebase=codebase, path=f"docs/{MARKER}.md"),
        session=session,
        plan=plan,
        rule=Rule.objects.create(codebase=codebase, text=f"Rule {MARKER} {SECRET}"),
        pin=Pin.objects.create(codebase=codebase, kind="note", text=f"Pin {MARKER} {SECRET}"),
        call=LLMCall.objects.create(
            session=session,
            profile="fake",
            prompt=[{"role": "user", "content": f"{MARKER} {SECRET}"}],
        ),
        review=PlanReviewEvent.objects.create(
            plan=plan, reviewer=staff, status="approved", notes=MARKER
        ),
        comment_request=CommentRequest.objects.create(
            session=session, base=plan, section="summary", message=message
        ),
        sign_off=SignOff.objects.create(
            session=session,
            plan=plan,
            reviewer=reviewers[APPROVER],
            verdict="changes",
            note=f"Note {MARKER}",
        ),
        group=Group.objects.create(name=f"group {MARKER}"),
        # What the login throttle records about the owner: usernames, addresses, agents.
        attempt=AccessAttempt.objects.create(
            **access, get_data="", post_data="", failures_since_start=1
        ),
        access_log=AccessLog.objects.create(**access),
        failure_log=AccessFailureLog.objects.create(**access),
    )


def client_for(user: Any) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def attack_body(world: World) -> dict[str, object]:
    """One POST body that every form in the app and the admin would accept as a change to the
    owner's objects, were the request allowed through."""
    changed = json_pack({**FILES, "src/extra.py": "VALUE = 1\n"})
    owned = [world.codebase.pk, world.named_file.pk, world.session.pk, world.plan.pk]
    return {
        "pack": SimpleUploadedFile("pack.json", changed),
        "name": "pwned",
        "codebase": world.codebase.pk,
        "task": "pwned",
        "title": "pwned",
        "mode": "planning",
        "agent_a_profile": "fake",
        "agent_b_profile": "fake",
        "max_exchanges": 2,
        "owner": world.other.pk,
        "session": world.session.pk,
        "review_status": "approved",
        "review_notes": "pwned",
        "version": world.plan.version,  # a real version: refused for who asks, not for a typo
        "username": "pwned",
        "email": "pwned@example.com",
        "password1": "Pwned-pass-9876",
        "password2": "Pwned-pass-9876",
        "old_password": "other-pass-123",
        "new_password1": "Pwned-pass-9876",
        "new_password2": "Pwned-pass-9876",
        "post": "yes",
        "action": "delete_selected",
        "_selected_action": owned,
        "index": "0",
        "text": "pwned",
    }


def send(client: Client, method: str, url: str, world: World) -> Response:
    if method == "post":
        return client.post(url, attack_body(world))
    response: Response = getattr(client, method)(url)
    return response


# ---------------------------------------------------------------- judging


Snapshot = dict[str, dict[Any, dict[str, Any]]]


def snapshot() -> Snapshot:
    """Every row of every model, but the login sessions themselves."""
    rows: Snapshot = {}
    for model in apps.get_models():
        if model is Session:
            continue
        pk = model._meta.pk.attname  # type: ignore[union-attr]
        rows[model._meta.label] = {r[pk]: r for r in model._default_manager.values()}
    return rows


def writes(before: Snapshot, after: Snapshot, allowed_owner: Any) -> list[str]:
    """What changed. New codebases of `allowed_owner` are theirs to make (an upload)."""
    found = []
    for label, rows in after.items():
        old = before.get(label, {})
        for pk, row in rows.items():
            if pk not in old:
                if not (
                    label == "rag.Codebase" and row["owner_id"] == getattr(allowed_owner, "pk", 0)
                ):
                    found.append(f"new {label} {row}")
            elif row != old[pk]:
                changed = {k: v for k, v in row.items() if old[pk][k] != v}
                found.append(f"changed {label} #{pk}: {changed}")
        found += [f"deleted {label} #{pk}" for pk in old.keys() - rows.keys()]
    return found


def leaks(response: Response) -> bool:
    headers = " ".join(f"{k}: {v}" for k, v in response.items())
    return MARKER.encode() in response.content or MARKER in headers


def sent_to_login(response: Response) -> bool:
    return response.status_code == 302 and urlsplit(response["Location"]).path in LOGIN_PATHS


def refused(response: Response) -> bool:
    return response.status_code in REFUSED or sent_to_login(response)


def attempt(client: Client, user: Any, world: World) -> tuple[int, list[str]]:
    """Every non-public URL with every method as `user`; returns (requests, problems)."""
    problems: list[str] = []
    tried = 0
    for route, row in MATRIX.items():
        if row.kind == PUBLIC:
            continue
        url = build_url(route, row, world)
        for method in METHODS:
            before = snapshot()
            response = send(client, method, url, world)
            after = snapshot()
            tried += 1
            where = f"{method.upper()} {url} as {getattr(user, 'username', 'anonymous')}"
            if user is None and not (sent_to_login(response) or response.status_code == 405):
                problems.append(f"{where}: {response.status_code}, not sent to log in")
            if row.kind in (OBJECT, STAFF) and not refused(response):
                problems.append(f"{where}: {response.status_code}, not refused")
            if leaks(response):
                problems.append(f"{where}: the response shows the owner's {MARKER}")
            problems += [f"{where}: {change}" for change in writes(before, after, user)]
            Codebase.objects.filter(owner=world.other).delete()  # other's own uploads
    return tried, problems


def attempt_as_reviewer(role: str, world: World) -> tuple[int, list[str]]:
    """Every non-public URL with every method as the reviewer invited with `role`: the rows
    their role reaches answer as they do for the owner and write only what the row allows;
    every other row refuses them as it refuses `other`; no response shows SECRET."""
    user = world.reviewers[role]
    client = client_for(user)
    problems: list[str] = []
    tried = 0
    for route, row in MATRIX.items():
        if row.kind == PUBLIC:
            continue
        url = build_url(route, row, world)
        through = bool(row.role) and RANKS[role] >= RANKS[row.role]
        for method in METHODS:
            before = snapshot()
            response = send(client, method, url, world)
            after = snapshot()
            tried += 1
            where = f"{method.upper()} {url} as the {role}"
            if SECRET.encode() in response.content:
                problems.append(f"{where}: the response shows the owner's {SECRET}")
            changes = writes(before, after, user)
            if through:
                allowed = tuple(f"new {label} " for label in row.role_writes)
                changes = [c for c in changes if not c.startswith(allowed)]
                if method in ("get", "head") and response.status_code != row.seen:
                    problems.append(f"{where}: {response.status_code}, expected {row.seen}")
                if method == "post" and response.status_code == 404:
                    problems.append(f"{where}: 404, the {role} should get through")
            else:
                if row.kind in (OBJECT, STAFF) and not refused(response):
                    problems.append(f"{where}: {response.status_code}, not refused")
                if leaks(response):
                    problems.append(f"{where}: the response shows the owner's {MARKER}")
            problems += [f"{where}: {change}" for change in changes]
            Codebase.objects.filter(owner=user).delete()  # their own uploads
    return tried, problems


# ---------------------------------------------------------------- the tests


def test_every_url_pattern_has_a_row_in_the_matrix():
    served = url_patterns()
    assert len(served) == len(set(served)), "two patterns spelled alike"
    unclassified = sorted(set(served) - MATRIX.keys())
    stale = sorted(MATRIX.keys() - set(served))
    assert not unclassified, f"URL patterns with no authorization row: {unclassified}"
    assert not stale, f"matrix rows for URL patterns that no longer exist: {stale}"


def test_the_owner_and_staff_reach_every_object_the_matrix_names(world):
    clients = {
        OWN: client_for(world.owner),
        OBJECT: client_for(world.owner),
        STAFF: client_for(world.staff),
        PUBLIC: client_for(None),
    }
    problems = []
    for route, row in MATRIX.items():
        url = build_url(route, row, world)
        response = clients[row.kind].get(url)
        if response.status_code != row.seen:
            problems.append(f"GET {url}: {response.status_code}, expected {row.seen}")
        if row.shows_marker and MARKER.encode() not in response.content:
            problems.append(f"GET {url}: does not show the owned object")
    assert not problems, "\n".join(problems)


def test_another_user_reads_and_writes_nothing_of_the_owners(world):
    tried, problems = attempt(client_for(world.other), world.other, world)
    assert tried == len(METHODS) * sum(row.kind != PUBLIC for row in MATRIX.values())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("role", ROLES)
def test_each_reviewer_reaches_what_their_role_allows_and_nothing_else(world, role):
    tried, problems = attempt_as_reviewer(role, world)
    assert tried == len(METHODS) * sum(row.kind != PUBLIC for row in MATRIX.values())
    assert not problems, "\n".join(problems)


def test_the_matrix_names_a_role_for_the_plan_and_owner_only_for_the_rest():
    """The rows a reviewer reaches are the plan's reading, commenting and signing off; the
    session's own pages, its controls and everything of the codebase stay the owner's."""
    reached = {route: row.role for route, row in MATRIX.items() if row.role}
    assert reached == {
        "sessions/shared/": VIEWER,
        "sessions/<int:session_id>/plan/": VIEWER,
        "sessions/<int:session_id>/plan.md": VIEWER,
        # An implementation check's report is part of the plan's record (issue 25).
        "sessions/<int:session_id>/plan/implementation/<int:check_id>/": VIEWER,
        "sessions/<int:session_id>/plan/export/<slug:kind>/": VIEWER,
        "sessions/<int:session_id>/plan/compare/": VIEWER,
        "sessions/<int:session_id>/plan/comments/": COMMENTER,
        "sessions/<int:session_id>/plan/comments/<int:comment_id>/reply/": COMMENTER,
        "sessions/<int:session_id>/plan/sign-off/": APPROVER,
    }


def test_nobody_logged_out_gets_past_the_login_page(world):
    tried, problems = attempt(client_for(None), None, world)
    assert tried and not problems, "\n".join(problems)


def test_the_public_pages_need_no_login_and_show_nothing_owned(world):
    anonymous = client_for(None)
    for route, row in MATRIX.items():
        if row.kind != PUBLIC:
            continue
        response = anonymous.get(build_url(route, row, world))
        assert response.status_code == row.seen and not sent_to_login(response), route
        assert not leaks(response), route
    assert anonymous.get("/static/js/session.js").status_code == 200


def test_uploading_the_owners_exact_bytes_does_not_name_the_owners_codebase(world):
    """Duplicate detection compares uploads: it must compare only the uploader's own."""
    response = client_for(world.other).post(
        "/codebases/upload/",
        {"name": "mine", "pack": SimpleUploadedFile("p.json", json_pack(FILES))},
    )
    assert response.status_code == 302, response.content[:500]
    assert not leaks(response)
    mine = Codebase.objects.get(owner=world.other)
    assert mine.name == "mine" and mine.upload_sha256 == world.codebase.upload_sha256


def test_a_link_visitor_writes_one_comment_through_its_link_and_nothing_else(world):
    """The link dimension: whoever holds a share link (nobody logged in, another user, each
    reviewer) writes one comment, with no author, through a "may comment" link, and nothing
    through a read-only, revoked or made-up one; and holding a link opens no other URL."""
    cache.clear()  # the comment rates are counted there
    may_comment = sharing.ShareChoices(may_comment=True)
    commenting = sharing.create_link(world.owner, world.session.pk, "never", may_comment).token
    read_only = sharing.create_link(world.owner, world.session.pk, "never").token
    revoked = sharing.create_link(world.owner, world.session.pk, "never", may_comment)
    sharing.revoke_link(world.owner, world.session.pk, revoked.link.pk)
    refused_tokens = {read_only: 403, revoked.token: 404, "A" * 43: 404}
    problems: list[str] = []
    visitors = {"nobody": None, "other": world.other, **world.reviewers}
    for n, (who, user) in enumerate(visitors.items()):
        client = client_for(user)
        address = f"10.9.0.{n}"  # each a client of its own, within the per-address rate
        for token, status in refused_tokens.items():
            url = f"/sessions/s/{token}/comments/"
            for method in METHODS:
                before = snapshot()
                body = {"version": 1, "where": "summary", "name": "Eve", "text": "pwned"}
                sent = {"data": body} if method == "post" else {}
                response = getattr(client, method)(url, REMOTE_ADDR=address, **sent)
                expected = status if method == "post" else 405
                if response.status_code != expected:
                    problems.append(f"{method} {url} as {who}: {response.status_code}")
                problems += [
                    f"{method} {url} as {who}: {c}" for c in writes(before, snapshot(), user)
                ]
        url = f"/sessions/s/{commenting}/"
        page = client.get(url, REMOTE_ADDR=address)
        if page.status_code != 200 or 'name="name"' not in page.content.decode():
            problems.append(f"GET {url} as {who}: {page.status_code}, no comment form")
        before = snapshot()
        response = client.post(
            url + "comments/", {"version": 1, "where": "summary", "name": who, "text": "Hi"},
            REMOTE_ADDR=address,
        )  # fmt: skip
        if response.status_code != 302:
            problems.append(f"POST {url}comments/ as {who}: {response.status_code}")
        made = [c for c in writes(before, snapshot(), user) if c.startswith("new ")]
        if len(made) != 1 or not made[0].startswith("new conversations.PlanComment "):
            problems.append(f"POST {url}comments/ as {who} wrote {made}")
        elif "'author_id': None" not in made[0] or f"'guest_name': '{who}'" not in made[0]:
            problems.append(f"POST {url}comments/ as {who}: not a guest's comment: {made[0]}")
    assert not problems, "\n".join(problems)
    # Having used the link, a visitor with no account reaches nothing else of the owner's.
    visitor = client_for(None)
    visitor.get(f"/sessions/s/{commenting}/")
    tried, problems = attempt(visitor, None, world)
    assert tried and not problems, "\n".join(problems)
