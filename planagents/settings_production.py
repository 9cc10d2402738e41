"""Production settings: `DJANGO_SETTINGS_MODULE=planagents.settings_production`.

Everything in planagents.settings, plus what `manage.py check --deploy` asks for and a
Content-Security-Policy. Pages load their scripts and styles from /static/ only (the session
page reads its data from a json_script tag, which is JSON, not script), so the policy allows
no inline script or style at all.
"""

from csp.constants import NONE, SELF

from planagents.env import env_bool, env_int, env_networks, env_str
from planagents.settings import *  # noqa: F403
from planagents.settings import MIDDLEWARE, SECRET_KEY

DEBUG = env_bool("DJANGO_DEBUG", False)

if len(SECRET_KEY) < 50 or SECRET_KEY.startswith("dev-only"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "Set DJANGO_SECRET_KEY to a random string of 50+ characters for production, e.g. "
        '`python -c "import secrets; print(secrets.token_urlsafe(64))"`.'
    )

# TLS: terminate it in front of the ASGI servers and say so with the proxy header.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
if env_str("DJANGO_BEHIND_TLS_PROXY", "1") not in ("0", "false", "no"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # A proxy on this machine is the usual deploy; elsewhere, list its addresses.
    PLANAGENTS_TRUSTED_PROXIES = env_networks("PLANAGENTS_TRUSTED_PROXIES", ["127.0.0.1", "::1"])
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = True
X_FRAME_OPTIONS = "DENY"

MIDDLEWARE = [*MIDDLEWARE, "csp.middleware.CSPMiddleware"]
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        # 'self' covers ws:/wss: to the same host in CSP Level 3 browsers.
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
