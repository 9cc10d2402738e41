from django.urls import path

from rag import views

app_name = "rag"

urlpatterns = [
    path("", views.codebase_list, name="list"),
    path("upload/", views.upload, name="upload"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/status.json", views.status, name="status"),
    path("<int:pk>/version/", views.new_version, name="new_version"),
    path("<int:pk>/file/<path:path>", views.file_view, name="file"),
]
