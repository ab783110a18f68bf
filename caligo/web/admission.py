"""Who may create games and drive seats: the page's own origin, JSON bodies, a rate per client.

A **client** is the address a request comes from (`client_key`): the socket's peer, or, behind
a reverse proxy named with `--forwarded-allow-ips`, the address the proxy forwards. An IPv6
address counts by its /64 network, the block one subscriber is normally given, so an attacker
cannot take a fresh client identity from each of its 2**64 addresses.

- **Origin** (`check_origin`): a browser sends `Origin` with every POST and every WebSocket
  handshake, same-origin ones included. A request whose `Origin` is not this server's own
  (`scheme://host[:port]`, the `Host` header being already checked against the allowed hosts)
  is refused, so a page on another site cannot create games or drive a seat, even with a seat
  token it learnt. A request without `Origin` does not come from a page (a browser always adds
  it, and a page cannot remove it), so it cannot carry a visitor's browser into this server; it
  is let through and limited by address like any other client (curl, scripts, the benchmark).
- **Content type** (`check_json`): a state-changing request must declare `application/json`.
  A page may send `text/plain`, form or multipart bodies to any site without asking; a JSON
  body needs a CORS preflight first, which this server never grants.
- **Rate** (`RateLimiter`): a token bucket per client, `N` games a minute in bursts of up to `N`.

The cap on each client's live games and the server's own cap are applied by `GameHub.create`.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from caligo.web.errors import MediaTypeError, OriginError, RateLimitError

UNKNOWN_CLIENT = "unknown"
"""The client of a request whose peer address is not known (a Unix socket, a test client)."""
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_HTTP_SCHEME = {"ws": "http", "wss": "https", "http": "http", "https": "https"}
_PRUNE_AT = 4096


def client_key(client: tuple[str, int] | list[object] | None) -> str:
    """The client an ASGI `scope["client"]` stands for: the IPv4 address, an IPv6 /64 network
    (an IPv4-mapped IPv6 address is its IPv4 address), or the host text as given."""
    if not client:
        return UNKNOWN_CLIENT
    host = str(client[0])
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _origin_parts(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(http scheme, lower-case host, port) of `scheme://netloc`; None if malformed."""
    http = _HTTP_SCHEME.get(scheme.lower())
    if http is None or not netloc:
        return None
    try:
        parts = urlsplit(f"{http}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if parts.hostname is None or parts.username is not None or parts.path:
        return None
    return http, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[http]


def check_origin(origin: str | None, scheme: str, host: str | None) -> None:
    """Raise OriginError unless `origin` (the request's `Origin` header, None when absent) is
    `scheme://host`, the server's own origin as this request reached it."""
    if origin is None:
        return
    own = _origin_parts(scheme, host or "")
    theirs = None
    if origin.isascii():
        try:
            split = urlsplit(origin)
        except ValueError:
            split = None
        if split is not None and not (split.path or split.query or split.fragment):
            theirs = _origin_parts(split.scheme, split.netloc)
    if own is None or theirs is None or theirs != own:
        shown = f"{own[0]}://{host}" if own is not None else repr(host)
        raise OriginError(
            f"requests from origin {origin[:100]!r} are refused: only this server's own page "
            f"({shown}) may create games or play",
            "forbidden_origin",
        )


def check_json(content_type: str | None) -> None:
    """Raise MediaTypeError unless `content_type` declares a JSON body."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise MediaTypeError(
            f"a request body must be sent as application/json, got {(content_type or '')[:80]!r}",
            "unsupported_media_type",
        )


class RateLimiter:
    """A token bucket per client: `per_minute` tokens a minute, holding at most `per_minute`.

    `per_minute` 0 means no limit. `now` returns monotonic seconds (injectable for tests).
    """

    def __init__(self, per_minute: int, now: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._now = now
        self._buckets: dict[str, tuple[float, float]] = {}

    def _level(self, client: str, t: float) -> float:
        tokens, at = self._buckets.get(client, (self.capacity, t))
        return min(self.capacity, tokens + max(0.0, t - at) * self.rate)

    def retry_after(self, client: str) -> int | None:
        """Whole seconds until `client` may create a game; None when it may now."""
        if self.capacity <= 0:
            return None
        level = self._level(client, self._now())
        if level >= 1.0:
            return None
        return max(1, math.ceil((1.0 - level) / self.rate))

    def check(self, client: str) -> None:
        """Raise RateLimitError (with its Retry-After) when `client` has no token left."""
        wait = self.retry_after(client)
        if wait is not None:
            n = int(self.capacity)
            raise RateLimitError(
                f"too many new games from your address ({n} a minute at most): "
                f"try again in {wait} s",
                "rate_limited",
                retry_after=wait,
            )

    def take(self, client: str) -> None:
        """Spend one of `client`'s tokens (RateLimitError if none is left)."""
        if self.capacity <= 0:
            return
        self.check(client)
        t = self._now()
        self._buckets[client] = (self._level(client, t) - 1.0, t)
        if len(self._buckets) > _PRUNE_AT:  # forget clients whose bucket is full again
            self._buckets = {
                c: b for c, b in self._buckets.items() if self._level(c, t) < self.capacity
            }


__all__ = [
    "UNKNOWN_CLIENT",
    "RateLimiter",
    "check_json",
    "check_origin",
    "client_key",
]
