"""Read-only share links to a plan. The link carries a random token; only its sha256 is stored,
so a copy of the database opens nothing and the owner sees the token once, at creation.
Nothing here knows about HTTP: views turn the named errors into 404s.

What a link shows is chosen when it is made (`ShareChoices`) and fixed for its life. By default
it pins the latest version and leaves out the codebase's rules and the investigation's evidence:
a link used to show every version, including ones written after it was sent, so a plan revised
for internal eyes reached whoever held an old link. `shared_plan` is the one place that decides
what a token opens; the page and anything else reachable with a token go through it.

A link made with "may comment" also takes comments on the version it shows from whoever holds
it, under a name they give (`SharedPlan.commentable`; the use case is
conversations.link_comments)."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from conversations.models import Message, Plan, PlanningSession, ShareLink
from conversations.services import SessionNotFound, get_session_for

# What the owner may pick on the plan page: form value → lifetime (None: never expires).
EXPIRY_CHOICES: dict[str, tuple[str, timedelta | None]] = {
    "never": ("Never", None),
    "1d": ("1 day", timedelta(days=1)),
    "7d": ("7 days", timedelta(days=7)),
    "30d": ("30 days", timedelta(days=30)),
}

# What a link shows of the plan's versions: form value → what the owner's list calls it.
PIN_CHOICES: dict[str, str] = {
    "version": "This version only",
    "latest": "Always the latest",
}

# The plan sections agents.plan_rules writes: the codebase's rules the plan was checked against,
# the overrides with their reasons, and the pinned context (files and notes) the agents were shown.
RULES_SECTIONS = ("Rules", "Pinned context used")

# secrets.token_urlsafe(32) gives 43 characters of the URL-safe base64 alphabet.
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")


class ShareLinkError(Exception):
    """A share-link action was refused; the message says why."""


class ShareLinkNotFound(ShareLinkError):
    """No such link for this user, or a token that opens nothing (unknown, revoked, expired)."""


@dataclass(frozen=True)
class ShareChoices:
    """What a new link shows, as the owner chose it on the form."""

    pin: str = "version"
    """A key of PIN_CHOICES: the latest version now, or always the latest."""
    shows_rules: bool = False
    shows_evidence: bool = False
    may_comment: bool = False
    """Whoever holds the link may comment on the version it shows, under a name they give."""

    @classmethod
    def from_form(cls, data: Mapping[str, str]) -> ShareChoices:
        """The choices a create form posted: a ticked box is present, an unticked one absent."""
        return cls(
            pin=data.get("pin", "version"),
            shows_rules=bool(data.get("shows_rules")),
            shows_evidence=bool(data.get("shows_evidence")),
            may_comment=bool(data.get("may_comment")),
        )


@dataclass(frozen=True)
class SharedPlan:
    """What one request with a token may see: built only by `shared_plan`."""

    link: ShareLink
    plan: Plan
    """The version shown."""
    versions: list[Plan]
    """The versions this link opens, oldest first (a pinned link: its version alone)."""
    newer: int
    """How many versions newer than the pinned one exist; never their content. 0 unpinned."""
    markdown: str
    """The plan's text without what the owner left out."""
    evidence: list[Message] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    """One sentence for each thing the owner chose not to share."""
    checks: list[Any] = field(default_factory=list)
    """The finished implementation checks of the version shown (their code hunks only when
    the owner shared the evidence)."""
    commentable: bool = False
    """Whether the link takes comments on the version shown: a "may comment" link, on its
    pinned version, or on the latest one when it always shows the latest (an older version
    there is read as the plan's owner reads it: its threads moved on to the latest)."""


@dataclass(frozen=True)
class CreatedLink:
    link: ShareLink
    token: str
    """The raw token: shown to the owner once, never stored."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


def create_link(
    user: Any, session_id: int, expiry: str, choices: ShareChoices | None = None
) -> CreatedLink:
    """A new link to the session's plan, for its owner only. Without choices: the latest
    version pinned, no rules, no evidence."""
    choices = choices or ShareChoices()
    session = _own_session(user, session_id)
    if expiry not in EXPIRY_CHOICES:
        raise ShareLinkError("Choose when the link expires: never, 1 day, 7 days or 30 days.")
    if choices.pin not in PIN_CHOICES:
        raise ShareLinkError("Choose what the link shows: this version only, or always the latest.")
    latest = session.plans.order_by("-version").first()
    if latest is None:
        raise ShareLinkError("This session has no plan to share yet.")
    lifetime = EXPIRY_CHOICES[expiry][1]
    token = new_token()
    link = ShareLink.objects.create(
        session=session,
        token_hash=hash_token(token),
        expires_at=timezone.now() + lifetime if lifetime else None,
        created_by=user,
        pinned_plan=latest if choices.pin == "version" else None,
        shows_rules=choices.shows_rules,
        shows_evidence=choices.shows_evidence,
        may_comment=choices.may_comment,
    )
    return CreatedLink(link=link, token=token)


def revoke_link(user: Any, session_id: int, link_id: int) -> ShareLink:
    """Revoke one of the owner's links; revoking a revoked link changes nothing."""
    session = _own_session(user, session_id)
    link = ShareLink.objects.filter(pk=link_id, session=session).first()
    if link is None:
        raise ShareLinkNotFound("That share link does not exist.")
    revoke(ShareLink.objects.filter(pk=link.pk))
    link.refresh_from_db()
    return link


def revoke(links: QuerySet[ShareLink]) -> int:
    """Revoke the links not revoked yet (the first revocation time stays); returns how many."""
    return links.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def active_links(user: Any, session_id: int) -> QuerySet[ShareLink]:
    return ShareLink.objects.filter(session=_own_session(user, session_id)).active()


def resolve(token: str) -> ShareLink:
    """The working link a token opens. The lookup is by the token's hash, so the database
    compares digests, never the token: its timing tells nothing about a valid token."""
    if not _TOKEN_SHAPE.fullmatch(token):
        raise ShareLinkNotFound("No such link.")
    link = (
        ShareLink.objects.active()
        .select_related("session", "pinned_plan")
        .filter(token_hash=hash_token(token))
        .first()
    )
    if link is None:
        raise ShareLinkNotFound("No such link.")
    return link


def shared_plan(link: ShareLink, version: str = "") -> SharedPlan:
    """What `link` shows when asked for `version` ("" for its default). A pinned link opens its
    version and nothing else: asking for any other, older or newer, is not found, so a token
    sent for v3 cannot be walked to v4 by changing the number."""
    plans = link.session.plans.order_by("version")
    # As on the owner's plan page: a number asks for that version, anything else the default.
    asked = int(version) if version.isascii() and version.isdigit() and len(version) < 10 else None
    pinned = link.pinned_plan
    if pinned is not None:
        if asked is not None and asked != pinned.version:
            raise ShareLinkNotFound("This link shows one version of the plan.")
        plan, versions = pinned, [pinned]
        newer = plans.filter(version__gt=pinned.version).count()
    else:
        versions = list(plans)
        matching = [p for p in versions if p.version == asked] if asked is not None else versions
        if not matching:
            raise ShareLinkNotFound("No such version.")
        plan, newer = matching[-1], 0
    withheld = []
    markdown = plan.markdown
    if not link.shows_rules:
        markdown = without_sections(markdown, RULES_SECTIONS)
        withheld.append(
            "The owner did not share the codebase's rules: the plan's Rules and Pinned context "
            "sections are left out."
        )
    found: list[Message] = []
    if link.shows_evidence:
        found = list(evidence(link.session, until=plan if pinned is not None else None))
    else:
        withheld.append(
            "The owner did not share the code excerpts the investigation found; the plan's "
            "references to them ([E1], [E2]…) have nothing to point to here."
        )
    return SharedPlan(
        link=link,
        plan=plan,
        versions=versions,
        newer=newer,
        markdown=markdown,
        evidence=found,
        withheld=withheld,
        checks=list(plan.implementation_checks.filter(status="done").order_by("-number")),
        commentable=link.may_comment and (pinned is not None or plan == versions[-1]),
    )


def without_sections(markdown: str, titles: tuple[str, ...]) -> str:
    """The markdown without its `## ` sections of these titles (heading to the next `## `).
    Lines inside code fences are code, not headings: a step's current code can hold `## x`."""
    kept: list[str] = []
    skipping = False
    fence = ""
    for line in markdown.splitlines(keepends=True):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif line.startswith("## "):
            skipping = line[3:].strip().rstrip("#").strip() in titles
        if not skipping:
            kept.append(line)
    return "".join(kept)


def evidence(session: PlanningSession, until: Plan | None = None) -> QuerySet[Message]:
    """What the investigation found: its system messages, in order. With `until`, only what was
    found before that version was written: a revision investigates again, and what it found
    belongs to the newer version."""
    found = session.messages.filter(role=Message.Role.SYSTEM, node="investigate")
    if until is not None:
        found = found.filter(created_at__lte=until.created_at)
    return found.order_by("seq")


def _own_session(user: Any, session_id: int) -> PlanningSession:
    try:
        return get_session_for(user, session_id)
    except SessionNotFound:
        raise ShareLinkNotFound("That session does not exist.") from None
