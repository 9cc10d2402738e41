"""The plan page and its extras: exports, comparing two versions, share links, finishing the
plan section by section (approve, edit, regenerate), approving it as a whole, and its reviewers
(invite, remove, the approval rule, sign-offs). Each looks the session up for this user and
what their role allows (404 otherwise), does one thing and renders or redirects."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from conversations import (
    export_formats,
    link_comments,
    plan_approval,
    plan_comments,
    plan_sections,
    reviewers,
    services,
    sharing,
    store,
)
from conversations.exports import safe_markdown
from conversations.models import Plan, PlanningSession, Reviewer, ShareLink
from conversations.plan_diff import diff_plans
from conversations.plan_page import editor_context, page_context
from conversations.rendering import render_markdown
from conversations.views import _plan_or_404, _session_or_404
from planagents.client_ip import client_ip


def _readable_or_404(
    request: HttpRequest, session_id: int, role: str = Reviewer.Role.VIEWER
) -> PlanningSession:
    """The session whose plan this user may read (the owner, or a reviewer whose role is at
    least `role`); 404 for everyone else."""
    try:
        return reviewers.get_plan_session_for(request.user, session_id, role)
    except services.SessionNotFound:
        raise Http404("No such session") from None


@login_required
def plan_page(request: HttpRequest, session_id: int) -> HttpResponse:
    """One plan version, section by section, with what this user's role lets them do;
    `?edit=<section>` opens that section's editor (the owner's)."""
    session = _readable_or_404(request, session_id)
    plan = _plan_or_404(request, session)
    editor = editor_context(plan, request.GET.get("edit", ""))
    context = page_context(session, plan, viewer=request.user, **editor)
    if not context["can_edit"]:
        context.pop("editing", None)
    return render(request, "conversations/plan.html", context)


@login_required
def plan_download(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _readable_or_404(request, session_id)
    plan = _plan_or_404(request, session)
    # The same policy as the other exports: no live outside link or image in pasted markdown.
    response = HttpResponse(
        safe_markdown(plan.markdown), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="plan-{session.pk}-v{plan.version}.md"'
    return response


@login_required
def shared_with_me(request: HttpRequest) -> HttpResponse:
    """The plans other users invited this user to review, with the role each gives."""
    found = reviewers.shared_with(request.user)
    return render(request, "conversations/shared.html", {"shared": found})


@login_required
def plan_export(request: HttpRequest, session_id: int, kind: str) -> HttpResponse:
    """One plan version as JSON, a GitHub-issue body, a hand-off prompt or a spec layout
    (Spec Kit, Kiro, AGENTS.md); `?download=1` makes it a file, else it is shown as text (what
    the copy button reads); `?zip=1` gives a layout as a zip of its folders."""
    export = export_formats.EXPORTS.get(kind)
    if export is None:
        raise Http404("No such export")
    session = _readable_or_404(request, session_id)
    plan = _plan_or_404(request, session)
    name = f"plan-{session.pk}-v{plan.version}"
    if request.GET.get("zip"):
        if export.archive is None:
            raise Http404("This export is one document, not a folder layout")
        response = HttpResponse(export.archive(plan), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{name}-{kind}.zip"'
        response["X-Content-Type-Options"] = "nosniff"
        return response
    response = HttpResponse(export.render(plan), content_type=export.content_type)
    name = f"{name}.{export.extension}"
    disposition = "attachment" if request.GET.get("download") else "inline"
    response["Content-Disposition"] = f'{disposition}; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _version(plans: object, value: str) -> Plan:
    if not (value.isascii() and value.isdigit() and len(value) < 10):
        raise Http404("No such version")
    return get_object_or_404(plans, version=int(value))  # type: ignore[arg-type]


@login_required
def plan_compare(request: HttpRequest, session_id: int) -> HttpResponse:
    """`?a=1&b=2`: two versions side by side, the older on the left, section by section and
    word by word, each headed with who made it and when."""
    session: PlanningSession = _readable_or_404(request, session_id)
    plans = Plan.objects.filter(session=session).select_related("author")
    latest = plans.order_by("-version").first()
    if latest is None:
        raise Http404("This session has no plan yet")
    b = _version(plans, request.GET.get("b") or str(latest.version))
    a = _version(plans, request.GET.get("a") or str(max(b.version - 1, 1)))
    old, new = sorted((a, b), key=lambda p: p.version)
    diff = diff_plans(old.markdown, new.markdown)
    statuses = [s.status for s in diff]
    return render(
        request,
        "conversations/plan_compare.html",
        {
            "session": session,
            "plan": new,
            "base": old,
            "diff": diff,
            "counts": [
                (statuses.count(k), k) for k in ("changed", "added", "removed", "unchanged")
            ],
            "versions": plans.order_by("version").select_related("reviewer"),
            "addressed": plan_comments.addressed_between(session, old, new),
        },
    )


@login_required
@require_POST
def share_create(request: HttpRequest, session_id: int) -> HttpResponse:
    """Create a read-only link and show it, this once, on the plan page: only its hash is
    kept, so the response is not cached and a reload does not show it again."""
    try:
        created = sharing.create_link(
            request.user,
            session_id,
            request.POST.get("expiry", ""),
            sharing.ShareChoices.from_form(request.POST),
        )
    except sharing.ShareLinkNotFound:
        raise Http404("No such session") from None
    except sharing.ShareLinkError as exc:
        messages.error(request, str(exc))
        return redirect("conversations:plan", session_id=session_id)
    session = created.link.session
    plan = _plan_or_404(request, session)
    url = reverse("conversations:plan_shared", kwargs={"token": created.token})
    response = render(
        request,
        "conversations/plan.html",
        page_context(
            session, plan, share_created=request.build_absolute_uri(url), share_link=created.link
        ),
    )
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def share_revoke(request: HttpRequest, session_id: int, link_id: int) -> HttpResponse:
    try:
        sharing.revoke_link(request.user, session_id, link_id)
    except sharing.ShareLinkNotFound:
        raise Http404("No such share link") from None
    messages.success(request, "The share link was revoked; it no longer opens the plan.")
    return redirect("conversations:plan", session_id=session_id)


@never_cache
@require_http_methods(["GET", "HEAD"])
def plan_shared(request: HttpRequest, token: str) -> HttpResponse:
    """The public plan behind a share link: no login, no way into the rest of the app.
    Citations are not linked (the code pages need an account). A "may comment" link also
    shows its comment form and the threads started through it."""
    try:
        shared = sharing.shared_plan(sharing.resolve(token), request.GET.get("version", ""))
    except sharing.ShareLinkNotFound:
        raise Http404("No such link") from None
    return _shared_page(request, shared, token)


@never_cache
@require_POST
def plan_shared_comment(request: HttpRequest, token: str) -> HttpResponse:
    """A comment from a reader of a "may comment" link (conversations.link_comments): a new
    thread on the version the link shows, under the name they gave. 404 for a link that opens
    nothing (or a version it does not show), 403 for a read-only link, 429 past a rate."""
    try:
        link = sharing.resolve(token)
        comment = link_comments.add_comment(
            link, request.POST.get("version", ""), request.POST.get("where", ""),
            request.POST.get("name", ""), request.POST.get("text", ""),
            client_ip(request) or "unknown",
        )  # fmt: skip
    except sharing.ShareLinkNotFound:
        raise Http404("No such link") from None
    except link_comments.CommentsClosed as exc:
        return HttpResponseForbidden(str(exc), content_type="text/plain; charset=utf-8")
    except link_comments.LinkCommentError as exc:
        status = 429 if isinstance(exc, link_comments.TooManyLinkComments) else 400
        shared = sharing.shared_plan(link, request.POST.get("version", ""))
        # The page again, with what they typed, so a refusal loses nothing.
        return _shared_page(request, shared, token, status=status, comment_error=str(exc))
    url = reverse("conversations:plan_shared", kwargs={"token": token})
    return redirect(f"{url}?version={comment.plan.version}#comment-{comment.pk}")


def _shared_page(
    request: HttpRequest,
    shared: sharing.SharedPlan,
    token: str,
    status: int = 200,
    comment_error: str = "",
) -> HttpResponse:
    response = render(
        request,
        "conversations/shared_plan.html",
        {
            "title": shared.link.session.title,
            "shared": shared,
            "plan": shared.plan,
            "plan_html": render_markdown(shared.markdown),
            "evidence": [
                {"message": m, "html": render_markdown(m.content)} for m in shared.evidence
            ],
            "token": token,
            "link_threads": link_comments.threads(shared) if shared.link.may_comment else [],
            "comment_targets": plan_comments.targets(shared.plan) if shared.commentable else [],
            "comment_error": comment_error,
            "typed": request.POST if comment_error else {},
            "max_name": link_comments.MAX_NAME_CHARS,
            "referrer": referrer_policy(shared.link),
        },
        status=status,
    )
    response["X-Robots-Tag"] = "noindex, nofollow"
    # The token is in the URL: no other site may see it in a Referer. A link that takes
    # comments sends it to this one, or the browser's POST says "Origin: null" and fails CSRF.
    response["Referrer-Policy"] = referrer_policy(shared.link)
    return response


def referrer_policy(link: ShareLink) -> str:
    return "same-origin" if link.may_comment else "no-referrer"


def _version_number(request: HttpRequest) -> int:
    value = request.POST.get("version", "")
    if not (value.isascii() and value.isdigit() and len(value) < 10):
        raise Http404("No such version")
    return int(value)


def _to_section(session_id: int, version: int, key: str) -> HttpResponse:
    url = reverse("conversations:plan", kwargs={"session_id": session_id})
    return redirect(f"{url}?version={version}#section-{key}")


@login_required
@require_POST
def section_edit(request: HttpRequest, session_id: int, key: str) -> HttpResponse:
    """Save a human's edit of one section as a new version; with `preview`, show what the
    edited section would look like instead (nothing saved)."""
    version = _version_number(request)
    text = request.POST.get("text", "")
    try:
        if "preview" in request.POST:
            preview = plan_sections.preview_section(request.user, session_id, version, key, text)
            session = _session_or_404(request, session_id)
            plan = get_object_or_404(Plan, session=session, version=version)
            context = page_context(
                session,
                plan,
                preview_html=render_markdown(
                    preview, file_url_prefix=store.file_url_prefix(session.codebase_id)
                ),
                **editor_context(plan, key, text),
            )
            return render(request, "conversations/plan.html", context)
        plan = plan_sections.edit_section(request.user, session_id, version, key, text)
    except services.SessionNotFound:
        raise Http404("No such plan") from None
    except plan_sections.SectionError as exc:
        messages.error(request, str(exc))
        return _to_section(session_id, version, key)
    messages.success(request, f"Saved as v{plan.version}.")
    return _to_section(session_id, plan.version, key)


@login_required
@require_POST
def section_approve(request: HttpRequest, session_id: int, key: str) -> HttpResponse:
    version = _version_number(request)
    try:
        plan_sections.approve_section(request.user, session_id, version, key)
    except services.SessionNotFound:
        raise Http404("No such plan") from None
    except plan_sections.SectionError as exc:
        messages.error(request, str(exc))
    return _to_section(session_id, version, key)


@login_required
@require_POST
def plan_approve(request: HttpRequest, session_id: int) -> HttpResponse:
    """Approve the plan version on screen (the latest) as a whole; see plan_approval."""
    version = _version_number(request)
    try:
        plan = plan_approval.approve_plan(request.user, session_id, version)
    except services.SessionNotFound:
        raise Http404("No such plan") from None
    except plan_approval.ApprovalError as exc:
        messages.error(request, str(exc))
    else:
        left = len(plan_approval.unapproved_sections(plan))
        unreviewed = (
            f" {left} section{'s' if left != 1 else ''} not approved one by one." if left else ""
        )
        messages.success(request, f"Plan v{plan.version} approved.{unreviewed}")
    url = reverse("conversations:plan", kwargs={"session_id": session_id})
    return redirect(f"{url}?version={version}#plan-approval")


@login_required
@require_POST
def section_regenerate(request: HttpRequest, session_id: int, key: str) -> HttpResponse:
    """Ask Agent A to rewrite one section; its turn streams on the session page, where the
    new version appears when it is done."""
    version = _version_number(request)
    try:
        plan_sections.request_regeneration(
            request.user,
            session_id,
            version,
            key,
            request.POST.get("instruction", ""),
            with_comments=bool(request.POST.get("with_comments")),
        )
    except services.SessionNotFound:
        raise Http404("No such plan") from None
    except plan_sections.SectionError as exc:
        messages.error(request, str(exc))
        return _to_section(session_id, version, key)
    messages.success(
        request, "Agent A is rewriting the section below; the new version appears when done."
    )
    return redirect("conversations:detail", session_id=session_id)


@login_required
@require_POST
def write_plan(request: HttpRequest, session_id: int) -> HttpResponse:
    """Debate: end the discussion and write its plan (what Stop does in a debate: the summary,
    then the plan; see agents.debate.write_debate_plan)."""
    session = _session_or_404(request, session_id)
    if session.mode != PlanningSession.Mode.DEBATE:
        messages.error(request, "Only a debate is ended this way; approve the proposal instead.")
        return redirect("conversations:detail", session_id=session_id)
    try:
        services.stop(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None
    except services.SessionError as exc:
        messages.error(request, str(exc))
    return redirect("conversations:detail", session_id=session_id)


def _to_comments(session_id: int, version: int, anchor: str = "comments") -> HttpResponse:
    url = reverse("conversations:plan", kwargs={"session_id": session_id})
    return redirect(f"{url}?version={version}#{anchor}")


@login_required
@require_POST
def comment_add(request: HttpRequest, session_id: int) -> HttpResponse:
    """A new comment thread on a step, a section or a cited line of the version on screen."""
    version = _version_number(request)
    try:
        comment = plan_comments.add_comment(
            request.user, session_id, version, request.POST.get("where", ""),
            request.POST.get("text", ""),
        )  # fmt: skip
    except services.SessionNotFound:
        raise Http404("No such plan") from None
    except plan_comments.CommentError as exc:
        messages.error(request, str(exc))
        return _to_comments(session_id, version)
    return _to_comments(session_id, version, f"comment-{comment.pk}")


@login_required
@require_POST
def comment_reply(request: HttpRequest, session_id: int, comment_id: int) -> HttpResponse:
    version = _version_number(request)
    try:
        plan_comments.reply(request.user, session_id, comment_id, request.POST.get("text", ""))
    except services.SessionNotFound:
        raise Http404("No such comment") from None
    except plan_comments.CommentError as exc:
        messages.error(request, str(exc))
    return _to_comments(session_id, version, f"comment-{comment_id}")


@login_required
@require_POST
def comment_status(request: HttpRequest, session_id: int, comment_id: int) -> HttpResponse:
    """Resolve or reopen a thread (`status`: resolved or open)."""
    version = _version_number(request)
    try:
        plan_comments.set_status(
            request.user, session_id, comment_id, request.POST.get("status", "")
        )
    except services.SessionNotFound:
        raise Http404("No such comment") from None
    except plan_comments.CommentError as exc:
        messages.error(request, str(exc))
    return _to_comments(session_id, version, f"comment-{comment_id}")


@login_required
@require_POST
def revise_with_comments(request: HttpRequest, session_id: int) -> HttpResponse:
    """Revise the whole plan with its open comments as the change request; the agents run on
    the session page, where the new version appears when it is approved."""
    try:
        found = plan_comments.revise_with_comments(request.user, session_id)
    except services.SessionNotFound:
        raise Http404("No such session") from None
    except (plan_comments.CommentError, services.SessionError) as exc:
        messages.error(request, str(exc))
        return redirect("conversations:plan", session_id=session_id)
    count = found.comments.count()
    messages.success(
        request,
        f"The agents are revising plan v{found.base.version} with {count} open "
        f"comment{'s' if count != 1 else ''}; approve their proposal to make the next version.",
    )
    return redirect("conversations:detail", session_id=session_id)


def _to_reviewers(session_id: int, anchor: str = "reviewers") -> HttpResponse:
    url = reverse("conversations:plan", kwargs={"session_id": session_id})
    return redirect(f"{url}#{anchor}")


@login_required
@require_POST
def reviewer_invite(request: HttpRequest, session_id: int) -> HttpResponse:
    """Invite a user by name to this plan or to every plan of its codebase (the owner's)."""
    try:
        invitation = reviewers.invite(
            request.user, session_id, request.POST.get("username", ""),
            request.POST.get("role", ""), request.POST.get("scope", ""),
        )  # fmt: skip
    except services.SessionNotFound:
        raise Http404("No such session") from None
    except reviewers.ReviewerError as exc:
        messages.error(request, str(exc))
    else:
        where = "this plan" if invitation.session_id else "every plan of this codebase"
        messages.success(
            request,
            f"{invitation.user.get_username()} reviews {where} as "
            f"{invitation.get_role_display().lower()}.",
        )
    return _to_reviewers(session_id)


@login_required
@require_POST
def reviewer_remove(request: HttpRequest, session_id: int, reviewer_id: int) -> HttpResponse:
    try:
        invitation = reviewers.remove(request.user, session_id, reviewer_id)
    except services.SessionNotFound:
        raise Http404("No such reviewer") from None
    messages.success(request, f"{invitation.user.get_username()} no longer reviews it.")
    return _to_reviewers(session_id)


@login_required
@require_POST
def approval_rule(request: HttpRequest, session_id: int) -> HttpResponse:
    try:
        reviewers.set_rule(request.user, session_id, request.POST.get("rule", ""))
    except services.SessionNotFound:
        raise Http404("No such session") from None
    except reviewers.ReviewerError as exc:
        messages.error(request, str(exc))
    return _to_reviewers(session_id)


@login_required
@require_POST
def sign_off(request: HttpRequest, session_id: int) -> HttpResponse:
    """An approver's Approve or Request changes on the version on screen (the latest)."""
    version = _version_number(request)
    try:
        made = reviewers.sign_off(
            request.user, session_id, version, request.POST.get("verdict", ""),
            request.POST.get("note", ""),
        )  # fmt: skip
    except services.SessionNotFound:
        raise Http404("No such plan") from None
    except reviewers.ReviewerError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Your verdict on v{version}: {made.get_verdict_display()}.")
    url = reverse("conversations:plan", kwargs={"session_id": session_id})
    return redirect(f"{url}?version={version}#sign-offs")
