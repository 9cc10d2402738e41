from django.urls import path

from rag import rules_views, views

app_name = "rag"

urlpatterns = [
    path("", views.codebase_list, name="list"),
    path("upload/", views.upload, name="upload"),
    path("upload/git/", views.add_from_git, name="add_git"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/status.json", views.status, name="status"),
    path("<int:pk>/tree.json", views.tree, name="tree"),
    path("<int:pk>/version/", views.new_version, name="new_version"),
    path("<int:pk>/retry/", views.retry, name="retry"),
    path("<int:pk>/sync/", views.sync, name="sync"),
    path("<int:pk>/file/<path:path>", views.file_view, name="file"),
    path("<int:pk>/roles/", views.roles, name="roles"),
    path("<int:pk>/rules/", rules_views.rule_add, name="rule_add"),
    path("<int:pk>/rules/<int:rule_id>/", rules_views.rule_edit, name="rule_edit"),
    path("<int:pk>/rules/<int:rule_id>/delete/", rules_views.rule_delete, name="rule_delete"),
    path("<int:pk>/pins/", rules_views.pin_add, name="pin_add"),
    path("<int:pk>/pins/<int:pin_id>/delete/", rules_views.pin_delete, name="pin_delete"),
]
