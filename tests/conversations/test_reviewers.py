"""Reviewers: the owner invites users by name to one plan or every plan of a codebase as
viewer, commenter or approver; each sees and does what the role allows on the plan page and
nothing else; approvers' sign-offs name their version, a new version resets them, and the plan
is approved when the owner's rule (any approver, or all) is met."""

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import PlanReviewEvent
from agents.plan import build_version
from conversations import plan_approval, reviewers
from conversations.models import (
    Plan,
    PlanComment,
    PlanningSession,
    PlanningState,
    Reviewer,
    ShareLink,
    SignOff,
)
from rag.models import Codebase
from tests.conversations.test_plan_sections import edit, plan_data, real_path

pytestmark = pytest.mark.django_db


def planned_session(owner, codebase, title="Rate limiting"):
    """A completed session with plan v1, a draft."""
    session = PlanningSession.objects.create(
        owner=owner, codebase=codebase, title=title, task=f"Add {title.lower()}",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    markdown, structured = build_version(plan_data(real_path(codebase)), codebase, title=title)
    Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)
    return session


@pytest.fixture
def planned(user, codebase):
    return planned_session(user, codebase)


@pytest.fixture
def people(django_user_model):
    return {
        name: django_user_model.objects.create_user(name, password="correct horse battery")
        for name in ("vera", "carl", "ann", "abe")
    }


def as_user(user):
    client = Client()
    client.force_login(user)
    return client


def invite(client, session, username, role, scope="plan"):
    url = reverse("conversations:plan_reviewer_invite", args=[session.pk])
    return client.post(url, {"username": username, "role": role, "scope": scope}, follow=True)


def page(client, session, version=None):
    url = reverse("conversations:plan", args=[session.pk])
    return client.get(url, {"version": version} if version else {})


def sign(client, session, verdict, version=1, note=""):
    url = reverse("conversations:plan_sign_off", args=[session.pk])
    return client.post(url, {"version": version, "verdict": verdict, "note": note}, follow=True)


def comment(client, session, text="Split this step.", version=1):
    url = reverse("conversations:plan_comment_add", args=[session.pk])
    return client.post(url, {"version": version, "where": "summary", "text": text})


# ---------------------------------------------------------------- inviting


def test_the_owner_invites_a_viewer_who_reads_the_plan_without_the_owners_controls(
    client, user, planned, people
):
    client.force_login(user)
    shown = invite(client, planned, "vera", "viewer").content.decode()
    assert "vera reviews this plan as viewer." in shown
    assert "<td>vera</td>" in shown and "<td>Viewer</td>" in shown  # the Reviewers panel

    viewer = as_user(people["vera"])
    response = page(viewer, planned)
    assert response.status_code == 200
    seen = response.content.decode()
    assert "Count failed logins per user." in seen
    assert "← Shared with you" in seen and "← Session" not in seen
    for control in ("Edit</a>", "Regenerate", "Create link", "Invite</button>", "Approve plan v1"):
        assert control not in seen, control
    assert "Add comment to v1" not in seen
    # Citations link to the codebase's pages (the owner's) only for the owner.
    plan = Plan.objects.get(session=planned)
    plan.markdown += f"\n\nSee `{real_path(planned.codebase)}:1`.\n"
    plan.save()
    seen = page(viewer, planned).content.decode()
    code_pages = f"/codebases/{planned.codebase_id}/"
    assert code_pages in page(client, planned).content.decode() and code_pages not in seen
    export = reverse("conversations:plan_export", args=[planned.pk, "json"])
    assert viewer.get(export).status_code == 200
    assert viewer.get(reverse("conversations:plan_download", args=[planned.pk])).status_code == 200
    compare = reverse("conversations:plan_compare", args=[planned.pk])
    assert viewer.get(compare).status_code == 200
    # The session itself (transcript, trace, controls) stays the owner's.
    assert viewer.get(reverse("conversations:detail", args=[planned.pk])).status_code == 404
    assert comment(viewer, planned).status_code == 404
    assert not PlanComment.objects.exists()

    listed = viewer.get(reverse("conversations:shared")).content.decode()
    assert "Add rate limiting" in listed and "Viewer" in listed and "alice" in listed


def test_an_invitation_names_a_real_user_other_than_the_owner(client, user, planned):
    client.force_login(user)
    assert (
        "There is no user named “nobody”."
        in invite(client, planned, "nobody", "viewer").content.decode()
    )
    assert (
        "You own this plan already." in invite(client, planned, "alice", "viewer").content.decode()
    )
    assert not Reviewer.objects.exists()


def test_inviting_again_changes_the_role_and_removing_takes_the_plan_away(
    client, user, planned, people
):
    client.force_login(user)
    invite(client, planned, "carl", "viewer")
    invite(client, planned, "carl", "commenter")
    invitation = Reviewer.objects.get()
    assert invitation.role == "commenter"
    carl = as_user(people["carl"])
    assert comment(carl, planned).status_code == 302
    remove = reverse("conversations:plan_reviewer_remove", args=[planned.pk, invitation.pk])
    assert client.post(remove).status_code == 302
    assert page(carl, planned).status_code == 404


def test_a_codebase_invitation_reaches_every_plan_of_that_codebase_and_no_other(
    client, user, planned, codebase, people
):
    second = planned_session(user, codebase, "Audit log")
    another = Codebase.objects.create(owner=user, name="another", status="ready")
    elsewhere = PlanningSession.objects.create(
        owner=user, codebase=another, title="Dark mode", task="Add dark mode",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    Plan.objects.create(session=elsewhere, version=1, markdown="# Dark mode", structured={})
    client.force_login(user)
    shown = invite(client, planned, "carl", "commenter", scope="codebase").content.decode()
    assert "carl reviews every plan of this codebase as commenter." in shown

    carl = as_user(people["carl"])
    for session in (planned, second):
        assert page(carl, session).status_code == 200
        assert comment(carl, session).status_code == 302
    assert page(carl, elsewhere).status_code == 404
    assert comment(carl, elsewhere).status_code == 404
    assert PlanComment.objects.filter(author=people["carl"]).count() == 2
    listed = carl.get(reverse("conversations:shared")).content.decode()
    assert "Add rate limiting" in listed and "Add audit log" in listed
    assert "Add dark mode" not in listed
    # Another user's codebase invitation does not reach alice's plans.
    assert page(as_user(people["vera"]), second).status_code == 404


def test_a_commenter_comments_answers_and_resolves_only_their_own_threads(
    client, user, planned, people
):
    Reviewer.objects.create(user=people["carl"], role="commenter", session=planned)
    carl = as_user(people["carl"])
    shown = page(carl, planned).content.decode()
    assert "Add comment to v1" in shown
    assert comment(carl, planned, "<b>carl's</b> point").status_code == 302
    mine = PlanComment.objects.get(author=people["carl"])
    assert "&lt;b&gt;carl&#x27;s&lt;/b&gt; point" in page(carl, planned).content.decode()
    # Regenerating a section with its comments is the owner's: the button shown to a commenter
    # answered 404.
    assert "with its 1 open comment" not in page(carl, planned).content.decode()
    assert "with its 1 open comment" in page(as_user(user), planned).content.decode()
    theirs = PlanComment.objects.create(
        session=planned, plan=mine.plan, author=user, anchor_kind="section",
        anchor={"key": "summary", "text": "x"}, text="The owner's thread",
    )  # fmt: skip

    def status(thread):
        url = reverse("conversations:plan_comment_status", args=[planned.pk, thread.pk])
        return carl.post(url, {"version": 1, "status": "resolved"})

    # The page offers Resolve only where the server takes it: carl's own thread, and every
    # thread for the owner (a button on the owner's thread answered 404).
    def resolve_forms(client):
        shown = page(client, planned).content.decode()
        return {
            thread.pk
            for thread in (mine, theirs)
            if reverse("conversations:plan_comment_status", args=[planned.pk, thread.pk]) in shown
        }

    assert resolve_forms(carl) == {mine.pk}
    assert resolve_forms(as_user(user)) == {mine.pk, theirs.pk}

    assert status(mine).status_code == 302
    assert status(theirs).status_code == 404
    assert PlanComment.objects.get(pk=mine.pk).status == "resolved"
    assert PlanComment.objects.get(pk=theirs.pk).status == "open"


# ---------------------------------------------------------------- owner only


OWNER_ONLY = [
    (
        "conversations:plan_reviewer_invite",
        {"username": "abe", "role": "approver", "scope": "plan"},
    ),
    ("conversations:plan_approval_rule", {"rule": "all"}),
    ("conversations:plan_share", {"expiry": "7d", "pin": "latest"}),
    ("conversations:plan_approve", {"version": 1}),
    ("conversations:plan_comments_revise", {}),
    ("conversations:stop", {}),
    ("conversations:revise", {}),
    ("conversations:plan_write", {}),
    ("conversations:plan_replan", {"version": 1}),
]
SECTION_ONLY = [
    ("conversations:plan_section_edit", {"version": 1, "text": "Rewritten by a reviewer."}),
    ("conversations:plan_section_approve", {"version": 1}),
    ("conversations:plan_section_regenerate", {"version": 1, "instruction": "shorter"}),
]


@pytest.mark.parametrize("role", ["viewer", "commenter", "approver"])
def test_every_owner_only_action_is_refused_to_every_role(user, planned, people, role):
    reviewer = people["vera"]
    invitation = Reviewer.objects.create(user=reviewer, role=role, session=planned)
    Reviewer.objects.create(user=people["carl"], role="viewer", session=planned)
    client = as_user(reviewer)
    posts = [(reverse(name, args=[planned.pk]), body) for name, body in OWNER_ONLY]
    posts += [(reverse(name, args=[planned.pk, "summary"]), body) for name, body in SECTION_ONLY]
    posts.append(
        (reverse("conversations:plan_reviewer_remove", args=[planned.pk, invitation.pk]), {})
    )
    for url, body in posts:
        assert client.post(url, body).status_code == 404, url
    assert page(client, planned, version=1).status_code == 200
    opened = client.get(page_url(planned) + "?edit=summary").content.decode()
    assert opened.count('class="section-editor"') == 0
    assert Reviewer.objects.count() == 2 and Reviewer.objects.get(pk=invitation.pk).role == role
    assert PlanningSession.objects.get(pk=planned.pk).approval_rule == "any"
    assert not ShareLink.objects.exists()
    plan = Plan.objects.get(session=planned)
    assert (Plan.objects.count(), plan.review_status, plan.approved_sections) == (1, "draft", [])
    assert PlanningSession.objects.get(pk=planned.pk).status == "completed"


def page_url(session):
    return reverse("conversations:plan", args=[session.pk])


# ---------------------------------------------------------------- signing off


def approvers(session, *users, rule="any"):
    for person in users:
        Reviewer.objects.create(user=person, role="approver", session=session)
    PlanningSession.objects.filter(pk=session.pk).update(approval_rule=rule)


def test_a_sign_off_is_recorded_with_its_version_and_a_new_version_resets_it(
    client, user, planned, people
):
    ann, abe = people["ann"], people["abe"]
    approvers(planned, ann, abe, rule="all")
    shown = sign(as_user(ann), planned, "approve").content.decode()
    assert "Your verdict on v1: Approved." in shown
    made = SignOff.objects.get()
    assert (made.reviewer, made.plan.version, made.verdict) == (ann, 1, "approve")
    assert "1 of 2 approved v1" in shown and "rule not met" in shown
    assert Plan.objects.get(session=planned).review_status == "draft"

    client.force_login(user)
    assert (
        edit(client, planned, "summary", "Count failed logins per user and per IP.").status_code
        == 302
    )
    shown = page(client, planned).content.decode()
    assert "reset by v2" in shown and "approved v1 on" in shown
    assert "0 of 2 approved v2" in shown
    assert reviewers.sign_offs(planned).approved_count == 0
    # The old version is not signed off any more; the new one is.
    old = sign(as_user(abe), planned, "approve", version=1).content.decode()
    assert "v1 is not the latest version (v2 is)" in old
    assert SignOff.objects.count() == 1


def test_the_any_rule_approves_the_plan_on_one_approval(user, planned, people):
    ann, abe = people["ann"], people["abe"]
    approvers(planned, ann, abe, rule="any")
    sign(as_user(abe), planned, "changes", note="Add a migration step.")
    assert Plan.objects.get(session=planned).review_status == "draft"
    shown = sign(as_user(ann), planned, "approve").content.decode()
    plan = Plan.objects.get(session=planned)
    assert (plan.review_status, plan.reviewer) == ("approved", ann)
    event = PlanReviewEvent.objects.get(plan=plan)
    assert (event.previous_status, event.status, event.reviewer) == ("draft", "approved", ann)
    assert "<strong>Plan v1 is approved</strong> by ann" in shown and "rule met" in shown
    assert "Requested changes" in shown and "“Add a migration step.”" in shown
    # A version approved takes no more verdicts; the next version asks again.
    assert "v1 is approved already" in sign(as_user(abe), planned, "approve").content.decode()


def test_the_all_rule_waits_for_every_approver_and_a_request_for_changes(user, planned, people):
    ann, abe = people["ann"], people["abe"]
    approvers(planned, ann, abe, rule="all")
    sign(as_user(ann), planned, "approve")
    sign(as_user(abe), planned, "changes", note="Missing tests.")
    assert Plan.objects.get(session=planned).review_status == "draft"
    sign(as_user(abe), planned, "approve")
    plan = Plan.objects.get(session=planned)
    assert (plan.review_status, plan.reviewer) == ("approved", abe)
    assert SignOff.objects.count() == 3  # the history stays


def test_changing_the_rule_to_any_approves_a_plan_one_approver_approved(
    client, user, planned, people
):
    ann, abe = people["ann"], people["abe"]
    approvers(planned, ann, abe, rule="all")
    sign(as_user(ann), planned, "approve")
    assert Plan.objects.get(session=planned).review_status == "draft"
    client.force_login(user)
    client.post(reverse("conversations:plan_approval_rule", args=[planned.pk]), {"rule": "any"})
    assert Plan.objects.get(session=planned).review_status == "approved"


def test_only_an_approver_signs_off_and_the_owner_does_not_approve_over_approvers(
    client, user, planned, people
):
    ann = people["ann"]
    approvers(planned, ann)
    Reviewer.objects.create(user=people["carl"], role="commenter", session=planned)
    assert sign(as_user(people["carl"]), planned, "approve").status_code == 404
    assert sign(as_user(people["vera"]), planned, "approve").status_code == 404
    client.force_login(user)
    assert sign(client, planned, "approve").status_code == 404
    assert not SignOff.objects.exists()
    shown = page(client, planned).content.decode()
    assert ">Approve plan v1</button>" not in shown and "ann</b>" in shown
    assert "has not signed off yet" in shown
    with pytest.raises(plan_approval.ApprovalError, match="This plan has approvers"):
        plan_approval.approve_plan(user, planned.pk, 1)
    assert ">Approve v1</button>" in page(as_user(ann), planned).content.decode()


def test_asking_for_changes_needs_a_note_and_the_note_is_shown_escaped(planned, people):
    ann = people["ann"]
    approvers(planned, ann)
    shown = sign(as_user(ann), planned, "changes").content.decode()
    assert "Say what should change." in shown and not SignOff.objects.exists()
    shown = sign(as_user(ann), planned, "changes", note="<script>x()</script>").content.decode()
    assert "<script>x()</script>" not in shown
    assert "&lt;script&gt;x()&lt;/script&gt;" in shown
