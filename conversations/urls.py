from django.urls import path

from conversations import implementation_views, plan_views, stale_views, views

app_name = "conversations"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("new/", views.new_session, name="new"),
    path("models/", views.models_help, name="models"),
    path("<int:session_id>/", views.session_detail, name="detail"),
    path("shared/", plan_views.shared_with_me, name="shared"),
    path("<int:session_id>/plan/", plan_views.plan_page, name="plan"),
    path("<int:session_id>/plan/revalidate/", stale_views.revalidate, name="plan_revalidate"),
    path("<int:session_id>/plan/replan/", stale_views.replan, name="plan_replan"),
    path("<int:session_id>/plan.md", plan_views.plan_download, name="plan_download"),
    path("<int:session_id>/plan-card/", views.plan_fragment, name="plan_fragment"),
    path("<int:session_id>/stop/", views.stop_session, name="stop"),
    path("<int:session_id>/revise/", views.revise_session, name="revise"),
    path("<int:session_id>/trace/<int:call_id>/", views.trace_call, name="trace_call"),
    path("<int:session_id>/plan/export/<slug:kind>/", plan_views.plan_export, name="plan_export"),
    path("<int:session_id>/plan/compare/", plan_views.plan_compare, name="plan_compare"),
    path("<int:session_id>/plan/share/", plan_views.share_create, name="plan_share"),
    path("<int:session_id>/plan/approve/", plan_views.plan_approve, name="plan_approve"),
    path(
        "<int:session_id>/plan/section/<slug:key>/edit/",
        plan_views.section_edit,
        name="plan_section_edit",
    ),
    path(
        "<int:session_id>/plan/section/<slug:key>/approve/",
        plan_views.section_approve,
        name="plan_section_approve",
    ),
    path(
        "<int:session_id>/plan/section/<slug:key>/regenerate/",
        plan_views.section_regenerate,
        name="plan_section_regenerate",
    ),
    path("<int:session_id>/plan/comments/", plan_views.comment_add, name="plan_comment_add"),
    path(
        "<int:session_id>/plan/comments/<int:comment_id>/reply/",
        plan_views.comment_reply,
        name="plan_comment_reply",
    ),
    path(
        "<int:session_id>/plan/comments/<int:comment_id>/status/",
        plan_views.comment_status,
        name="plan_comment_status",
    ),
    path(
        "<int:session_id>/plan/comments/revise/",
        plan_views.revise_with_comments,
        name="plan_comments_revise",
    ),
    path("<int:session_id>/plan/write/", plan_views.write_plan, name="plan_write"),
    path(
        "<int:session_id>/plan/share/<int:link_id>/revoke/",
        plan_views.share_revoke,
        name="plan_share_revoke",
    ),
    path(
        "<int:session_id>/plan/reviewers/", plan_views.reviewer_invite, name="plan_reviewer_invite"
    ),
    path(
        "<int:session_id>/plan/reviewers/<int:reviewer_id>/remove/",
        plan_views.reviewer_remove,
        name="plan_reviewer_remove",
    ),
    path("<int:session_id>/plan/rule/", plan_views.approval_rule, name="plan_approval_rule"),
    path("<int:session_id>/plan/sign-off/", plan_views.sign_off, name="plan_sign_off"),
    path("s/<str:token>/", plan_views.plan_shared, name="plan_shared"),
    path("s/<str:token>/comments/", plan_views.plan_shared_comment, name="plan_shared_comment"),
    path(
        "<int:session_id>/plan/implementation/",
        implementation_views.check_new,
        name="implementation_new",
    ),
    path(
        "<int:session_id>/plan/implementation/<int:check_id>/",
        implementation_views.check_detail,
        name="implementation_check",
    ),
    path(
        "<int:session_id>/plan/implementation/<int:check_id>/again/",
        implementation_views.check_again,
        name="implementation_again",
    ),
]
