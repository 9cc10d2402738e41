from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from conversations.views import home

urlpatterns = [
    path("", home, name="home"),
    # Browsers and crawlers ask for /favicon.ico whatever the page links to.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("codebases/", include("rag.urls")),
    path("sessions/", include("conversations.urls")),
    path("", include("api.urls")),  # /api/v1/ and /account/tokens/
]
