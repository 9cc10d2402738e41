"""Running in process: Django on its embedded defaults (SQLite and the indexes under the data
folder, jobs on background threads), and the very API a server offers, called through Django's
WSGI app instead of the network. The run acts as one local user (PLANAGENTS_CLI_USER, made on
first use, without a password) with a write token that lives as long as the run.

What the API does not offer, the in-process run asks of the services the web pages call: which
plans a new version made stale (conversations.stale.check).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

from cli.client import ApiClient

DEFAULT_USER = "planagents-cli"
JOBS_GRACE = 900.0
"""Seconds the command waits at its end for the jobs it started (a codebase's vectors are
embedded after it is ready) before it parks them for the next run to finish."""


def setup_django(profile: str) -> None:
    """Django set up on the project's settings, its database migrated (once per process)."""
    from django.apps import apps

    if profile.startswith("fake"):
        # The scripted profile is only offered when asked for; naming it is asking.
        os.environ.setdefault("PLANAGENTS_FAKE_LLM", "1")
    if apps.ready:
        return
    import warnings

    import django

    # The terminal is for the command's own lines: the server's info log stays out of it.
    os.environ.setdefault("PLANAGENTS_LOG_LEVEL", "WARNING")
    warnings.filterwarnings("ignore", message="No directory at")  # whitenoise: no static here
    from django.core.management import call_command

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    django.setup()
    for name, level in (("bm25s", logging.WARNING), ("django.request", logging.ERROR)):
        logging.getLogger(name).setLevel(level)  # a 404 is the command's error line already
    call_command("migrate", interactive=False, verbosity=0)


@dataclass(frozen=True)
class StalePlan:
    session: int
    title: str
    version: int
    changes: list[tuple[str, str]]
    """(path, what changed in it)."""


class Local:
    """The in-process backend: `client` is the API; the rest are the services it lacks."""

    def __init__(self, profile: str) -> None:
        setup_django(profile)
        import httpx
        from django.contrib.auth import get_user_model
        from django.core.wsgi import get_wsgi_application

        from api.services import create_token

        name = os.environ.get("PLANAGENTS_CLI_USER", "").strip() or DEFAULT_USER
        user, created = get_user_model().objects.get_or_create(username=name)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        self.user = user
        token = create_token(user, "planagents CLI, in process", "write")
        self.token_id = token.token.pk
        self.client = ApiClient(
            "http://localhost",
            token.secret,
            transport=httpx.WSGITransport(app=get_wsgi_application()),
        )

    def close(self) -> None:
        """Revoke the run's token and let the background jobs end: a job cut off by the
        process's exit would hold its lease until it runs out, and the next run would wait."""
        from api.services import revoke_token
        from planagents import jobs, shutdown

        self.client.close()
        revoke_token(self.user, self.token_id)
        if shutdown.wait_for_running(0.1):
            print("Finishing the search index in the background jobs…", file=sys.stderr)
            jobs.park_held(shutdown.wait_for_running(JOBS_GRACE))

    def stale_plans(self, codebase: int) -> list[StalePlan]:
        """The latest plan of each of the user's sessions on `codebase` that the code changed
        under (conversations.stale decides)."""
        from conversations import stale
        from conversations.models import Plan
        from conversations.services import sessions_for

        found = []
        for session in sessions_for(self.user).filter(codebase_id=codebase):
            plan = Plan.objects.filter(session=session).order_by("-version").first()
            if plan is None:
                continue
            report = stale.check(plan)
            if report.state == "stale":
                found.append(StalePlan(session.pk, session.title, plan.version, report.by_file))
        return found
