"""The API's authorization matrix, generated from the routes it serves.

Every operation of /api/v1/ (each route and method Django Ninja serves, read off the URL conf
and the OpenAPI schema) has a row here, or the first test fails: a new endpoint must say what
it serves. Each row is then requested, with the ids of the owner's objects:
- with no token, a made-up one, a mangled one, one sent the wrong way, and a revoked one: 401;
- with the owner's read token on a writing operation: 403;
- with another user's token: 404 for the owner's objects, only their own things on lists;
and none of those responses shows the owner's MARKER or changes anything in the database.
The owner's write token reaches every row: proof that the ids name real objects."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib.sessions.models import Session
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from api.v1 import api
from rag.models import Codebase
from tests.api.world import CHANGED, FILES, MARKER, TokenClient, World, build_world, pack

pytestmark = pytest.mark.django_db

PREFIX = "api/v1/"
PUBLIC = "public"  # anyone: the docs, the schema
OWN = "own"  # a list, or a new thing of the token's owner
OBJECT = "object"  # one of the owner's objects: their tokens only


@dataclass(frozen=True)
class Row:
    kind: str
    kwargs: Callable[[World], dict[str, object]] = lambda w: {}
    body: Callable[[World], dict[str, Any]] | None = None  # a POST's body
    json: bool = False  # the body is JSON (else multipart)
    seen: int = 200  # what the owner's write token (anyone, for PUBLIC) gets
    shows_marker: bool = False  # and whether that shows the owner's MARKER
    names_owners: bool = False  # the body names one of the owner's objects: 404 for others

    @property
    def writes(self) -> bool:
        return self.body is not None


def _codebase(w: World) -> dict[str, object]:
    return {"codebase_id": w.codebase.pk}


def _session(w: World) -> dict[str, object]:
    return {"session_id": w.session.pk}


MATRIX: dict[tuple[str, str], Row] = {
    ("GET", "api/v1/docs"): Row(PUBLIC),
    ("GET", "api/v1/openapi.json"): Row(PUBLIC),
    ("GET", "api/v1/"): Row(PUBLIC, seen=404),  # Ninja's root: nothing there
    ("GET", "api/v1/codebases"): Row(OWN, shows_marker=True),
    ("POST", "api/v1/codebases"): Row(
        OWN, body=lambda w: {"name": "mine", "pack": pack(CHANGED)}, seen=201
    ),
    ("GET", "api/v1/codebases/<codebase_id>"): Row(OBJECT, _codebase, shows_marker=True),
    ("GET", "api/v1/codebases/<codebase_id>/versions"): Row(OBJECT, _codebase),
    ("GET", "api/v1/sessions"): Row(OWN, shows_marker=True),
    ("POST", "api/v1/sessions"): Row(
        OWN,
        body=lambda w: {"codebase": w.codebase.pk, "task": "Add a helper", "mode": "planning"},
        json=True,
        seen=201,
        names_owners=True,
    ),
    ("GET", "api/v1/sessions/<session_id>"): Row(OBJECT, _session, shows_marker=True),
    # The owner's session has ended: both answer why they cannot act, reaching the object.
    ("POST", "api/v1/sessions/<session_id>/approve"): Row(
        OBJECT, _session, body=lambda w: {"override": ""}, json=True, seen=409
    ),
    ("POST", "api/v1/sessions/<session_id>/stop"): Row(
        OBJECT, _session, body=lambda w: {}, json=True, seen=409
    ),
    ("GET", "api/v1/plans"): Row(OWN, shows_marker=True),
    ("GET", "api/v1/plans/<session_id>"): Row(OBJECT, _session, shows_marker=True),
    ("GET", "api/v1/plans/<session_id>/versions"): Row(OBJECT, _session),
    ("GET", "api/v1/plans/<session_id>/versions/<version>"): Row(
        OBJECT, lambda w: {"session_id": w.session.pk, "version": 1}, shows_marker=True
    ),
    ("GET", "api/v1/plans/<session_id>/implementation-checks"): Row(OBJECT, _session),
    ("GET", "api/v1/plans/<session_id>/export/<kind>"): Row(
        OBJECT, lambda w: {"session_id": w.session.pk, "kind": "json"}, shows_marker=True
    ),
    # Last: the owner's new version sets the codebase indexing, and a session needs it ready.
    ("POST", "api/v1/codebases/<codebase_id>/versions"): Row(
        OBJECT, _codebase, body=lambda w: {"pack": pack(CHANGED)}, seen=202, shows_marker=True
    ),
}


# ---------------------------------------------------------------- the routes served


def served_routes() -> list[str]:
    """Every pattern under /api/v1/, spelled as `resolve(url).route` spells it."""
    found: list[str] = []

    def walk(resolver: URLResolver, prefix: str) -> None:
        for entry in resolver.url_patterns:
            route = prefix + str(entry.pattern).removeprefix("^")
            if isinstance(entry, URLResolver):
                walk(entry, route)
            elif isinstance(entry, URLPattern) and route.startswith(PREFIX):
                found.append(route)

    walk(get_resolver(), "")
    return sorted(set(found))  # Ninja adds one pattern per operation on a path


def _schema_path(route: str) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)


def served_operations() -> set[tuple[str, str]]:
    """(method, route) of every operation: the schema's methods of each served route; a route
    the schema does not list (the docs, the schema itself) counts with GET."""
    paths = api.get_openapi_schema()["paths"]
    operations: set[tuple[str, str]] = set()
    for route in served_routes():
        methods = paths.get(_schema_path(route), {"get": {}})
        operations |= {(method.upper(), route) for method in methods}
    return operations


def url_for(route: str, row: Row, world: World) -> str:
    kwargs = row.kwargs(world)
    path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(kwargs[m.group(1)]), route)
    assert resolve(path).route == route, (path, resolve(path).route, route)
    return path


def send(client: TokenClient, method: str, route: str, row: Row, world: World) -> Any:
    url = url_for(route, row, world)
    if method == "GET":
        return client.get(url)
    assert row.body is not None, f"{method} {route} has no body in the matrix"
    if row.json:
        return client.post_json(url, row.body(world))
    return client.post(url, row.body(world))


# ---------------------------------------------------------------- judging


Snapshot = dict[str, dict[Any, dict[str, Any]]]


def snapshot() -> Snapshot:
    """Every row of every model (login sessions aside; a token's last use is bookkeeping)."""
    rows: Snapshot = {}
    for model in apps.get_models():
        if model is Session:
            continue
        pk = model._meta.pk.attname  # type: ignore[union-attr]
        values = model._default_manager.values()
        rows[model._meta.label] = {
            r[pk]: {k: v for k, v in r.items() if k != "last_used_at"} for r in values
        }
    return rows


def writes(before: Snapshot, after: Snapshot, allowed_owner: Any = None) -> list[str]:
    """What changed; a new codebase or session of `allowed_owner` is theirs to make."""
    found = []
    for label, rows in after.items():
        old = before.get(label, {})
        for pk, row in rows.items():
            if pk not in old:
                own = label in ("rag.Codebase", "conversations.PlanningSession")
                if not (own and allowed_owner and row.get("owner_id") == allowed_owner.pk):
                    found.append(f"new {label} {row}")
            elif row != old[pk]:
                found.append(f"changed {label} #{pk}")
        found += [f"deleted {label} #{pk}" for pk in old.keys() - rows.keys()]
    return found


def try_all(
    client: TokenClient,
    world: World,
    expect: Callable[[Row], int | None],
    allowed_owner: Any = None,
    rows: Callable[[Row], bool] = lambda row: row.kind != PUBLIC,
) -> tuple[int, list[str]]:
    """Send every operation `rows` picks; each must get `expect(row)` (None: any 2xx), show
    no MARKER and change nothing. Returns (requests, problems)."""
    problems: list[str] = []
    tried = 0
    for (method, route), row in MATRIX.items():
        if not rows(row):
            continue
        before = snapshot()
        response = send(client, method, route, row, world)
        after = snapshot()
        tried += 1
        where = f"{method} {route}"
        wanted = expect(row)
        ok = 200 <= response.status_code < 300 if wanted is None else response.status_code == wanted
        if not ok:
            problems.append(f"{where}: {response.status_code}, expected {wanted or '2xx'}")
        if MARKER.encode() in response.content:
            problems.append(f"{where}: the response shows the owner's {MARKER}")
        problems += [f"{where}: {change}" for change in writes(before, after, allowed_owner)]
        Codebase.objects.exclude(owner=world.owner).delete()  # the other's own uploads
    return tried, problems


@pytest.fixture
def world(django_user_model) -> World:
    return build_world(django_user_model)


# ---------------------------------------------------------------- the tests


def test_every_api_operation_has_a_row_in_the_matrix():
    served = served_operations()
    unclassified = sorted(served - MATRIX.keys())
    stale = sorted(MATRIX.keys() - served)
    assert not unclassified, f"API operations with no authorization row: {unclassified}"
    assert not stale, f"matrix rows for operations that no longer exist: {stale}"


def test_the_matrix_knows_an_operation_added_without_a_row(monkeypatch):
    real = api.get_openapi_schema()

    def with_delete(*args: Any, **kwargs: Any) -> dict[str, Any]:
        paths = {k: dict(v) for k, v in real["paths"].items()}
        paths["/api/v1/codebases/{codebase_id}"]["delete"] = {}
        return {**real, "paths": paths}

    monkeypatch.setattr(api, "get_openapi_schema", with_delete)
    assert ("DELETE", "api/v1/codebases/<codebase_id>") in served_operations() - MATRIX.keys()


def test_the_owners_write_token_reaches_every_object_the_matrix_names(world):
    owner = TokenClient(world.write)
    anyone = TokenClient(None)
    problems = []
    for (method, route), row in MATRIX.items():
        client = anyone if row.kind == PUBLIC else owner
        response = send(client, method, route, row, world)
        if response.status_code != row.seen:
            problems.append(f"{method} {route}: {response.status_code}, expected {row.seen}")
        if row.shows_marker and MARKER.encode() not in response.content:
            problems.append(f"{method} {route}: does not show the owned object")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="no token"),
        pytest.param("Bearer pa_" + secrets.token_urlsafe(32), id="made-up token"),
        pytest.param("Bearer not-a-token", id="not a token at all"),
        pytest.param("Bearer {write}x", id="the owner's token mangled"),
        pytest.param("Token {write}", id="the owner's token under another scheme"),
        pytest.param("Bearer {revoked}", id="the owner's revoked token"),
    ],
)
def test_a_request_without_a_live_token_is_refused_with_401(world, authorization):
    headers = {}
    if authorization is not None:
        headers["HTTP_AUTHORIZATION"] = authorization.format(
            write=world.write, revoked=world.revoked
        )
    client = TokenClient(None, **headers)
    tried, problems = try_all(client, world, lambda row: 401)
    assert tried == sum(row.kind != PUBLIC for row in MATRIX.values())
    assert not problems, "\n".join(problems)


def test_a_read_token_cannot_write(world):
    tried, problems = try_all(
        TokenClient(world.read), world, lambda row: 403, rows=lambda row: row.writes
    )
    assert tried == sum(row.writes for row in MATRIX.values()) > 0
    assert not problems, "\n".join(problems)


def test_a_read_token_reads_what_its_owner_can(world):
    reader = TokenClient(world.read)
    for (method, route), row in MATRIX.items():
        if row.kind != PUBLIC and not row.writes:
            response = send(reader, method, route, row, world)
            assert response.status_code == row.seen, (route, response.status_code)


def test_another_users_token_reads_and_writes_nothing_of_the_owners(world):
    def expect(row: Row) -> int | None:
        # OWN: their own lists and uploads; anything naming the owner's objects: not found.
        return 404 if row.kind == OBJECT or row.names_owners else None

    tried, problems = try_all(TokenClient(world.others), world, expect, allowed_owner=world.other)
    assert tried == sum(row.kind != PUBLIC for row in MATRIX.values())
    assert not problems, "\n".join(problems)


def test_another_user_cannot_start_a_session_on_the_owners_codebase(world):
    response = TokenClient(world.others).post_json(
        "/api/v1/sessions", {"codebase": world.codebase.pk, "task": "Read their code"}
    )
    assert response.status_code == 404
    assert not world.codebase.sessions.exclude(pk=world.session.pk).exists()


def test_the_web_matrix_leaves_the_api_to_this_one():
    from tests.security import test_authz_matrix as web

    assert not [r for r in web.MATRIX if r.startswith(PREFIX)]
    assert FILES  # the world's files are what the MARKER hides in
