"""The strength ladder on the web page: the lobby offers the levels, a game is played by the
level asked for (its record names it), a rematch keeps it, and bad levels are refused by name.

Expected values come from `caligo.agents.ladder.LEVELS` (the table docs/strength.md measured)
and from the play layer's records of the games.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from caligo.agents.ladder import LEVELS
from caligo.web import WebConfig, create_app
from tests.agents.test_obscuro import HAVE_SF
from tests.web.test_api import TEST_HOST, _client, recv, ws_url


def _post(c: Any, body: dict[str, Any]) -> Any:
    return c.post("/api/games", json=body)


def test_the_lobby_offers_the_levels(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="caligo:level=1") as c:
        info = c.get("/api/info").json()
    assert info["strength_kind"] == "level"
    assert info["strengths"] == [f"level={n}" for n in range(1, len(LEVELS) + 1)]
    assert info["default_strength"] == "level=1"  # the server's own level
    assert info["strength_labels"]["level=7"] == "7"
    assert info["strength_titles"]["level=1"] == "Level 1: random moves"
    assert info["engine_name"] == "Caligo (level 1)"
    assert "level" in info["about"] and "=" not in info["about"]


def test_a_game_at_a_level_and_its_rematch(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="caligo:level=1") as c:
        r = _post(c, {"color": "white", "tc": "none", "strength": "level=1"})
        assert r.status_code == 201, r.text
        game = r.json()
        with c.websocket_connect(ws_url(game)) as ws:
            f = recv(ws)
            assert f["opponent"] == "Caligo (level 1)"
            ws.send_text(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))
            while not (f["your_turn"] and f["ply"] == 2):  # the level answered
                f = recv(ws)
            ws.send_text('{"type": "resign"}')
            while f["status"] != "over":
                f = recv(ws)
        r = c.post(f"/api/games/{game['game']}/rematch", json={"seat": game["seat"]})
        assert r.status_code == 201, r.text
        again = r.json()
        with c.websocket_connect(ws_url(again)) as ws:
            f = recv(ws)
            assert f["color"] == "black" and f["opponent"] == "Caligo (level 1)"
            ws.send_text('{"type": "abort"}')
            while f["status"] != "over":
                f = recv(ws)
        hub = c.app.state.hub  # type: ignore[attr-defined]
        for g in (game, again):
            meta = hub.store.meta(g["game"])
            assert meta.agent == "caligo:level=1" and str(meta.strength) == "none"
        names = {g["id"]: (g["white"], g["black"]) for g in c.get("/api/games").json()}
        assert names[game["game"]] == ("Human", "Caligo (level 1)")


def test_the_server_s_default_strength(tmp_path: Path) -> None:
    """A request without a strength: 1 s a move for an engine with budgets, the ladder's own
    level for the ladder."""
    for agent, spec, strength in (("test-diag", "test-diag", "mt=1"),
                                  ("caligo:level=1", "caligo:level=1", "none"),
                                  ("caligo:seed=3,level=1", "caligo:seed=3,level=1", "none")):
        with _client(tmp_path / f"{len(spec)}.sqlite", agent=agent) as c:
            r = _post(c, {"color": "white"})
            assert r.status_code == 201, r.text
            meta = c.app.state.hub.store.meta(r.json()["game"])  # type: ignore[attr-defined]
            assert (meta.agent, str(meta.strength)) == (spec, strength)


def test_a_level_is_asked_of_the_ladder_only_and_by_its_number(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="caligo:level=1") as c:
        for bad in ("level=0", "level=8", "level=x", "level=", "level=1e3", "level=٣",
                    "level=00001"):
            r = _post(c, {"strength": bad})
            assert r.status_code == 400, (bad, r.text)
            assert repr(bad) in r.json()["error"] and "level=1 to level=7" in r.json()["error"]
        r = _post(c, {"strength": "mt=1"})  # the ladder's levels carry their own budgets
        assert r.status_code == 400 and "plays levels" in r.json()["error"]
        assert "'mt=1'" in r.json()["error"]
    with _client(tmp_path / "h.sqlite") as c:  # a random mover has no levels
        r = _post(c, {"strength": "level=2"})
        assert r.status_code == 400 and "no levels" in r.json()["error"]
        assert "level=2" in r.json()["error"]


@pytest.mark.skipif(not HAVE_SF, reason="Debian's stockfish is not installed")
def test_a_rematch_keeps_the_game_s_level_not_the_server_s(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="caligo:level=1") as c:
        r = _post(c, {"color": "white", "strength": "level=2"})
        assert r.status_code == 201, r.text
        game = r.json()
        with c.websocket_connect(ws_url(game)) as ws:
            f = recv(ws)
            assert f["opponent"] == "Caligo (level 2)"
            ws.send_text('{"type": "resign"}')
            while f["status"] != "over":
                f = recv(ws)
        r = c.post(f"/api/games/{game['game']}/rematch", json={"seat": game["seat"]})
        assert r.status_code == 201, r.text
        hub = c.app.state.hub  # type: ignore[attr-defined]
        assert hub.store.meta(r.json()["game"]).agent == "caligo:level=2"


def test_a_rematch_after_the_server_changed_engine_plays_its_default(tmp_path: Path) -> None:
    """A game of a server that played random moves, rematched after a restart with the
    ladder (and the other way round): the new game is the server's default, not a 400."""
    db = tmp_path / "g.sqlite"

    def server(agent: str, seed: int) -> TestClient:  # seeds apart: game ids apart
        config = WebConfig(db=str(db), agent=agent, seed=seed, games_per_minute=0)
        return TestClient(create_app(config, TEST_HOST))

    with server("random", 1) as c:
        game = _post(c, {"color": "white", "strength": "mt=0.05"}).json()
        with c.websocket_connect(ws_url(game)) as ws:
            recv(ws)
            ws.send_text('{"type": "resign"}')
            while recv(ws)["status"] != "over":
                pass
    with server("caligo:level=1", 2) as c:
        r = c.post(f"/api/games/{game['game']}/rematch", json={"seat": game["seat"]})
        assert r.status_code == 201, r.text
        again = r.json()
        hub = c.app.state.hub  # type: ignore[attr-defined]
        assert hub.store.meta(again["game"]).agent == "caligo:level=1"
        with c.websocket_connect(ws_url(again)) as ws:
            f = recv(ws)
            ws.send_text('{"type": "abort"}')
            while f["status"] != "over":
                f = recv(ws)
    with server("random", 3) as c:
        r = c.post(f"/api/games/{again['game']}/rematch", json={"seat": again["seat"]})
        assert r.status_code == 201, r.text
        meta = c.app.state.hub.store.meta(r.json()["game"])  # type: ignore[attr-defined]
        assert (meta.agent, str(meta.strength)) == ("random", "mt=1")
