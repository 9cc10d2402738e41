"""Comments through a share link (issue 24, item 4): a link made with "may comment" takes new
threads on the version it shows from whoever holds it, under a name they give. Such a comment
belongs to no account (even when the reader happens to be logged in): it records the link and
the name, is shown everywhere with a "via share link" mark, is placed in later versions and
reaches the model like any other (conversations.plan_comments), and its writer can neither
answer, resolve nor edit anything.

A link is a bearer token that may travel further than its owner meant, so what it lets a
stranger write is bounded: the same length limit as any comment, a name of at most
MAX_NAME_CHARS, and rates per link and per client address counted in Django's cache (fixed
windows: a burst at a window's edge may reach twice a limit, which is still bounded). Nothing
here knows about HTTP: the view turns the named errors into 403, 404 and 429."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.core.cache import cache

from conversations import plan_comments, sharing
from conversations.models import PlanComment, ShareLink

MAX_NAME_CHARS = 60
"""The longest name a link commenter may give (PlanComment.guest_name holds this many)."""


@dataclass(frozen=True)
class Rate:
    """At most `limit` comments per `seconds`, counted for one key."""

    limit: int
    seconds: int
    where: str
    """What is counted, as the refusal says it."""


PER_LINK = Rate(30, 3600, "through this link in the last hour")
"""All readers of one link together: a link posted somewhere public cannot flood the plan."""
PER_CLIENT = Rate(5, 60, "from your address in the last minute")
"""One address, across every link: a person types a few comments a minute, a script more."""


clock: Callable[[], float] = time.time
"""What the rates read the time from (a test holds it still inside one window)."""


class LinkCommentError(Exception):
    """The comment cannot be written as asked; the message says why."""


class CommentsClosed(LinkCommentError):
    """The link does not take comments (it was made read-only), or not on this version."""


class TooManyLinkComments(LinkCommentError):
    """A rate was reached; the message says which, and how long to wait."""


def clean_name(name: object) -> str:
    """The name a reader gave, on one line; refused when empty or too long."""
    name = " ".join(name.split()) if isinstance(name, str) else ""
    if not name:
        raise LinkCommentError("Give a name: the plan's readers see it beside your comment.")
    if not name.isprintable():
        raise LinkCommentError("A name is letters, digits and punctuation on one line.")
    if len(name) > MAX_NAME_CHARS:
        raise LinkCommentError(f"Keep your name under {MAX_NAME_CHARS} characters.")
    return name


def add_comment(
    link: ShareLink, version: str, where: object, name: object, text: object, client: str
) -> PlanComment:
    """A new thread from a reader of `link` on `where` of version `version` (a section key or
    "line:<path>:<line>", as on the plan page), written under `name` from address `client`.
    Raises sharing.ShareLinkNotFound for a version the link does not show."""
    if not link.may_comment:
        raise CommentsClosed("This link is read-only: its owner did not open it to comments.")
    shared = sharing.shared_plan(link, version)
    if not shared.commentable:
        raise CommentsClosed(
            f"v{shared.plan.version} is not the latest version; comment on the latest one."
        )
    name = clean_name(name)
    try:
        body = plan_comments.clean_text(text)
        kind, anchor = plan_comments.anchor_in(shared.plan, where)
    except plan_comments.CommentError as exc:
        raise LinkCommentError(str(exc)) from None
    # Counted only once the comment is sure to be written: a typo costs no one a turn.
    _spend(f"link-comments:client:{client}", PER_CLIENT)
    _spend(f"link-comments:link:{link.pk}", PER_LINK)
    return PlanComment.objects.create(
        session=link.session,
        plan=shared.plan,
        author=None,
        share_link=link,
        guest_name=name,
        anchor_kind=kind,
        anchor=anchor,
        text=body,
    )


def threads(shared: sharing.SharedPlan) -> list[plan_comments.Thread]:
    """The threads started through this link, placed in the version it shows, with their
    answers: a link's readers see what was said through it, not the team's own discussion."""
    found = plan_comments.threads(shared.link.session, shared.plan)
    return [t for t in found if t.comment.share_link_id == shared.link.pk]


def _spend(key: str, rate: Rate) -> None:
    """Count one comment against `rate` in the window now, or refuse it."""
    now = clock()
    window = int(now) // rate.seconds
    bucket = f"{key}:{window}"
    cache.add(bucket, 0, timeout=rate.seconds + 5)
    try:
        count = cache.incr(bucket)
    except ValueError:  # expired between add and incr
        cache.set(bucket, 1, timeout=rate.seconds + 5)
        count = 1
    if count > rate.limit:
        wait = max(1, math.ceil((window + 1) * rate.seconds - now))
        raise TooManyLinkComments(
            f"{rate.limit} comments were written {rate.where}, the most allowed; "
            f"try again in {wait} s."
        )
