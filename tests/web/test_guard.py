"""The app's outer layer (`caligo.web.guard`): hosts, security headers, API schema, bodies.

Before: no security headers, `/openapi.json` and `/redoc` served, any `Host` accepted (DNS
rebinding), and request bodies read whole before the 4 KiB check (one 256 MB POST took the
server from 205 to 718 MB).

Expected values and their sources: the header names and values are the ones the OWASP Secure
Headers Project recommends (CSP Level 3 directives `default-src`, `script-src`, `style-src`,
`connect-src`, `frame-ancestors`; `X-Content-Type-Options: nosniff`; `X-Frame-Options: DENY`;
`Referrer-Policy: no-referrer`; `Cross-Origin-Opener-Policy: same-origin`); status codes from
RFC 9110 (400 for a Host the server does not serve, section 7.2; 408; 413 "Content Too Large").
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from caligo.web import WebConfig, create_app
from caligo.web.errors import WebConfigError
from caligo.web.guard import GuardConfig, GuardMiddleware, host_name

HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
}


def app_for(db: Path, limits: GuardConfig | None = None) -> Any:
    return create_app(WebConfig(db=str(db), agent="random", seed=2), limits)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The app with its default limits (localhost names only), reached as `localhost:8000`."""
    app = app_for(tmp_path / "g.sqlite")

    @app.get("/boom")
    async def boom() -> None:  # a bug: the server-error page must carry the headers too
        raise RuntimeError("bug")

    with TestClient(app, base_url="http://localhost:8000", raise_server_exceptions=False) as c:
        yield c


def csp_of(response: Any) -> dict[str, str]:
    text = response.headers["content-security-policy"]
    return {d.split(" ", 1)[0]: d.split(" ", 1)[1] for d in (p.strip() for p in text.split(";"))}


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    responses = {
        "page": client.get("/"),
        "script": client.get("/static/app.js"),
        "piece": client.get("/pieces/wN.svg"),
        "api": client.get("/api/info"),
        "not found": client.get("/api/games/nope"),
        "bad request": client.post("/api/games", json={"color": "purple"}),
        "too large": client.post("/api/games", content=b"x" * 5000,
                                 headers={"Content-Type": "application/json"}),
        "server error": client.get("/boom"),
        "bad host": client.get("/", headers={"Host": "evil.example"}),
    }
    assert [r.status_code for r in responses.values()] == [200, 200, 200, 200, 404, 400, 413,
                                                           500, 400]
    for name, r in responses.items():
        for header, value in HEADERS.items():
            assert r.headers.get(header) == value, (name, header)
        csp = csp_of(r)
        assert csp["default-src"] == "'self'" and csp["frame-ancestors"] == "'none'", name
        assert csp["script-src"] == "'self'" and csp["style-src"] == "'self'", name
        assert "unsafe-inline" not in r.headers["content-security-policy"], name
    # the page's own WebSocket origin is allowed to connect, nothing else
    assert csp_of(responses["page"])["connect-src"] == (
        "'self' ws://localhost:8000 wss://localhost:8000"
    )


@pytest.mark.parametrize("host", ["evil.example", "localhost.evil.example", "10.0.0.1:8000",
                                  "local host", "[::1", "localhost:http"])
def test_a_request_for_another_host_is_refused(client: TestClient, host: str) -> None:
    """DNS rebinding: a page on evil.example whose name now resolves to this server still
    names evil.example in `Host`."""
    r = client.get("/api/info", headers={"Host": host})
    assert r.status_code == 400 and r.json()["code"] == "bad_host"
    r = client.post("/api/games", json={}, headers={"Host": host})
    assert r.status_code == 400
    assert client.app.state.hub.live == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000",
                                  "LOCALHOST"])
def test_the_local_names_are_served(client: TestClient, host: str) -> None:
    assert client.get("/api/info", headers={"Host": host}).status_code == 200


def test_other_hosts_are_served_when_allowed(tmp_path: Path) -> None:
    limits = GuardConfig(allowed_hosts=("chess.example.org", "*.example.net"))
    with TestClient(app_for(tmp_path / "g.sqlite", limits)) as c:
        for host, status in [("chess.example.org", 200), ("a.example.net", 200),
                             ("example.net", 400), ("localhost", 400), ("testserver", 400)]:
            assert c.get("/api/info", headers={"Host": host}).status_code == status, host
    # a bad pattern is named (it was the whole GuardConfig's repr), and a URL or a path is one
    for bad in ("chess.*.org", "bad host", "", "*.*", "a/b", "http://x.org"):
        with pytest.raises(WebConfigError, match=re.escape(repr([bad]))):
            GuardConfig(allowed_hosts=("localhost", bad))
    assert host_name("[2001:db8::1]:80") == "2001:db8::1" and host_name("a b") is None


def test_a_websocket_for_another_host_is_refused(client: TestClient) -> None:
    game = client.post("/api/games", json={}).json()
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect(
            f"ws://evil.example/ws/games/{game['game']}?seat={game['seat']}"
        ):
            pass
    assert refused.value.code == 1008


def test_no_api_schema_unless_asked(tmp_path: Path, client: TestClient) -> None:
    for path in ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"):
        assert client.get(path).status_code == 404, path
    limits = GuardConfig(allowed_hosts=("testserver",), api_docs=True)
    with TestClient(app_for(tmp_path / "d.sqlite", limits)) as c:
        assert c.get("/openapi.json").json()["info"]["title"].startswith("Caligo")
        assert c.get("/docs").status_code == 200 and c.get("/redoc").status_code == 200


# --- bodies at the ASGI level: what is read from the client -----------------------------------


class Peer:
    """An ASGI client that sends `chunks` (then waits forever) and records what it got."""

    def __init__(self, chunks: Iterator[bytes] | None, headers: dict[str, str]) -> None:
        self.chunks = chunks
        self.pulled = 0
        self.sent: list[dict[str, Any]] = []
        self.scope = {
            "type": "http", "method": "POST", "path": "/api/games", "scheme": "http",
            "headers": [(k.lower().encode(), v.encode()) for k, v in
                        {"host": "localhost", "content-type": "application/json",
                         **headers}.items()],
            "client": ("10.0.0.1", 1),
        }

    async def receive(self) -> dict[str, Any]:
        self.pulled += 1
        if self.chunks is None:
            await anyio.sleep_forever()
        return {"type": "http.request", "body": next(self.chunks), "more_body": True}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def status(self) -> int:
        return int(self.sent[0]["status"])

    def header(self, name: bytes) -> bytes | None:
        return dict(self.sent[0]["headers"]).get(name)


async def never_called(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the app was called")


def endless(size: int) -> Iterator[bytes]:
    while True:
        yield b"x" * size


def run(peer: Peer, limits: GuardConfig | None = None) -> None:
    middleware = GuardMiddleware(never_called, limits or GuardConfig())
    anyio.run(middleware, peer.scope, peer.receive, peer.send)


def test_a_declared_oversized_body_is_refused_before_reading_it() -> None:
    peer = Peer(endless(1 << 20), {"content-length": str(256 << 20)})
    run(peer)
    assert peer.pulled == 0 and peer.status() == 413
    assert peer.header(b"connection") == b"close"  # the rest of it is never read
    assert "268435456 bytes (limit 4096)" in json.loads(peer.sent[1]["body"])["error"]
    peer = Peer(endless(1), {"content-length": "1" * 5000})  # and a number of 5,000 digits
    run(peer)
    assert peer.pulled == 0 and peer.status() == 413
    peer = Peer(endless(1), {"content-length": "12, 12"})
    run(peer)
    assert peer.pulled == 0 and peer.status() == 400


@pytest.mark.parametrize("chunk", [1, 1000, 1 << 16])
def test_an_endless_chunked_body_is_read_only_up_to_the_cap(chunk: int) -> None:
    peer = Peer(endless(chunk), {})
    run(peer)
    assert peer.status() == 413 and peer.header(b"connection") == b"close"
    assert (peer.pulled - 1) * chunk <= 4096  # the last chunk read crossed the cap


def test_a_body_that_never_ends_is_timed_out() -> None:
    peer = Peer(None, {"content-length": "100"})
    run(peer, GuardConfig(idle_timeout_s=0.05))
    assert peer.status() == 408 and peer.header(b"connection") == b"close"


# --- WebSockets --------------------------------------------------------------------------------


def test_a_client_holds_only_so_many_websockets(tmp_path: Path) -> None:
    limits = GuardConfig(allowed_hosts=("testserver",), sockets_per_client=2)
    config = WebConfig(db=str(tmp_path / "g.sqlite"), agent="random", games_per_client=0)
    with TestClient(create_app(config, limits)) as c:
        game = c.post("/api/games", json={}).json()
        path = f"/ws/games/{game['game']}?seat={game['seat']}"
        with c.websocket_connect(path) as a, c.websocket_connect(path) as b:
            a.receive_text()
            b.receive_text()
            with c.websocket_connect(path) as third:
                with pytest.raises(WebSocketDisconnect) as closed:
                    third.receive_text()
            assert closed.value.code == 4429 and "too many connections" in closed.value.reason
        with c.websocket_connect(path) as again:  # the first two are closed: room again
            assert json.loads(again.receive_text())["type"] == "state"


def test_a_websocket_that_never_sends_anything_is_closed(tmp_path: Path) -> None:
    limits = GuardConfig(allowed_hosts=("testserver",), idle_timeout_s=0.2)
    config = WebConfig(db=str(tmp_path / "g.sqlite"), agent="random")
    with TestClient(create_app(config, limits)) as c:
        game = c.post("/api/games", json={}).json()
        path = f"/ws/games/{game['game']}?seat={game['seat']}"
        with c.websocket_connect(path) as ws:
            assert json.loads(ws.receive_text())["type"] == "state"
            idle = json.loads(ws.receive_text())  # nothing sent: closed after the timeout
            assert idle["type"] == "error" and idle["code"] == "idle"
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_text()
            assert closed.value.code == 4408
        with c.websocket_connect(path) as ws:  # a socket that speaks (as the page does) stays
            ws.send_text('{"type": "sync"}')
            assert json.loads(ws.receive_text())["type"] == "state"
            assert json.loads(ws.receive_text())["type"] == "state"
            time.sleep(0.5)  # past the timeout: it applies to a first message only
            ws.send_text('{"type": "sync"}')
            assert json.loads(ws.receive_text())["type"] == "state"
