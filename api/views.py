"""The account page's API tokens: list, create (the token shown once) and revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from api import services
from api.forms import NewTokenForm


@never_cache  # the page that shows a new token must not be kept by any cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    form = NewTokenForm(request.POST or None)
    made = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                made = services.create_token(
                    request.user, form.cleaned_data["name"], form.cleaned_data["scope"]
                )
            except services.TokenError as exc:
                form.add_error(None, str(exc))
            else:
                form = NewTokenForm()
        if made is None:
            status = 400
    context = {
        "form": form,
        "made": made,
        "tokens": services.tokens_for(request.user),
    }
    return render(request, "api/tokens.html", context, status=status)


@login_required
@require_POST
def revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = services.revoke_token(request.user, token_id)
    except services.TokenError:
        raise Http404("No such token") from None  # someone else's too: nothing to tell apart
    messages.success(request, f"Revoked “{token.name}”: it authenticates nothing from now on.")
    return redirect("api_tokens")
