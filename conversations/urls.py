from django.urls import path

from conversations import views

app_name = "conversations"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("new/", views.new_session, name="new"),
    path("<int:session_id>/", views.session_detail, name="detail"),
    path("<int:session_id>/plan/", views.plan_page, name="plan"),
    path("<int:session_id>/plan.md", views.plan_download, name="plan_download"),
    path("<int:session_id>/plan-card/", views.plan_fragment, name="plan_fragment"),
    path("<int:session_id>/stop/", views.stop_session, name="stop"),
]
