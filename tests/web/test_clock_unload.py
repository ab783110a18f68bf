"""The clock across an unload and a restart: time a player spent stays spent.

Before, a player could reset their own clock in a timed game by disconnecting and getting the
game unloaded (other players' new games make room), then reconnecting: 47.9 s left became
60.0 s. Now the unload stores the running turn's elapsed time and the resume charges it, plus
the time since the unload while the same server ran; a restart's downtime stays free.

Every clock here is injected (`create_app(..., now=clock)`, the sessions' `now`), never wall
time. Expected values: the time control's arithmetic, initial time minus the seconds the test
advanced the clock on the player's turn (the first move is free: lichess's and chess.com's
rule, docs/web.md), and 30 s for a first move (`WebConfig.first_move_ms`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from caligo.web import WebConfig, create_app
from caligo.web.guard import GuardConfig

TEST_HOST = GuardConfig(allowed_hosts=("testserver",))


class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self, start: float) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def client(db: Path, clock: FakeClock) -> TestClient:
    config = WebConfig(db=str(db), agent="random", seed=5, max_live_games=1,
                       games_per_minute=0, games_per_client=0)
    return TestClient(create_app(config, TEST_HOST, now=clock))


def recv(ws: Any) -> dict[str, Any]:
    return json.loads(ws.receive_text())  # type: ignore[no-any-return]


def new_game(c: TestClient, color: str = "white", tc: str = "60+0") -> dict[str, str]:
    r = c.post("/api/games", json={"color": color, "tc": tc})
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


def url(game: dict[str, str]) -> str:
    return f"/ws/games/{game['game']}?seat={game['seat']}"


def to_own_clocked_turn(c: TestClient, game: dict[str, str]) -> dict[str, Any]:
    """Play White's free first move and wait for the engine's reply: White's clock runs."""
    with c.websocket_connect(url(game)) as ws:
        recv(ws)
        ws.send_text(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))
        f = recv(ws)
        while not (f["your_turn"] and f["ply"] == 2):
            f = recv(ws)
    assert f["clocks"]["running"] == "white" and f["clocks"]["white"] == 60_000
    return f


def clocks_now(c: TestClient, game: dict[str, str]) -> dict[str, Any]:
    with c.websocket_connect(url(game)) as ws:
        f = recv(ws)
        ws.send_text('{"type": "sync"}')
        assert recv(ws)["clocks"] == f["clocks"]  # the clock is still: nothing else moved it
    return f["clocks"]  # type: ignore[no-any-return]


def test_unloading_a_game_does_not_give_its_mover_time_back(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    with client(tmp_path / "g.sqlite", clock) as c:
        game = new_game(c)
        to_own_clocked_turn(c, game)
        clock.advance(12.1)  # the player thinks 12.1 s, disconnected
        assert clocks_now(c, game)["white"] == 60_000 - 12_100
        new_game(c, tc="none")  # max_live_games=1: the idle game is unloaded for it
        clock.advance(5.0)  # and stays unloaded 5 s while this server runs: its clock runs on
        resumed = clocks_now(c, game)
    assert resumed["running"] == "white"
    assert resumed["white"] == 60_000 - 12_100 - 5_000
    assert resumed["black"] == 60_000


def test_the_first_move_countdown_survives_an_unload(tmp_path: Path) -> None:
    clock = FakeClock(50.0)
    with client(tmp_path / "g.sqlite", clock) as c:
        game = new_game(c)
        with c.websocket_connect(url(game)) as ws:
            assert recv(ws)["clocks"]["first_move_ms"] == 30_000
        clock.advance(20.0)
        new_game(c, tc="none")  # the game is unloaded before White's first move
        resumed = clocks_now(c, game)
    assert resumed["running"] is None and resumed["first_move_ms"] == 30_000 - 20_000


def test_a_restart_charges_the_time_spent_but_not_the_downtime(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    first = FakeClock(1000.0)
    with client(db, first) as c:
        unloaded = new_game(c)
        to_own_clocked_turn(c, unloaded)
        first.advance(12.1)
        running = new_game(c)  # `unloaded` makes room for it
        first.advance(3.0)  # `unloaded` is off the clock's memory but its clock runs on
        to_own_clocked_turn(c, running)
        first.advance(7.0)  # both players think 7 more seconds, then the server stops
    second = FakeClock(5.0)  # another process: its monotonic clock has another origin
    with client(db, second) as c:
        second.advance(600.0)  # downtime, and time before the players come back: free
        assert clocks_now(c, unloaded)["white"] == 60_000 - 12_100 - 3_000 - 7_000
        assert clocks_now(c, running)["white"] == 60_000 - 7_000


def test_a_resumed_game_whose_time_ran_out_while_unloaded_is_lost_on_time(
    tmp_path: Path,
) -> None:
    clock = FakeClock(1000.0)
    with client(tmp_path / "g.sqlite", clock) as c:
        game = new_game(c)
        to_own_clocked_turn(c, game)
        new_game(c, tc="none")
        clock.advance(61.0)  # 60 s and the 250 ms lag grace are gone while it was unloaded
        with c.websocket_connect(url(game)) as ws:
            f = recv(ws)
            while f["status"] != "over":  # the flag timer fires at once
                f = recv(ws)
    assert f["end"] == {"result": "0-1", "termination": "time forfeit", "winner": "black"}
    assert f["clocks"]["white"] == 0
