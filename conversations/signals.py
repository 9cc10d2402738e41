"""Sockets follow the login that opened them: a logout closes the sockets opened with that
login, a deactivation closes all of the user's. (Every action re-checks the login anyway; this
also stops the events a silent socket would go on receiving.)"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from planagents.streaming import notify_user


@receiver(user_logged_out)
def close_sockets_of_the_login(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is None:
        return
    # Sent before the session is flushed, so the key still names the login that ended.
    session = getattr(request, "session", None)
    key = getattr(session, "session_key", None) or ""
    notify_user(user.pk, {"type": "user.signed_out", "session_key": key})


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def close_sockets_of_a_deactivated_user(sender: Any, instance: Any, **kwargs: Any) -> None:
    if instance.is_active:
        return
    # After commit: the sockets re-check the user and must find them inactive.
    user_id = instance.pk
    transaction.on_commit(
        lambda: notify_user(user_id, {"type": "user.signed_out", "session_key": ""})
    )
