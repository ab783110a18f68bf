"""Connections under uvicorn: per-client caps, header timeouts, idle sockets shed under pressure.

uvicorn's HTTP/1.1 protocol (h11) keeps a connection that never sends a byte, or sends its
headers one byte a minute (slowloris), open forever: 300 such sockets under a 256-descriptor
limit stopped all service. `guarded_http_protocol` returns the protocol class with three
guards, shared through one `ConnectionGuard`:

- **header timeout**: a connection must complete its request headers within
  `idle_timeout_s` of connecting (or of its first byte after a keep-alive pause), else it is
  closed; between requests uvicorn's own keep-alive timeout closes it;
- **per-client cap**: a client (`caligo.web.admission.client_key` of the socket's peer) holds
  at most `connections_per_client` connections, WebSockets included; more are closed at once
  (trusted reverse proxies are exempt: their clients are told apart by the app);
- **shedding under pressure**: when the server holds three quarters of `max_connections`,
  each new connection closes the oldest one that is only waiting (connected without a request,
  or idle between requests), so idle sockets from many addresses cannot starve the clients
  that send requests.

`server_config` builds the `uvicorn.Config` with these and the other limits: uvicorn's
`limit_concurrency` (503 beyond it), a listen backlog of an eighth of it (`ACCEPT_SHARE`),
`timeout_keep_alive`, `h11_max_incomplete_event_size`, WebSocket message size and ping, and
forwarded headers only from trusted proxies.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from caligo.web.admission import client_key
from caligo.web.guard import GuardConfig

log = logging.getLogger(__name__)

WS_MAX_BYTES = 1 << 16
"""Frames above this are refused by the WebSocket layer itself (close code 1009)."""
MAX_HEADER_BYTES = 16 * 1024
"""A request whose line and headers are still incomplete after this many bytes is refused (400;
h11 bounds what it buffers of an incomplete request, not a complete one read at once)."""
KEEP_ALIVE_S = 5
"""An idle keep-alive connection is closed after this (uvicorn's `timeout_keep_alive`)."""
DESCRIPTOR_RESERVE = 64
"""Descriptors kept for the database, engines and logs when sizing `max_connections`."""
MAX_CONNECTIONS_CEILING = 4096
PRESSURE = 0.75
"""Share of `max_connections` from which waiting connections are shed for new ones."""
ACCEPT_SHARE = 8
"""The listen backlog is `max_connections / ACCEPT_SHARE`: asyncio accepts up to a backlog of
connections in one go before any of them is looked at (and closes a shed one only on the next
turn of the loop), so a large backlog let a burst of idle sockets reach the descriptor limit
(and pause accepting) before the guard could shed them."""


def default_max_connections() -> int:
    """Connections allowed at once: the soft descriptor limit minus a reserve."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS_CEILING
    return max(16, min(MAX_CONNECTIONS_CEILING, soft - DESCRIPTOR_RESERVE))


class ConnectionGuard:
    """The connections of one server by client, and the ones only waiting (oldest first)."""

    def __init__(self, per_client: int, max_connections: int, trusted: tuple[str, ...] = ()):
        self.per_client = per_client
        self.max_connections = max_connections
        self._exempt_all = "*" in trusted
        self._exempt = [ipaddress.ip_network(t, strict=False) for t in trusted if t != "*"]
        self._by_client: dict[str, set[asyncio.BaseTransport]] = {}
        self.waiting: OrderedDict[Any, None] = OrderedDict()
        self.refused = 0
        self.shed = 0

    def exempt(self, peer: tuple[str, int] | None) -> bool:
        """True for a peer whose connections are not capped (a trusted proxy, a Unix socket)."""
        if peer is None or self._exempt_all:
            return True
        try:
            ip = ipaddress.ip_address(peer[0])
        except ValueError:
            return True
        return any(ip in net for net in self._exempt)

    def admit(self, peer: tuple[str, int] | None, transport: asyncio.BaseTransport) -> bool:
        """Count a new connection; False when its client already holds its share."""
        if self.per_client <= 0 or self.exempt(peer):
            return True
        key = client_key(peer)
        held = {t for t in self._by_client.get(key, ()) if not t.is_closing()}
        if len(held) >= self.per_client:
            self._by_client[key] = held
            self.refused += 1
            return False
        held.add(transport)
        self._by_client[key] = held
        return True

    def release(self, peer: tuple[str, int] | None, transport: asyncio.BaseTransport) -> None:
        """Forget a closed connection."""
        key = client_key(peer)
        held = self._by_client.get(key)
        if held is not None:
            held.discard(transport)
            if not held:
                del self._by_client[key]

    def shed_for(self, open_connections: int) -> None:
        """Close the oldest waiting connections while the server is under pressure."""
        while self.waiting and open_connections >= PRESSURE * self.max_connections:
            oldest, _ = self.waiting.popitem(last=False)
            oldest.close_waiting()
            self.shed += 1
            open_connections -= 1


def guarded_http_protocol(guard: ConnectionGuard, idle_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with `guard`'s caps and a header timeout (module docstring)."""

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _marker: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not guard.admit(self.client, transport):
                log.debug("connection from %s refused: too many from that client", self.client)
                transport.abort()
                return
            guard.shed_for(len(self.connections))
            self._wait(None)

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            guard.release(self.client, self.transport)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            before = self.scope
            super().data_received(data)
            if self.scope is not before:  # a request began: not waiting any more
                self._stop_waiting()
            elif self._header_timer is None and (
                self.cycle is None or self.cycle.response_complete
            ):  # the first bytes of a next request: its headers are timed
                self._wait(self.scope)

        def on_response_complete(self) -> None:
            before = self.scope
            super().on_response_complete()
            if self.scope is before and not self.transport.is_closing():
                guard.waiting[self] = None  # idle between requests (keep-alive)
                guard.waiting.move_to_end(self)

        def _wait(self, marker: Any) -> None:
            """Time the headers of the request after `marker` (the scope of the last one)."""
            self._marker = marker
            guard.waiting[self] = None
            guard.waiting.move_to_end(self)
            loop = asyncio.get_running_loop()
            self._header_timer = loop.call_later(idle_timeout_s, self._header_timeout)

        def _stop_waiting(self) -> None:
            guard.waiting.pop(self, None)
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self) -> None:
            self._header_timer = None
            if self.scope is self._marker and not self.transport.is_closing():
                log.debug("connection from %s closed: no request within %g s", self.client,
                          idle_timeout_s)
                self.close_waiting()

        def close_waiting(self) -> None:
            """Close this connection, which has no request in progress."""
            self._stop_waiting()
            if not self.transport.is_closing():
                self.transport.abort()

    return GuardedH11Protocol


def server_config(app: Any, limits: GuardConfig, *, log_level: str, access_log: bool) -> Any:
    """The `uvicorn.Config` that serves `app` within `limits`."""
    import uvicorn

    max_connections = limits.max_connections or default_max_connections()
    guard = ConnectionGuard(limits.connections_per_client, max_connections,
                            limits.trusted_proxies)
    return uvicorn.Config(
        app,
        http=guarded_http_protocol(guard, limits.idle_timeout_s),
        log_level=log_level,
        access_log=access_log,
        ws_max_size=WS_MAX_BYTES,
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        lifespan="on",
        backlog=max(16, min(2048, max_connections // ACCEPT_SHARE)),
        limit_concurrency=max_connections,
        timeout_keep_alive=KEEP_ALIVE_S,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        proxy_headers=bool(limits.trusted_proxies),
        forwarded_allow_ips=list(limits.trusted_proxies) or None,
        server_header=False,
    )


__all__ = [
    "KEEP_ALIVE_S",
    "MAX_HEADER_BYTES",
    "WS_MAX_BYTES",
    "ConnectionGuard",
    "default_max_connections",
    "guarded_http_protocol",
    "server_config",
]
