import re

from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

RATE = re.compile(r"[1-9][0-9]*/(s|sec|m|min|h|hour|d|day)")


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "API"

    def ready(self) -> None:
        # Django Ninja would only find a bad rate at the first request, as a 500.
        if not RATE.fullmatch(settings.PLANAGENTS_API_RATE):
            raise ImproperlyConfigured(
                f"PLANAGENTS_API_RATE must be requests/period (e.g. 120/min, 5/s, 1000/hour), "
                f"got {settings.PLANAGENTS_API_RATE!r}"
            )
        from api.codebases import UPLOADS, VERSIONS
        from api.services import is_live
        from api.v1 import api
        from planagents import limits

        # A token counts as a login at the server's edge, and API uploads get the upload cap.
        names = {f"{api.urls_namespace}:{name}" for name in (UPLOADS, VERSIONS)}
        limits.accept_tokens(is_live, names)
