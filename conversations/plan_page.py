"""What the plan page shows of one version: its sections, each rendered (sanitized) with the
controls to approve, edit or regenerate it, what the version's checks found, and whether the
plan as a whole is approved (conversations.plan_approval)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from agents.plan_sections import section_text, sections_of
from conversations import plan_comments
from conversations.models import ApprovalRule, Plan, PlanningSession, Reviewer, SignOff
from conversations.permissions import OWNER, can_sign_off, plan_role
from conversations.plan_approval import approval_context
from conversations.plan_diff import sections
from conversations.rendering import render_markdown
from conversations.reviewers import SCOPES, reviewers_of
from conversations.services import can_revise
from conversations.store import file_url_prefix


def checks(plan: Plan) -> dict[str, Any]:
    """What this version's path checks and citation checks found."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    files = Counter(
        str(f.get("status", "")) for f in data.get("files") or [] if isinstance(f, dict)
    )
    citations = [c for c in data.get("citations") or [] if isinstance(c, dict)]
    # Paths and names written anywhere else (Testing, Risks, steps…), as the quality line
    # judged them (agents.plan_quality): a Files table that checks out says nothing of those.
    quality = data.get("quality") if isinstance(data.get("quality"), dict) else None
    listed = {str(f.get("path")) for f in data.get("files") or [] if isinstance(f, dict)}
    elsewhere = [p for p in (quality or {}).get("invented_paths") or [] if p not in listed]
    return {
        "exists": files.get("exists", 0),
        "new": files.get("new", 0),
        "missing": files.get("missing", 0) + files.get("invalid", 0) + len(elsewhere),
        "missing_elsewhere": elsewhere,
        "names": list((quality or {}).get("invented_names") or []),
        "names_checked": quality is not None,
        "citations": len(citations),
        "broken": sum(1 for c in citations if not c.get("exists")),
        "checked": "citations" in data,
    }


def page_context(
    session: PlanningSession, plan: Plan, *, viewer: Any = None, **extra: Any
) -> dict[str, Any]:
    """The plan page's context for `plan` as `viewer` (the owner, by default) may use it: the
    owner gets every control, a reviewer what their role allows (conversations.permissions).
    `extra`: editing, edit_text, preview_html, diff…"""
    viewer = session.owner if viewer is None else viewer
    role = plan_role(viewer, session)
    is_owner = role == OWNER
    # Citations link to the codebase's pages, which are the owner's: a reviewer reads them as
    # text, as a share link's reader does.
    prefix = file_url_prefix(session.codebase_id) if is_owner else None
    latest = session.plans.order_by("-version").values_list("version", flat=True).first()
    editable = latest == plan.version
    data = plan.structured if isinstance(plan.structured, dict) else {}
    found = {s.title: s.body for s in sections(plan.markdown)}
    approved = set(plan.approved_sections or [])
    groups: list[dict[str, Any]] = []
    for info in sections_of(data):
        if not groups or groups[-1]["heading"] != info.heading:
            body = found.get(info.heading, "")
            groups.append(
                {
                    "heading": info.heading,
                    "html": render_markdown(f"## {info.heading}\n\n{body}", file_url_prefix=prefix)
                    if body
                    else "",
                    "controls": [],
                }
            )
        groups[-1]["controls"].append(
            {"key": info.key, "label": info.label, "approved": info.key in approved}
        )
    head = found.get("", "")
    versions = session.plans.order_by("version").select_related("author", "reviewer")
    return {
        "session": session,
        "plan": plan,
        "plan_html": render_markdown(plan.markdown, file_url_prefix=prefix),
        "head_html": render_markdown(head, file_url_prefix=prefix) if head else "",
        "plan_sections": groups,
        "editable": editable,
        "role": role,
        "is_owner": is_owner,
        # Editing, approving and regenerating sections: the owner's alone.
        "can_edit": editable and is_owner,
        "can_revise": editable and can_revise(viewer, session),
        "checks": checks(plan),
        "versions": versions,
        "approved_count": len(approved),
        "section_count": sum(len(g["controls"]) for g in groups),
        **approval_context(plan, latest, viewer),
        **comments_context(session, plan, editable, viewer),
        **reviewers_context(session, plan, viewer, editable, is_owner),
        **extra,
    }


def editor_context(plan: Plan, key: str, text: str | None = None) -> dict[str, Any]:
    """The editor of section `key` opened on the page (only on the latest version)."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    if not key or key not in {s.key for s in sections_of(data)}:
        return {}
    return {"editing": key, "edit_text": section_text(data, key) if text is None else text}


def comments_context(
    session: PlanningSession, plan: Plan, editable: bool, viewer: Any = None
) -> dict[str, Any]:
    """The comment threads placed in version `plan`, grouped by the section (or cited line)
    they sit on in document order, the outdated ones last; what can be commented on; and what
    this version was asked to address."""
    data = plan.structured if isinstance(plan.structured, dict) else {}
    found = plan_comments.threads(session, plan)
    infos = sections_of(data)
    groups: dict[str, dict[str, Any]] = {
        info.key: {"key": info.key, "label": info.label, "threads": []} for info in infos
    }
    lines: dict[str, dict[str, Any]] = {}
    outdated: list[plan_comments.Thread] = []
    for thread in found:
        place = thread.placement
        if place.key is None:
            outdated.append(thread)
        elif place.key:
            groups[place.key]["threads"].append(thread)
        else:
            lines.setdefault(place.line, {"key": "", "label": place.line, "threads": []})[
                "threads"
            ].append(thread)
    shown = [g for g in [*groups.values(), *lines.values()] if g["threads"]]
    for group in shown:
        group["open"] = sum(1 for t in group["threads"] if t.is_open)
    addressed = [t.comment.pk for t in found if any(result == plan for _, result, _ in t.asked)]
    viewer = session.owner if viewer is None else viewer
    commenting = plan_comments.can_comment(viewer, session)
    return {
        "comment_groups": shown,
        "outdated_threads": outdated,
        "comment_count": len(found),
        "open_comment_count": sum(1 for t in found if t.is_open and not t.placement.outdated),
        "outdated_count": len(outdated),
        "can_comment": commenting,
        # A new thread goes on the latest version only (its sections get a Comment form).
        "commentable": editable and commenting,
        "comment_targets": plan_comments.targets(plan),
        "comments_revisable": editable and commenting and can_revise(viewer, session),
        "addressed_here": addressed,
        # Resolve/Reopen only where the server would take it (the owner, a thread's author).
        "resolvable": {t.comment.pk for t in found if plan_comments.can_resolve(viewer, t.comment)},
    }


def reviewers_context(
    session: PlanningSession, plan: Plan, viewer: Any, editable: bool, is_owner: bool
) -> dict[str, Any]:
    """The owner's Reviewers panel (who is invited, as what, to what; the approval rule) and
    whether `viewer` may sign this version off now."""
    signing = (
        editable and plan.review_status != Plan.Review.APPROVED and can_sign_off(viewer, session)
    )
    return {
        "reviewers": list(reviewers_of(session)) if is_owner else [],
        "reviewer_roles": Reviewer.Role.choices,
        "reviewer_scopes": SCOPES,
        "approval_rules": ApprovalRule.choices,
        "can_sign_off": signing,
        "verdicts": SignOff.Verdict.choices,
    }
