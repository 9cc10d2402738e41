"""Tiny helpers that read settings from the environment and fail loudly on a bad value."""

import ipaddress
import os
from pathlib import Path
from typing import Any, overload
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_nonblank(name: str, default: str = "") -> str:
    """The value without surrounding spaces; unset or blank gives `default`."""
    return os.environ.get(name, "").strip() or default


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0/true/false/yes/no, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


@overload
def env_float(name: str, default: float) -> float: ...
@overload
def env_float(name: str, default: None) -> float | None: ...
def env_float(name: str, default: float | None) -> float | None:
    """A number (unset or blank gives `default`, which may be None for "not set")."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str, default: list[str]) -> list[str]:
    """Addresses or networks ("10.0.0.2, 10.1.0.0/16"), each checked and written in full."""
    networks = []
    for item in env_list(name, default):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must list IP addresses or networks (10.0.0.2, 10.1.0.0/16), got {item!r}"
            ) from None
    return networks


def env_path(name: str, default: Path) -> Path:
    raw = os.environ.get(name)
    return Path(raw).expanduser().resolve() if raw else default


def env_database(name: str) -> dict[str, Any] | None:
    """A DATABASES entry from a postgres:// URL in `name`, or None when it is unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(
            f"{name} must be a postgres://user@host:port/dbname URL, got scheme {parts.scheme!r}"
        )
    try:
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        raise ImproperlyConfigured(f"{name} has a bad port: {raw!r}") from None
    if not parts.path.strip("/"):
        raise ImproperlyConfigured(f"{name} must name a database (…/dbname), got {raw!r}")
    if not parts.hostname and "host=" not in parts.query:
        raise ImproperlyConfigured(f"{name} must name a host (or ?host=/socket/dir), got {raw!r}")
    import dj_database_url

    config: dict[str, Any] = dict(dj_database_url.parse(raw, conn_health_checks=True))
    return config


def env_redis_url(name: str) -> str:
    """A redis:// URL from `name` (empty when unset); anything else fails loudly."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in ("redis", "rediss"):
        raise ImproperlyConfigured(
            f"{name} must be a redis://host:port/db URL, got scheme {parts.scheme!r}"
        )
    try:
        _ = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name} has a bad port: {raw!r}") from None
    if not parts.hostname:
        raise ImproperlyConfigured(f"{name} must name a host, got {raw!r}")
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ImproperlyConfigured(f"{name} must end in a database number (/0), got {raw!r}")
    return raw


def redis_channel_layers(url: str, *, capacity: int = 1000) -> dict[str, Any]:
    """CHANNEL_LAYERS for channels_redis at `url`."""
    return {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # Reads block up to 5 s (BZPOPMIN) and redis-py's default socket timeout is
                # also 5 s: a longer one keeps idle consumers from failing with a timeout.
                "hosts": [{"address": url, "socket_timeout": 15, "socket_connect_timeout": 5}],
                # One session sends ~13 events a second; a watcher that falls this far behind
                # loses live events (it resyncs from the database by seq), never the worker.
                "capacity": capacity,
                "expiry": 30,
            },
        }
    }
