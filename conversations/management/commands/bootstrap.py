"""First-run setup: a login for the person who started the app, and the default model ready."""

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from agents.providers import get_profile_info
from agents.providers.base import ProviderUnavailable
from rag.indexing import remove_orphan_indexes


class Command(BaseCommand):
    help = "Create the first admin login (printed once) and assemble the default local model."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument(
            "--skip-model", action="store_true", help="Do not assemble the GGUF weights."
        )
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000", help="Where the app will be served."
        )

    def handle(self, *args, skip_model: bool = False, **options) -> None:  # type: ignore[no-untyped-def]
        self._ensure_admin(options.get("url") or "http://127.0.0.1:8000")
        # Index folders whose codebase is gone (deleted mid-index before a crash): the embedded
        # default has no Celery sweep to remove them, so every start does.
        removed = remove_orphan_indexes()
        if removed:
            self.stdout.write(f"Removed {len(removed)} orphaned index folder(s).")
        if not skip_model:
            self._prepare_default_model()

    def _ensure_admin(self, url: str) -> None:
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write(
                "Login: use the admin account created on the first run (see var/first-login.txt)."
            )
            return
        username = "admin"
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, password=password, email="")
        note = Path(settings.DATA_DIR) / "first-login.txt"
        note.write_text(f"username: {username}\npassword: {password}\n")
        note.chmod(0o600)
        bar = "=" * 60
        self.stdout.write(
            f"\n{bar}\n  Your login for {url}\n    username: {username}\n"
            f"    password: {password}\n  (also saved in {note}; change it in the admin)\n{bar}\n"
        )

    def _prepare_default_model(self) -> None:
        from agents.providers import prepare_weights

        info = get_profile_info(settings.PLANAGENTS_DEFAULT_PROFILE)
        if not info.available:
            self.stdout.write(self.style.WARNING(f"Default model unavailable: {info.reason}"))
            return
        try:
            path = prepare_weights(settings.PLANAGENTS_DEFAULT_PROFILE)
        except ProviderUnavailable as exc:
            self.stdout.write(self.style.ERROR(str(exc)))
            return
        if path is not None:
            self.stdout.write(f"Local model ready: {path}")
