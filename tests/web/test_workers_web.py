"""The web app's engines live in a fixed pool of worker processes (`caligo.play.workers`).

Checked against the process table (/proc): twenty games created and left idle hold no
process of their own (the processes below the server are the workers and their Stockfish
engines, whatever the number of games); a worker killed between two moves is replaced and its
game goes on (the new worker replays the game's transcript).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from caligo.agents.obscuro import ObscuroConfig, stockfish_available
from caligo.web import WebConfig, create_app
from tests.play.test_workers import _descendants
from tests.web.test_api import TEST_HOST

needs_sf = pytest.mark.skipif(not stockfish_available(),
                              reason="Debian's stockfish is not installed")


def _new(c: TestClient, color: str) -> dict[str, str]:
    r = c.post("/api/games", json={"color": color, "tc": "none", "strength": "iters=30"})
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


def _state(ws, until_ply: int) -> dict:  # type: ignore[no-untyped-def, type-arg]
    while True:
        f = ws.receive_json()
        assert f["type"] == "state", f
        if f["ply"] >= until_ply or f["status"] == "over":
            return f  # type: ignore[no-any-return]


@needs_sf
def test_idle_games_hold_no_engine_process(tmp_path: Path) -> None:
    app = create_app(WebConfig(db=str(tmp_path / "g.sqlite"), agent="obscuro", seed=3,
                               workers="processes:2", max_live_games=50,
                               games_per_minute=0, games_per_client=0), TEST_HOST)
    with TestClient(app) as c:
        games = [_new(c, ("white", "black")[i % 2]) for i in range(20)]
        for g in games[1::2]:  # the engine moved first in the games where the human is Black
            with c.websocket_connect(f"/ws/games/{g['game']}?seat={g['seat']}") as ws:
                assert _state(ws, 1)["ply"] >= 1
        workers = app.state.hub.workers.pids()
        below = [name for w in workers for _, name in _descendants(w)]
        assert len(workers) == 2 and set(workers) <= {p for p, _ in _descendants(os.getpid())}
        assert below and all(n.startswith("stockfish") for n in below), below
        # Obscuro's slots a worker (two: its calls outside the search spread over both), 20
        # games or not
        assert len(below) <= 2 * ObscuroConfig().slots, below
        assert c.get("/").status_code == 200  # and the server serves


def test_a_killed_worker_is_replaced_and_its_game_goes_on(tmp_path: Path) -> None:
    app = create_app(WebConfig(db=str(tmp_path / "g.sqlite"),
                               agent="obscuro:eval=simple", seed=5, workers="processes:1"),
                     TEST_HOST)
    with TestClient(app) as c:
        g = _new(c, "black")
        with c.websocket_connect(f"/ws/games/{g['game']}?seat={g['seat']}") as ws:
            f = _state(ws, 1)
            assert f["your_turn"]
            (pid,) = app.state.hub.workers.pids()
            os.kill(pid, signal.SIGKILL)
            ws.send_json({"type": "move", "uci": f["view"]["legal_moves"][0], "ply": f["ply"]})
            f = _state(ws, 3)
            assert f["status"] != "over" or "crash" not in f.get("detail", ""), f
            assert f["ply"] >= 3  # the engine answered on a new worker
        stats = app.state.hub.workers.stats()
        assert stats.replaced == 1 and app.state.hub.workers.pids()[0] != pid
