"""The API (/api/v1/, its own URL namespace "api-v1") and the account page for its tokens.
No app namespace here: Django Ninja reverses its docs' URLs by its own namespace alone."""

from django.urls import path

from api import views
from api.v1 import api

urlpatterns = [
    path("api/v1/", api.urls),
    path("account/tokens/", views.tokens, name="api_tokens"),
    path("account/tokens/<int:token_id>/revoke/", views.revoke, name="api_token_revoke"),
]
