"""ASGI entry point: HTTP through Django (bodies capped first), websockets through Channels with
the session user. Under daphne, SIGTERM parks the running jobs and the work a previous server
left is resumed once the server runs (planagents.jobs.serve)."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from conversations.routing import websocket_urlpatterns  # noqa: E402
from mcp_server.http import mounted  # noqa: E402
from planagents import daphne_limits, jobs  # noqa: E402
from planagents.limits import BodyCaps, BodyLimitMiddleware  # noqa: E402

# Request bodies are capped twice: inside daphne as the bytes arrive (by cookie: anonymous or
# not), then exactly (who is logged in, which page) before Django reads any of it.
body_caps = BodyCaps.from_settings()
daphne_limits.install(body_caps)
jobs.serve()

application = ProtocolTypeRouter(
    {
        # /mcp/: the MCP server for coding agents (mcp_server.http: a token, never a cookie).
        "http": mounted(BodyLimitMiddleware(django_asgi_app, body_caps)),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

# What the server loaded to start lives as long as it does: out of the garbage collector's
# generations, so a full collection during a request walks only what requests made.
gc.freeze()
