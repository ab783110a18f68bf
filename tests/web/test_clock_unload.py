"""The clock across an unload and a restart: time a player spent stays spent.

Before, a player could reset their own clock in a timed game by disconnecting and getting the
game unloaded (other players' new games make room), then reconnecting: 47.9 s left became
60.0 s. Now the unload stores the running turn's elapsed time and the resume charges it, plus
the time since the unload while the same server ran; a restart's downtime stays free. A game
nobody comes back to still ends on time: the hub wakes it when its mover's time runs out.

Every clock here is injected (`create_app(..., now=clock)`, the sessions' `now`), never wall
time. Expected values: the time control's arithmetic, initial time minus the seconds the test
advanced the clock on the player's turn (the first move is free: lichess's and chess.com's
rule, docs/web.md), and 30 s for a first move (`WebConfig.first_move_ms`).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from caligo.web import WebConfig, create_app
from caligo.web.guard import GuardConfig
from caligo.web.hub import GameHub

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


def started(c: TestClient) -> None:
    """Wait for what the server starts in the background (`GameHub.wake_stored`)."""
    hub = c.app.state.hub  # type: ignore[attr-defined]

    async def settle() -> None:
        await asyncio.gather(*list(hub._tasks))

    c.portal.call(settle)  # type: ignore[union-attr]


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
    """The time each player spent before the stop stays spent, the downtime is free, and the
    clocks run again from the new start (else a game nobody comes back to never ends)."""
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
    with client(db, second) as c:  # the downtime was free; from this start the clocks run
        started(c)
        second.advance(2.0)  # the players come back 2 s after the server did
        assert clocks_now(c, unloaded)["white"] == 60_000 - 12_100 - 3_000 - 7_000 - 2_000
        assert clocks_now(c, running)["white"] == 60_000 - 7_000 - 2_000


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
            f = recv(ws)  # the first frame: it said "playing" with White's clock at 0 before
    assert f["status"] == "over"
    assert f["end"] == {"result": "0-1", "termination": "time forfeit", "winner": "black"}
    assert f["clocks"]["white"] == 0


class Wakes:
    """`GameHub.call_later` recorded instead of scheduled: the test runs a wake when it likes."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, Any]] = []

    def __call__(self, delay_s: float, callback: Any) -> Any:
        self.calls.append((delay_s, callback))
        return asyncio.get_running_loop().call_later(3600.0, lambda: None)  # cancellable

    def run(self, c: TestClient, game: dict[str, str], index: int = -1) -> None:
        """Fire wake `index` on the app's loop and wait until the game it brings back is over
        (its flag timer, armed at resume, fires on the loop)."""
        hub = c.app.state.hub  # type: ignore[attr-defined]

        async def fire() -> None:
            self.calls[index][1]()
            await asyncio.gather(*list(hub._tasks))
            for _ in range(1000):  # a bound for a broken flag, not a measurement
                if game["game"] not in hub.live:
                    return
                await asyncio.sleep(0.01)

        c.portal.call(fire)  # type: ignore[union-attr]


def status(c: TestClient, game: dict[str, str]) -> dict[str, Any]:
    """The game's row in the list of finished games (KeyError while it runs)."""
    rows = {g["id"]: g for g in c.get("/api/games").json()}
    return rows[game["game"]]  # type: ignore[no-any-return]


def test_an_unloaded_game_whose_time_runs_out_ends_unwatched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The player closed the page on their own move and the game was unloaded: it used to stay
    "running" until its seat came back. The unload schedules a wake at the mover's time (60 s
    and the 250 ms lag grace, plus 20 ms), which flags it with nobody connected."""
    wakes = Wakes()
    monkeypatch.setattr(GameHub, "call_later", lambda hub, delay, callback: wakes(delay, callback))
    clock = FakeClock(1000.0)
    with client(tmp_path / "g.sqlite", clock) as c:
        game = new_game(c)
        to_own_clocked_turn(c, game)
        clock.advance(12.0)
        new_game(c, tc="none")  # unloads it
        assert [round(d, 3) for d, _ in wakes.calls] == [round(60.27 - 12.0, 3)]
        clock.advance(48.3)
        hub = c.app.state.hub  # type: ignore[attr-defined]
        jobs: list[Any] = []
        submit = hub.workers.submit

        async def recorded(job: Any, limit_s: float) -> Any:
            jobs.append(job)
            return await submit(job, limit_s)

        monkeypatch.setattr(hub.workers, "submit", recorded)
        wakes.run(c, game)
        for _ in range(1000):  # the goodbye goes out after the game is over
            if jobs:
                break
            c.portal.call(asyncio.sleep, 0.01)  # type: ignore[union-attr]
        # only `gameover`: a new engine replaying the whole game just to hear it, before
        assert [type(m).__name__ for j in jobs for m in j.messages] == ["GameOver"]
        row = status(c, game)
        assert (row["result"], row["termination"]) == ("0-1", "time forfeit")
        assert c.get(f"/api/games/{game['game']}").status_code == 200  # no longer "running"


def test_a_game_left_running_by_a_stopped_server_ends_on_time_after_the_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a restart nobody reconnects: the new server wakes the game when the time its
    mover had left at the stop has run out from the new start."""
    wakes = Wakes()
    monkeypatch.setattr(GameHub, "call_later", lambda hub, delay, callback: wakes(delay, callback))
    db = tmp_path / "g.sqlite"
    first = FakeClock(1000.0)
    with client(db, first) as c:
        game = new_game(c)
        to_own_clocked_turn(c, game)
        first.advance(20.0)
    second = FakeClock(5.0)
    with client(db, second) as c:
        started(c)
        assert [round(d, 3) for d, _ in wakes.calls[-1:]] == [round(60.27 - 20.0, 3)]
        second.advance(40.3)
        wakes.run(c, game)
        row = status(c, game)
        assert (row["result"], row["termination"]) == ("0-1", "time forfeit")


def test_a_game_stopped_on_the_engine_s_turn_resumes_at_once_without_charging_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stopped while the engine thought its first move (a slow test engine): the restart
    brings it back at once (a wake of 0 s) and the engine moves. Its time did not run while
    nobody drove it: 100 s after the restart, past its first-move window (60 s), it was
    aborted before."""
    from tests.web.helpers import register_test_agents

    register_test_agents()
    wakes = Wakes()
    monkeypatch.setattr(GameHub, "call_later", lambda hub, delay, callback: wakes(delay, callback))
    db = tmp_path / "g.sqlite"
    config = WebConfig(db=str(db), agent="test-sleepy:delay=1", seed=5, games_per_minute=0,
                       games_per_client=0)
    with TestClient(create_app(config, TEST_HOST, now=FakeClock(1000.0))) as c:
        game = new_game(c, color="black")  # the engine, White, thinks; the server stops
    second = FakeClock(5.0)
    with TestClient(create_app(config, TEST_HOST, now=second)) as c:
        hub = c.app.state.hub  # type: ignore[attr-defined]

        started(c)
        assert wakes.calls[-1][0] == 0.0  # (the stop cancelled the first server's own wakes)
        second.advance(100.0)

        async def fire() -> None:
            wakes.calls[-1][1]()
            await asyncio.gather(*list(hub._tasks))

        c.portal.call(fire)  # type: ignore[union-attr]
        with c.websocket_connect(url(game)) as ws:
            f = recv(ws)
            while not f["your_turn"]:
                f = recv(ws)
    assert f["status"] == "playing" and f["ply"] == 1
    assert f["clocks"]["white"] == 60_000  # the first move is free, and it came in time


def test_a_damaged_stored_game_neither_stops_the_restart_nor_the_other_games(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """One running game whose stored plies no longer replay (a move edited to e2e5): the
    restart logs it and still wakes the others; it stopped the server's start before."""
    wakes = Wakes()
    monkeypatch.setattr(GameHub, "call_later", lambda hub, delay, callback: wakes(delay, callback))
    db = tmp_path / "g.sqlite"
    first = FakeClock(1000.0)
    config = WebConfig(db=str(db), agent="random", seed=5, games_per_minute=0,
                       games_per_client=0)
    with TestClient(create_app(config, TEST_HOST, now=first)) as c:
        damaged, sound = new_game(c), new_game(c)
        for game in (damaged, sound):
            to_own_clocked_turn(c, game)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE plies SET move_uci = 'e2e5' WHERE game_id = ? AND ply = 1",
                    (damaged["game"],))
    with TestClient(create_app(config, TEST_HOST, now=FakeClock(5.0))) as c:
        started(c)
        assert c.get("/api/info").status_code == 200  # the server serves
    assert len(wakes.calls) - 2 == 1  # the sound game's (after the first server's two)
    assert any(damaged["game"] in r.getMessage() for r in caplog.records)
