"""The app's outer layer: trusted hosts, security headers, bounded bodies, origin checks.

`GuardMiddleware` wraps the whole ASGI app (outside FastAPI's own layers), so everything it
does holds for every route, the static files and every error page:

- **trusted hosts**: a request whose `Host` is not one of `GuardConfig.allowed_hosts` gets 400
  (a WebSocket handshake is refused): a page on an attacker's domain that resolves to this
  server (DNS rebinding) cannot reach it;
- **security headers** on every response (`security_headers`): a Content-Security-Policy the
  page satisfies (scripts, styles, images and connections from this origin only, its own ws:
  and wss: origin included; no inline script or style, no frames, no plugins), nosniff,
  `frame-ancestors 'none'` and `X-Frame-Options: DENY`, no Referer, `Cross-Origin-Opener-Policy:
  same-origin`, `Cross-Origin-Resource-Policy: same-origin`;
- **bodies**: refused from `Content-Length` before reading (413), read with a cap (a chunked
  body is read only up to the cap, then refused with 413 and the connection closed) and within
  the idle timeout (408), then handed to the app in one piece;
- **state-changing requests** (POST and the like) need this server's own `Origin` (or none: not
  a page) and a JSON body (`caligo.web.admission`), so a cross-site form or `text/plain` POST
  fails (403 / 415);
- **WebSocket handshakes** need this server's own `Origin` (or none), and each client holds at
  most `sockets_per_client` of them at once (more are closed with code 4429 and a reason).

Errors are JSON `{"error", "code"}`, as the app's own.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import anyio

from caligo.web.admission import check_json, check_origin, client_key
from caligo.web.errors import RefusedError, WebConfigError

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
"""Host names a server accepts by default beside the one it is bound to."""
MAX_BODY_BYTES = 4096
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TOO_MANY_SOCKETS = 4429
"""Close code of a WebSocket refused because its client holds too many."""


@dataclass(frozen=True)
class GuardConfig:
    """The network limits of one server (`caligo web serve` options; validated here)."""

    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS
    """`Host` names served (a port is ignored); `*.example.com` covers sub-domains, `*` all."""
    api_docs: bool = False
    """Serve /docs, /redoc and /openapi.json (off in production: no map of the API)."""
    max_body_bytes: int = MAX_BODY_BYTES
    idle_timeout_s: float = 30.0
    """A connection must send its request headers (and a body) within this time; a WebSocket
    its first frame."""
    sockets_per_client: int = 8
    """WebSockets one client may hold open at once; 0: no limit."""
    connections_per_client: int = 32
    """TCP connections one client may hold open at once (`caligo.web.transport`); 0: none."""
    max_connections: int | None = None
    """Connections of all clients at once (uvicorn's `limit_concurrency`); None: from the
    process's descriptor limit."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses (or networks) of reverse proxies whose `X-Forwarded-For` and
    `X-Forwarded-Proto` are believed; empty: the socket's peer is the client."""

    def __post_init__(self) -> None:
        bad = [h for h in self.allowed_hosts if not _host_pattern_ok(h)]
        if not self.allowed_hosts or bad:
            raise WebConfigError(f"allowed hosts must be host names, addresses, '*.domain' or "
                                 f"'*'; got {bad or 'none'!r}")
        if (
            self.max_body_bytes < 64
            or not 0 < self.idle_timeout_s < 86_400
            or self.sockets_per_client < 0
            or self.connections_per_client < 0
            or (self.max_connections is not None and self.max_connections < 1)
        ):
            raise WebConfigError(f"invalid server limits: {self!r}")


def _host_pattern_ok(pattern: str) -> bool:
    """A host name, `*.domain` or `*` (a `*` anywhere else matches nothing sensible)."""
    if pattern == "*":
        return True
    rest = pattern[2:] if pattern.startswith("*.") else pattern
    return _HOST_CHARS.fullmatch(rest) is not None  # what `host_name` can return, no '*'


_HOST_CHARS = re.compile(r"[A-Za-z0-9._:-]+")
"""The characters of a host name or an address (an IPv6 one without its brackets)."""


def host_name(header: str | None) -> str | None:
    """The host of a `Host` header without its port (an IPv6 literal without brackets),
    lower-case; None when missing or malformed."""
    if not header or not header.isascii() or len(header) > 300:
        return None
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        rest = header[end + 1 :]
        if end < 0 or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
        return header[1:end] or None
    name, colon, port = header.partition(":")
    if colon and not port.isdigit():
        return None
    if not name or any(c in name for c in " /\\@?#"):
        return None
    return name


def host_allowed(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether host `name` matches one of `patterns` (exact, `*.domain` or `*`)."""
    for pattern in patterns:
        p = pattern.lower().strip("[]")
        if p == "*" or name == p or (p.startswith("*.") and name.endswith(p[1:])):
            return True
    return False


def security_headers(host: str | None) -> list[tuple[bytes, bytes]]:
    """The headers every response carries; `host` (the checked `Host` header) names the
    page's own WebSocket origin in `connect-src`."""
    sockets = f" ws://{host} wss://{host}" if host else ""
    csp = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        f"connect-src 'self'{sockets}; font-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )
    return [
        (b"content-security-policy", csp.encode("latin-1")),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"),
    ]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class GuardMiddleware:
    """Wrap `app` in the checks of the module docstring."""

    def __init__(self, app: ASGIApp, config: GuardConfig) -> None:
        self.app = app
        self.config = config
        self.sockets: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    # --- HTTP --------------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_host = _header(scope, b"host")
        name = host_name(raw_host)
        if name is None or not host_allowed(name, self.config.allowed_hosts):
            log.info("refused Host %.100r", raw_host)
            await _reply(send, None, 400, "bad_host",
                         f"this server does not serve the host {(raw_host or '')[:100]!r}")
            return
        extra = security_headers(raw_host)

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in extra}
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in names]
                message = {**message, "headers": [*headers, *extra]}
            await send(message)

        try:
            if scope["method"] not in SAFE_METHODS:
                check_origin(_header(scope, b"origin"), scope.get("scheme", "http"), raw_host)
                check_json(_header(scope, b"content-type"))
        except RefusedError as exc:
            status = 403 if exc.code == "forbidden_origin" else 415
            await _reply(send, extra, status, exc.code, str(exc))
            return
        body = await self._read_body(scope, receive, send_secured)
        if body is None:
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send_secured)

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole request body, or None after answering 400/408/413 (or a disconnect)."""
        limit = self.config.max_body_bytes
        declared = _header(scope, b"content-length")
        if declared is not None:
            text = declared.strip()
            if not text.isdigit():
                await _reply(send, [], 400, "bad_request",
                             f"invalid Content-Length {declared[:40]!r}", close=True)
                return None
            if len(text) > 18 or int(text) > limit:
                await _reply(send, [], 413, "too_large",
                             f"request body too large: {text[:40]} bytes (limit {limit})",
                             close=True)
                return None
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.config.idle_timeout_s):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    await _reply(send, [], 413, "too_large",
                                 f"request body too large: over {limit} bytes", close=True)
                    return None
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        await _reply(send, [], 408, "timeout",
                     f"request body not received within {self.config.idle_timeout_s:g} s",
                     close=True)
        return None

    # --- WebSocket ---------------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_host = _header(scope, b"host")
        name = host_name(raw_host)
        try:
            if name is None or not host_allowed(name, self.config.allowed_hosts):
                raise RefusedError(f"host {(raw_host or '')[:100]!r} not served", "bad_host")
            check_origin(_header(scope, b"origin"), scope.get("scheme", "ws"), raw_host)
        except RefusedError as exc:
            log.info("WebSocket refused: %s", exc)
            await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403
            return
        client = client_key(scope.get("client"))
        cap = self.config.sockets_per_client
        held = self.sockets.get(client, 0)
        if cap and held >= cap:
            log.info("WebSocket refused: client %s holds %d", client, held)
            await receive()  # websocket.connect
            await send({"type": "websocket.accept"})
            reason = f"too many connections from your address ({cap} at most)"
            await send({"type": "websocket.close", "code": TOO_MANY_SOCKETS, "reason": reason})
            return
        self.sockets[client] = held + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self.sockets.get(client, 1) - 1
            if left > 0:
                self.sockets[client] = left
            else:
                self.sockets.pop(client, None)


async def _reply(
    send: Send,
    headers: list[tuple[bytes, bytes]] | None,
    status: int,
    code: str,
    message: str,
    close: bool = False,
) -> None:
    """Send a JSON error response with the security headers (`headers`, None: no host)."""
    body = json.dumps({"error": message, "code": code}).encode()
    out = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(security_headers(None) if headers is None else headers),
    ]
    if close:
        out.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


__all__ = [
    "LOCAL_HOSTS",
    "TOO_MANY_SOCKETS",
    "GuardConfig",
    "GuardMiddleware",
    "host_allowed",
    "host_name",
    "security_headers",
]
