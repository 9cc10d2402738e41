"""The address a request really came from, for login throttling (django-axes).

Behind a TLS proxy every request arrives from the proxy's address, so keying lockouts on
REMOTE_ADDR lets five wrong guesses lock a user out for everyone behind it. The proxy says who
its client was in X-Forwarded-For, but anyone can send that header: it is believed only when the
request comes from an address in PLANAGENTS_TRUSTED_PROXIES, and then only up to the first hop
that is not itself a trusted proxy (read from the right, the end the proxies append to), so a
client cannot choose its address by writing one into the header before the proxy adds its own.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_HOPS = 20
"""Hops read from X-Forwarded-For at most: a longer chain is a forgery, not a topology."""


@lru_cache(maxsize=8)
def _networks(trusted: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in trusted)


def _address(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        return None


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    networks = _networks(tuple(settings.PLANAGENTS_TRUSTED_PROXIES))
    return address is not None and any(address in network for network in networks)


def client_ip(request: Any) -> str | None:
    """The client's address: REMOTE_ADDR, unless that is a trusted proxy; then the nearest
    address in X-Forwarded-For that is not one (the proxy's own view of its client)."""
    remote = request.META.get("REMOTE_ADDR")
    if not _trusted(_address(remote or "")):
        return remote
    hops = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")[-MAX_HOPS:]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            # A hop that is no address was written by someone we cannot vouch for: stop at
            # the last proxy that handed it on.
            return remote
        if not _trusted(address):
            return str(address)
        remote = str(address)
    return remote
