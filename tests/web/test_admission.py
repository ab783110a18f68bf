"""Admission: who may create games and drive seats, and how many.

Before, creating a game needed no token and no rate limit, and a cross-site `text/plain` POST
from any page worked (no Origin check, no preflight): 20 POSTs made 40 Stockfish processes.

Expected values and their sources:
- what a browser sends: the Fetch standard (an `Origin` header on every POST and every
  WebSocket handshake; `text/plain`, `application/x-www-form-urlencoded` and
  `multipart/form-data` are the "CORS-safelisted" content types a page may POST to any site
  without a preflight; `application/json` needs one) and RFC 6454 (an origin is scheme, host
  and port; `null` for opaque origins);
- the rate: a token bucket of N tokens refilled at N a minute, so after a burst of N the next
  game waits 60/N seconds (Retry-After, RFC 9110 section 10.2.3); every clock is injected;
- status codes: RFC 9110 (403, 415, 503) and RFC 6585 (429).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from caligo.web import WebConfig, create_app
from caligo.web.admission import RateLimiter, check_origin, client_key
from caligo.web.errors import OriginError, RateLimitError
from caligo.web.guard import GuardConfig
from tests.web.test_clock_unload import FakeClock

OWN = "http://testserver"
BODY = {"color": "white", "tc": "none"}
SAFELISTED = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x", None]


def with_peer(app: Any) -> Any:
    """`app` seeing each request come from the address in its `x-test-peer` header (the
    TestClient has one fixed peer; a server sees the socket's)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            for key, value in scope["headers"]:
                if key == b"x-test-peer":
                    scope = {**scope, "client": (value.decode(), 40000)}
        await app(scope, receive, send)

    return wrapped


class Server:
    """The app in a TestClient, with its clock, its hub and requests from any address."""

    def __init__(self, db: Path, **kw: Any) -> None:
        self.clock = FakeClock(100.0)
        self.app = create_app(
            WebConfig(db=str(db), **{"agent": "random", "seed": 3, **kw}),
            GuardConfig(allowed_hosts=("testserver",)),
            now=self.clock,
        )
        self.client = TestClient(with_peer(self.app))

    def post(self, path: str = "/api/games", body: Any = BODY, peer: str = "10.0.0.1",
             **headers: str) -> Any:
        return self.client.post(path, content=json.dumps(body), headers={
            "Content-Type": "application/json", "x-test-peer": peer, **headers})

    def live(self) -> int:
        return len(self.app.state.hub.live)


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Any]:
    servers: list[Server] = []

    def build(**kw: Any) -> Server:
        server = Server(tmp_path / f"g{len(servers)}.sqlite", **kw)
        server.client.__enter__()
        servers.append(server)
        return server

    yield build
    for server in servers:
        server.client.__exit__(None, None, None)


def ws(server: Server, game: dict[str, str], **headers: str) -> Any:
    return server.client.websocket_connect(
        f"/ws/games/{game['game']}?seat={game['seat']}", headers=headers
    )


# --- origin and content type -----------------------------------------------------------------


@pytest.mark.parametrize("content_type", SAFELISTED)
@pytest.mark.parametrize("origin", ["http://evil.example", None])
def test_a_body_a_page_may_send_cross_site_cannot_create_a_game(
    make: Any, content_type: str | None, origin: str | None
) -> None:
    s = make()
    headers = {"x-test-peer": "10.0.0.1"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    if origin is not None:
        headers["Origin"] = origin
    r = s.client.post("/api/games", content=json.dumps(BODY), headers=headers)
    assert r.status_code == (403 if origin else 415), r.text
    assert r.json()["code"] == ("forbidden_origin" if origin else "unsupported_media_type")
    assert s.live() == 0


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "null", "https://testserver", "http://testserver:8080",
     "http://testserver.evil.example", "http://testserver/", "http://user@testserver"],
)
def test_only_the_pages_own_origin_may_create_games_or_rematch(make: Any, origin: str) -> None:
    s = make()
    r = s.post(Origin=origin)
    assert r.status_code == 403 and r.json()["code"] == "forbidden_origin", r.text
    assert s.live() == 0
    game = s.post(Origin=OWN).json()  # the page itself
    with ws(s, game) as sock:
        json.loads(sock.receive_text())
        sock.send_text('{"type": "resign"}')
        json.loads(sock.receive_text())
    r = s.post(f"/api/games/{game['game']}/rematch", {"seat": game["seat"]}, Origin=origin)
    assert r.status_code == 403
    r = s.post(f"/api/games/{game['game']}/rematch", {"seat": game["seat"]}, Origin=OWN)
    assert r.status_code == 201, r.text


def test_a_program_without_origin_may_create_games(make: Any) -> None:
    """No browser omits Origin on a POST, so a request without it is a program's (curl, a
    script): it cannot carry a visitor's browser here, and is limited by address."""
    s = make()
    assert s.post().status_code == 201
    assert s.post(Origin=OWN.upper()).status_code == 201  # scheme and host are case-insensitive


def test_a_page_of_another_origin_cannot_drive_a_seat_even_with_its_token(make: Any) -> None:
    s = make()
    game = s.post().json()
    for origin in ("http://evil.example", "null", "https://testserver"):
        with pytest.raises(WebSocketDisconnect) as refused:
            with ws(s, game, origin=origin):
                pass
        assert refused.value.code == 1008  # closed before accept: the handshake gets 403
    with ws(s, game, origin=OWN) as sock:
        assert json.loads(sock.receive_text())["type"] == "state"


def test_check_origin_compares_scheme_host_and_port() -> None:
    check_origin("http://localhost:8000", "http", "localhost:8000")
    check_origin("https://chess.example.org", "https", "chess.example.org:443")
    check_origin("http://[::1]:8000", "ws", "[::1]:8000")
    check_origin(None, "http", "localhost")
    for origin, scheme, host in [
        ("http://localhost:8001", "http", "localhost:8000"),
        ("http://localhost", "https", "localhost"),
        ("http://localhost:8000", "http", None),
        ("http://localhost:99999", "http", "localhost"),
        ("file://", "http", "localhost"),
        ("http://lócalhost", "http", "lócalhost"),
    ]:
        with pytest.raises(OriginError, match="refused"):
            check_origin(origin, scheme, host)


# --- rates and caps --------------------------------------------------------------------------


def test_a_client_that_creates_games_too_fast_waits_its_turn(make: Any) -> None:
    s = make(games_per_minute=2, games_per_client=0)
    assert [s.post().status_code for _ in range(2)] == [201, 201]  # a burst of 2
    r = s.post()
    assert r.status_code == 429
    assert r.json()["code"] == "rate_limited" and r.json()["retry_after"] == 30  # 60 s / 2
    assert r.headers["Retry-After"] == "30" and "try again in 30 s" in r.json()["error"]
    assert s.post(peer="10.0.0.2").status_code == 201  # another address has its own bucket
    s.clock.advance(29.0)
    r = s.post()
    assert r.status_code == 429 and r.headers["Retry-After"] == "1"
    s.clock.advance(1.0)
    assert s.post().status_code == 201
    assert s.post().status_code == 429
    s.clock.advance(3600.0)  # a long pause refills the bucket, never beyond its size
    assert [s.post().status_code for _ in range(3)] == [201, 201, 429]


def test_refused_requests_spend_no_token(make: Any) -> None:
    s = make(games_per_minute=1, games_per_client=0)
    for _ in range(3):
        assert s.post(body={"color": "purple"}).status_code == 400
        assert s.post(Origin="http://evil.example").status_code == 403
    assert s.post().status_code == 201


def test_an_ipv6_client_is_its_64_network(make: Any) -> None:
    s = make(games_per_minute=1, games_per_client=0)
    assert s.post(peer="2001:db8:1:2::1").status_code == 201
    assert s.post(peer="2001:db8:1:2:ffff::9").status_code == 429  # the same /64
    assert s.post(peer="2001:db8:1:3::1").status_code == 201
    assert client_key(("::ffff:192.0.2.7", 1)) == client_key(("192.0.2.7", 2)) == "192.0.2.7"
    assert client_key(None) == "unknown"


def test_a_client_may_run_only_so_many_games_at_once(make: Any) -> None:
    s = make(games_per_minute=0, games_per_client=2)
    first, second = s.post().json(), s.post().json()
    with ws(s, first) as a, ws(s, second) as b:  # both games in use: watched by their page
        a.receive_text()
        b.receive_text()
        r = s.post()
        assert r.status_code == 429 and r.json()["code"] == "too_many_games"
        assert "you already have 2 games running" in r.json()["error"]
        assert "Retry-After" not in r.headers
        assert s.post(peer="10.0.0.2").status_code == 201  # other clients are not held back
    third = s.post()  # the first two are idle now: the oldest is unloaded to make room
    assert third.status_code == 201
    assert s.live() == 3 - 1 + 1  # 10.0.0.1's two games (one new) and 10.0.0.2's
    with ws(s, first) as a:  # the unloaded game resumes when its seat comes back
        assert json.loads(a.receive_text())["status"] == "playing"


def test_a_full_server_says_so(make: Any) -> None:
    s = make(games_per_minute=0, games_per_client=0, max_live_games=1)
    game = s.post().json()
    with ws(s, game) as sock:
        sock.receive_text()
        r = s.post(peer="10.0.0.9")
        assert r.status_code == 503 and r.json()["code"] == "busy"
        assert "server is full" in r.json()["error"] and r.headers["Retry-After"] == "60"


def test_the_rate_limiter_refills_at_its_rate() -> None:
    clock = FakeClock(0.0)
    rates = RateLimiter(6, clock)  # 6 a minute: one every 10 s
    for _ in range(6):
        rates.take("a")
    assert rates.retry_after("a") == 10
    clock.advance(25.0)  # 2.5 tokens back
    rates.take("a")
    rates.take("a")
    assert rates.retry_after("a") == 5
    with pytest.raises(RateLimitError, match="try again in 5 s"):
        rates.take("a")
    unlimited = RateLimiter(0, clock)
    for _ in range(1000):
        unlimited.take("a")
    assert unlimited.retry_after("a") is None


# --- the engines' load -------------------------------------------------------------------------
# Admission by load (`GameHub.engine_full`): the workers' measured busy share and waits (the
# pool's `load()`, replaced here by set values) and the games admitted in the last 20 s.

ENGINE = "obscuro:eval=simple,budget=iters=30"


def _loaded(s: Server, monkeypatch: pytest.MonkeyPatch, busy: float, wait: float,
            games: int = 0, by_game: dict[str, float] | None = None) -> None:
    """The hub's workers report `busy` of their time busy over 30 s, a `wait` s wait, and
    `games` games served (`by_game`: each one's share of the 30 s, if known)."""
    from caligo.play.workers import PoolLoad

    split = None if by_game is None else {g: b * 30.0 for g, b in by_game.items()}
    monkeypatch.setattr(s.app.state.hub.workers, "load",
                        lambda window_s=30.0: PoolLoad(1, busy * 30.0, 30.0, wait, games, split))


def test_busy_engines_make_the_server_full(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    s = make(agent=ENGINE, games_per_minute=0, games_per_client=0, engine_load=0.7)
    _loaded(s, monkeypatch, busy=0.5, wait=0.2)
    assert s.post().status_code == 201
    _loaded(s, monkeypatch, busy=0.75, wait=0.2)  # past the share: a queue would form
    r = s.post(peer="10.0.0.2")
    assert r.status_code == 503 and r.json()["code"] == "busy"
    assert "engines were busy 75%" in r.json()["error"] and r.headers["Retry-After"] == "30"
    _loaded(s, monkeypatch, busy=0.3, wait=1.5)  # a move waited: the queue is there already
    r = s.post(peer="10.0.0.3")
    assert r.status_code == 503 and "waited 1.5 s for a worker" in r.json()["error"]
    _loaded(s, monkeypatch, busy=0.3, wait=0.1)  # it cleared
    assert s.post(peer="10.0.0.4").status_code == 201
    assert s.live() == 2


def test_new_games_are_admitted_a_few_per_worker_at_a_time(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Their load shows only once they play: two per worker (one thread worker here) in 20 s
    (the hub's clock, a fake one here)."""
    s = make(agent=ENGINE, games_per_minute=0, games_per_client=0, engine_load=0.7,
             games_per_worker=2)
    _loaded(s, monkeypatch, busy=0.0, wait=0.0)
    assert [s.post(peer=f"10.0.1.{i}").status_code for i in range(3)] == [201, 201, 503]
    assert "2 games started in the last 20 s" in s.post().json()["error"]
    s.clock.advance(20.5)  # their load would show now: the next ones may start
    assert [s.post(peer=f"10.0.1.{i}").status_code for i in range(3, 6)] == [201, 201, 503]


def test_new_games_are_projected_at_the_measured_share_of_a_game(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once games were measured, a new one counts at their share: five slow players' games
    took 10% of the worker (2% each), so twenty more fit under 70% in 20 s; two quick
    players' games took 50% (25% each), so one more would bring it to 75%."""
    s = make(agent=ENGINE, games_per_minute=0, games_per_client=0, engine_load=0.7,
             games_per_worker=2)
    _loaded(s, monkeypatch, busy=0.1, wait=0.0, games=5)
    # 0.1 + 0.02 x (admitted + 1) <= 0.7: 30 in all, of them 20 here (the rule's prior
    # alone, two per worker, would have stopped at two)
    assert [s.post(peer=f"10.0.3.{i}").status_code for i in range(20)] == [201] * 20
    s2 = make(agent=ENGINE, games_per_minute=0, games_per_client=0, engine_load=0.7,
              games_per_worker=2)
    _loaded(s2, monkeypatch, busy=0.5, wait=0.0, games=2)
    r = s2.post(peer="10.0.4.1")
    assert r.status_code == 503 and "would bring its engines to 75%" in r.json()["error"]


def test_an_engine_without_work_or_the_rule_off_is_never_refused_for_load(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for kw in ({"agent": "random", "engine_load": 0.7}, {"agent": ENGINE, "engine_load": 0.0}):
        s = make(games_per_minute=0, games_per_client=0, games_per_worker=1, **kw)
        _loaded(s, monkeypatch, busy=1.0, wait=10.0)
        assert [s.post(peer=f"10.0.2.{i}").status_code for i in range(3)] == [201] * 3


def test_a_game_that_ended_no_longer_loads_the_engines(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone quick player's game took 47% of the worker and ended: the rematch was refused
    ("would bring its engines to 93%"), as if that game still ran beside the new one. Only
    the games still live count now; a live one's share still does."""
    s = make(agent=ENGINE, games_per_minute=0, games_per_client=0, engine_load=0.7,
             games_per_worker=2)
    _loaded(s, monkeypatch, busy=0.47, wait=0.0, games=1, by_game={"wended": 0.47})
    first = s.post()
    assert first.status_code == 201, first.text
    live = first.json()["game"]
    _loaded(s, monkeypatch, busy=0.47, wait=0.0, games=1, by_game={live: 0.47})
    r = s.post(peer="10.0.5.1")  # that one runs: 0.47 + 0.47 x 2 (it and this one) > 0.7
    assert r.status_code == 503 and "would bring its engines to 141%" in r.json()["error"]


def test_a_level_that_does_no_work_is_never_refused_for_load(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ladder's level 1 (a random mover) on a busy server: admitted, and not counted
    against the engine games that follow; level 5 (a search) is refused."""
    s = make(agent="caligo:level=1", games_per_minute=0, games_per_client=0, engine_load=0.7,
             games_per_worker=1)
    _loaded(s, monkeypatch, busy=0.9, wait=0.0)
    body = {"color": "white", "tc": "none", "strength": "level=1"}
    assert [s.post(body=body, peer=f"10.0.6.{i}").status_code for i in range(3)] == [201] * 3
    r = s.post(body={**body, "strength": "level=5"}, peer="10.0.6.9")
    assert r.status_code == 503 and "engines were busy 90%" in r.json()["error"]
    _loaded(s, monkeypatch, busy=0.0, wait=0.0)  # the three level-1 games counted for nothing
    assert s.post(body={**body, "strength": "level=5"}, peer="10.0.6.9").status_code == 201
