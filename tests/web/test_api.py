"""The web app through FastAPI's TestClient: whole games over the seat WebSocket, REST, bad input.

Expected values and their sources:
- what a seat is shown: the true observation of every ply (`caligo.fow.observation.observe` on
  positions replayed from the game's PGN, read back with `caligo.fow.notation.read_pgn`);
- results and endings: the play layer's `GameSession` rules (king capture, resignation, time
  forfeit, crash), checked against the stored record and the PGN's `Result`/`Termination` tags;
- clocks: the time control's arithmetic (initial - elapsed + increment), elapsed measured here.
"""

from __future__ import annotations

import io
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import chess.svg
import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from caligo.agents.base import COLOR_NAMES, Clock, TcKind, TimeControl
from caligo.agents.belief_map import BELIEF_MAP, BELIEF_MAP_PREV
from caligo.agents.registry import AgentSpecError
from caligo.agents.timing import strength_clock
from caligo.fow.belief import BeliefSet
from caligo.fow.notation import read_pgn
from caligo.fow.observation import observe
from caligo.fow.position import BLACK, WHITE, move_to_uci, to_fen
from caligo.fow.transcript import Transcript
from caligo.fow.view import view_data
from caligo.web import WebConfig, create_app
from caligo.web.errors import WebConfigError
from caligo.web.guard import GuardConfig
from tests.agents.test_belief_map import check_picture
from tests.web.helpers import (
    CountingAgent,
    check_state_keys,
    holds_picture,
    register_test_agents,
    replay_pgn,
)

register_test_agents()

TEST_HOST = GuardConfig(allowed_hosts=("testserver",))
"""The TestClient's requests name the host `testserver`."""
JSON = {"Content-Type": "application/json"}


def _client(db: Path, agent: str = "random", **kw: Any) -> TestClient:
    """A client of the app; these tests create games faster than a person, so the per-client
    limits are off unless a test sets them (tests/web/test_admission.py tests them)."""
    kw.setdefault("games_per_minute", 0)
    kw.setdefault("games_per_client", 0)
    app = create_app(WebConfig(db=str(db), agent=agent, seed=7, **kw), TEST_HOST)
    return TestClient(app)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with _client(tmp_path / "games.sqlite") as c:
        yield c


def new_game(c: TestClient, color: str = "white", tc: str = "none", strength: str = "mt=0.05"):
    r = c.post("/api/games", json={"color": color, "tc": tc, "strength": strength})
    assert r.status_code == 201, r.text
    return r.json()


def ws_url(game: dict[str, Any]) -> str:
    return f"/ws/games/{game['game']}?seat={game['seat']}"


def recv(ws: Any) -> dict[str, Any]:
    return json.loads(ws.receive_text())


def play_out(ws: Any, rng: random.Random, frames: list[dict[str, Any]], max_moves: int = 1000):
    """Answer every own turn with a random legal move (captures first) until the game ends."""
    moves = 0
    while True:
        f = recv(ws)
        frames.append(f)
        assert f["type"] == "state", f
        if f["status"] == "over" or moves >= max_moves:
            return f
        if f["your_turn"]:
            legal = f["view"]["legal_moves"]
            pieces = f["view"]["pieces"]
            caps = [m for m in legal if m[2:4] in pieces]
            uci = rng.choice(caps) if caps else rng.choice(legal)
            ws.send_text(json.dumps({"type": "move", "uci": uci, "ply": f["ply"]}))
            moves += 1


@pytest.mark.parametrize("color", ["white", "black"])
def test_whole_game_over_the_websocket(client: TestClient, color: str) -> None:
    game = new_game(client, color)
    assert game["color"] == color
    side = WHITE if color == "white" else BLACK
    frames: list[dict[str, Any]] = []
    with client.websocket_connect(ws_url(game)) as ws:
        last = play_out(ws, random.Random(3), frames)
    assert last["end"]["termination"] == "king capture"
    pgn = client.get(f"/api/games/{game['game']}/pgn")
    assert pgn.status_code == 200
    assert "attachment" in pgn.headers["content-disposition"]
    parsed = read_pgn(pgn.text)
    assert parsed.headers["Variant"] == "Fog of War"
    assert parsed.result == last["end"]["result"]
    positions = replay_pgn(pgn.text)
    assert len(positions) - 1 == last["ply"]
    thinking = 0
    for f in frames:
        check_state_keys(f)
        truth = view_data(observe(positions[f["ply"]], side))
        assert f["view"]["pieces"] == truth["pieces"] and f["view"]["fog"] == truth["fog"]
        thinking += f["engine_thinking"]
        if f["your_turn"]:
            assert f["view"]["legal_moves"] == truth["legal_moves"]
    assert thinking > 0
    reveal = client.get(f"/api/games/{game['game']}").json()
    assert [p["uci"] for p in reveal["plies"]] == [move_to_uci(m) for m in parsed.moves]
    assert reveal["human"] == color and reveal["result"] == parsed.result
    for p, pos in zip(reveal["plies"], positions[1:], strict=True):
        for c, name in ((WHITE, "white"), (BLACK, "black")):
            assert p[name]["pieces"] == view_data(observe(pos, c))["pieces"]
    own = [m["uci"] for m in last["moves"] if m["uci"]]
    assert own == [p["uci"] for p in reveal["plies"] if p["mover"] == color]
    text = client.get(f"/api/games/{game['game']}/transcript/{color}").text
    transcript = Transcript.from_json(text)
    assert transcript.player == side
    for entry, pos in zip(transcript.entries, positions[1:], strict=True):
        assert entry.observation == observe(pos, side)
    listed = client.get("/api/games").json()
    assert [g["id"] for g in listed] == [game["game"]]
    assert listed[0]["result"] == parsed.result


def test_nothing_is_revealed_while_the_game_runs(client: TestClient) -> None:
    game = new_game(client)
    gid = game["game"]
    for path in (
        f"/api/games/{gid}",
        f"/api/games/{gid}/pgn",
        f"/api/games/{gid}/pgn/standard",
        f"/api/games/{gid}/transcript/white",
    ):
        r = client.get(path)
        assert r.status_code == 409, path
        assert "still running" in r.json()["error"]
    assert client.get("/api/games").json() == []
    assert client.get("/api/games/nope").status_code == 404
    assert client.get(f"/api/games/{gid}/transcript/green").status_code == 400


@pytest.mark.parametrize(
    ("body", "quoted"),
    [
        ({"color": "purple"}, "'purple'"),
        ({"tc": "three minutes"}, "'three minutes'"),
        ({"tc": "mt=1"}, "'mt=1'"),
        ({"strength": "180+2"}, "'180+2'"),
        ({"strength": "iters=99999999999"}, "iters=99999999999"),
        ({"tc": "99999+0"}, "99999+0"),
        ({"colour": "white"}, "'colour'"),
        ([1, 2], "[1, 2]"),
    ],
)
def test_bad_game_requests_are_refused(client: TestClient, body: Any, quoted: str) -> None:
    r = client.post("/api/games", json=body)
    assert r.status_code == 400
    assert quoted in r.json()["error"]


def test_malformed_and_oversized_request_bodies(client: TestClient) -> None:
    r = client.post("/api/games", content=b"{not json", headers=JSON)
    assert r.status_code == 400 and "{not json" in r.json()["error"]
    r = client.post("/api/games", content=b"{" + b" " * 5000 + b"}", headers=JSON)
    assert r.status_code == 413 and "too large" in r.json()["error"]
    assert new_game(client)["game"]  # and the server goes on


@pytest.mark.parametrize(
    "query", ["", "?seat=", "?seat=not-a-token", "OTHER"], ids=["none", "empty", "wrong", "other"]
)
def test_a_foreign_seat_gets_nothing(client: TestClient, query: str) -> None:
    game = new_game(client)
    other = new_game(client)
    if query == "OTHER":
        query = f"?seat={other['seat']}"
    with client.websocket_connect(f"/ws/games/{game['game']}{query}") as ws:
        first = recv(ws)
        assert first["type"] == "error" and first["code"] == "forbidden"
        assert set(first) == {"type", "code", "message"}
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
        assert closed.value.code == 4403


def test_bad_frames_get_an_error_and_change_nothing(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="test-sleepy:delay=0.4") as c:
        game = new_game(c, "white")
        with c.websocket_connect(ws_url(game)) as ws:
            before = recv(ws)
            legal = before["view"]["legal_moves"]
            bad: list[tuple[Any, str]] = [
                ("{not json", "bad_json"),
                ("[1, 2]", "bad_frame"),
                ('{"type": "castle"}', "bad_type"),
                ('{"type": "move", "uci": "e2e9"}', "bad_move"),
                ('{"type": "move", "uci": 42}', "bad_move"),
                ('{"type": "move", "uci": "e2e5"}', "illegal_move"),
                ('{"type": "move", "uci": "e7e5"}', "illegal_move"),
                (json.dumps({"type": "move", "uci": legal[0], "ply": 7}), "stale"),
                # another game's id, or any field a frame does not have: it was ignored and
                # the move played in this socket's game
                (json.dumps({"type": "move", "uci": "e2e4", "ply": 0, "game": "wdead"}),
                 "bad_frame"),
                ('{"type": "resign", "really": true}', "bad_frame"),
                (json.dumps({"type": "move", "uci": "a2a3", "pad": "x" * 5000}), "too_large"),
                (b"\x00\x01binary", "bad_frame"),
            ]
            for message, code in bad:
                if isinstance(message, bytes):
                    ws.send_bytes(message)
                else:
                    ws.send_text(message)
                err = recv(ws)
                assert err["type"] == "error" and err["code"] == code, (message, err)
                ws.send_text('{"type": "sync"}')
                assert recv(ws) == before  # nothing changed
            ws.send_text(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))
            after = recv(ws)
            assert after["ply"] == 1 and after["engine_thinking"] and not after["your_turn"]
            ws.send_text(json.dumps({"type": "move", "uci": "d2d4", "ply": 1}))
            err = recv(ws)
            assert err["code"] == "not_your_turn"
            engine = recv(ws)
            assert engine["ply"] == 2 and engine["your_turn"]
            assert [m["uci"] for m in engine["moves"]] == ["e2e4", None]
        assert new_game(c)["game"]  # the server goes on serving


def test_resign_and_abort(client: TestClient) -> None:
    game = new_game(client, "white")
    with client.websocket_connect(ws_url(game)) as ws:
        recv(ws)
        ws.send_text('{"type": "abort"}')
        end = recv(ws)
        assert end["status"] == "over" and end["end"]["result"] == "*"
        assert end["end"]["termination"] == "aborted"
        ws.send_text('{"type": "resign"}')
        assert recv(ws)["code"] == "game_over"
    game = new_game(client, "black")
    with client.websocket_connect(ws_url(game)) as ws:
        f = recv(ws)
        while not f["your_turn"]:
            f = recv(ws)
        ws.send_text(json.dumps({"type": "move", "uci": f["view"]["legal_moves"][0]}))
        while not f["your_turn"] or f["ply"] < 2:
            f = recv(ws)
        ws.send_text('{"type": "abort"}')
        assert recv(ws)["code"] == "bad_request"
        ws.send_text('{"type": "resign"}')
        end = recv(ws)
        assert end["end"] == {"result": "1-0", "termination": "resignation", "winner": "white"}
    pgn = read_pgn(client.get(f"/api/games/{game['game']}/pgn").text)
    assert pgn.headers["Termination"] == "resignation" and pgn.result == "1-0"


def test_clock_runs_with_increment(client: TestClient) -> None:
    """Each side's clock starts after its own first move (lichess's and chess.com's rule), then
    runs on its turns with the increment added after each move."""
    game = new_game(client, "white", tc="60+2")
    with client.websocket_connect(ws_url(game)) as ws:
        start = recv(ws)
        clocks = start["clocks"]
        assert clocks["running"] is None and clocks["increment_ms"] == 2000
        assert clocks["white"] == clocks["black"] == 60_000
        assert 29_000 < clocks["first_move_ms"] <= 30_000
        time.sleep(0.2)
        ws.send_text(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))
        after = recv(ws)
        assert after["clocks"]["white"] == 60_000  # the first move is free, without increment
        assert after["clocks"]["running"] is None  # and so is the engine's first move
        engine = recv(ws)
        assert engine["clocks"]["running"] == "white" and engine["clocks"]["first_move_ms"] is None
        assert engine["clocks"]["black"] == 60_000
        t0 = time.monotonic()
        time.sleep(0.3)
        ws.send_text(json.dumps({"type": "move", "uci": "d2d4", "ply": 2}))
        after = recv(ws)
        waited = (time.monotonic() - t0) * 1000
        spent = 60_000 - (after["clocks"]["white"] - 2000)
        assert 300 <= spent <= waited + 50
        assert after["clocks"]["running"] == "black"
        engine = recv(ws)
        assert engine["clocks"]["running"] == "white"
        assert 60_000 < engine["clocks"]["black"] <= 62_000  # the engine got its increment too


def test_the_flag_falls(client: TestClient) -> None:
    game = new_game(client, "white", tc="1+0")
    with client.websocket_connect(ws_url(game)) as ws:
        assert recv(ws)["status"] == "playing"
        ws.send_text(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))  # the clock starts
        assert recv(ws)["ply"] == 1
        assert recv(ws)["your_turn"]
        end = recv(ws)  # the server's flag timer ends the game; the client does nothing
        assert end["end"] == {"result": "0-1", "termination": "time forfeit", "winner": "black"}
        assert end["clocks"]["white"] == 0
        assert "flagged" in end["detail"]


@pytest.mark.parametrize("color", ["white", "black"])
def test_no_first_move_aborts_the_game(tmp_path: Path, color: str) -> None:
    """A player who never makes a first move has the game aborted (not lost on time), after
    the first-move timeout; the clocks never ran."""
    with _client(tmp_path / "g.sqlite", first_move_ms=400) as c:
        game = new_game(c, color, tc="60+0")
        with c.websocket_connect(ws_url(game)) as ws:
            f = recv(ws)
            while f["status"] == "playing":
                assert f["clocks"]["running"] is None and f["clocks"]["first_move_ms"] <= 400
                f = recv(ws)  # the engine's first move (as White), then the abort
        assert f["end"] == {"result": "*", "termination": "aborted", "winner": None}
        assert f["clocks"]["white"] == f["clocks"]["black"] == 60_000
        assert f"{color} made no first move within 400 ms" in f["detail"]
        reveal = c.get(f"/api/games/{game['game']}").json()
        assert reveal["result"] == "*" and len(reveal["plies"]) == (color == "black")


def test_an_engine_crash_loses_and_the_server_goes_on(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="test-crash:after=1") as c:
        game = new_game(c, "black")
        with c.websocket_connect(ws_url(game)) as ws:
            frames: list[dict[str, Any]] = []
            end = play_out(ws, random.Random(1), frames)
        assert end["end"]["termination"] == "engine crash" and end["end"]["winner"] == "black"
        assert "engine exploded" in end["detail"]
        assert c.get(f"/api/games/{game['game']}").json()["termination"] == "engine crash"
        assert new_game(c)["game"]


@pytest.mark.parametrize("cap", [1, 2])
def test_engine_searches_are_capped_and_queued(tmp_path: Path, cap: int) -> None:
    CountingAgent.peak = 0
    CountingAgent.clocks = []
    with _client(tmp_path / "g.sqlite", agent="test-counting", workers=f"threads:{cap}") as c:
        games = [new_game(c, "black", strength="mt=0.7") for _ in range(5)]
        for game in games:  # every engine (white) moved although five were asked at once
            with c.websocket_connect(ws_url(game)) as ws:
                f = recv(ws)
                while f["ply"] < 1:
                    f = recv(ws)
                assert f["your_turn"]
    assert 1 <= CountingAgent.peak <= cap
    assert all(
        k == Clock(TcKind.MOVETIME, movetime_ms=700, deadline_ms=k.deadline_ms)
        for k in CountingAgent.clocks
    )


def test_engine_budget_stays_inside_its_clock() -> None:
    mt = TimeControl.parse("mt=3")
    assert strength_clock(mt, Clock(TcKind.NONE)).movetime_ms == 3000
    clock = Clock(TcKind.CLOCK, remaining_ms=30_000, increment_ms=0, deadline_ms=30_000)
    assert strength_clock(mt, clock).movetime_ms == 1000  # 1/30 of the clock
    low = Clock(TcKind.CLOCK, remaining_ms=600, increment_ms=0)
    assert strength_clock(mt, low).movetime_ms == 50
    iters = strength_clock(TimeControl.parse("iters=4000"), clock)
    assert iters.kind is TcKind.ITERATIONS and iters.iterations == 4000
    assert iters.deadline_ms == 30_000


def test_diagnostics_reach_the_browser_only_after_the_game(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="test-diag") as c:
        game = new_game(c, "white")
        frames: list[dict[str, Any]] = []
        with c.websocket_connect(ws_url(game)) as ws:
            play_out(ws, random.Random(5), frames)
        wire = json.dumps(frames)
        for secret in ("DIAG-7f3a", "belief", "nodes", "0.123456", "policy"):
            assert secret not in wire
        reveal = c.get(f"/api/games/{game['game']}").json()
        engine_plies = [p for p in reveal["plies"] if p["mover"] == "black"]
        assert engine_plies and all(
            p["engine"]["info"]["secret_marker"] == "DIAG-7f3a" for p in engine_plies
        )
        assert all(p["engine"]["value"] == 0.123456 for p in engine_plies)
        positions = replay_pgn(c.get(f"/api/games/{game['game']}/pgn").text)
        named = 0
        for p, pos in zip(reveal["plies"], positions, strict=False):
            for uci, _, san in (p["engine"] or {}).get("policy", []):  # top moves, in SAN
                board, move = chess.Board(to_fen(pos)), chess.Move.from_uci(uci)
                if board.is_legal(move):  # python-chess reads the SAN as the same move
                    assert board.parse_san(san) == move
                    named += 1
        assert named > 0
        assert all(p["engine"] is None for p in reveal["plies"] if p["mover"] == "white")
        pgn = c.get(f"/api/games/{game['game']}/pgn").text
        assert "P=17264" in pgn  # per-move comments written after the game


@pytest.mark.parametrize("color", ["white", "black"])
def test_the_engine_belief_is_revealed_only_after_the_game(tmp_path: Path, color: str) -> None:
    """Obscuro (fixed iterations, built-in evaluation) pictures its P at every move. While
    the game runs, no frame and no HTTP answer holds any of it (the reveal, the PGN and the
    transcripts are refused with 409); afterwards the reveal shows, for every position the
    engine thought about, the picture of its P: equal to `caligo.fow.BeliefSet` replayed on
    the engine's transcript (positions replayed from the PGN), and holding every true piece
    of the player on its square when P was counted whole (the truth is always in P)."""
    engine = WHITE if color == "black" else BLACK
    with _client(tmp_path / "g.sqlite", agent="obscuro:budget=iters=20,eval=simple") as c:
        game = new_game(c, color)
        gid = game["game"]
        frames: list[str] = []
        answers: list[str] = []
        rng = random.Random(8)
        with c.websocket_connect(ws_url(game)) as ws:
            while True:
                text = ws.receive_text()
                frames.append(text)
                f = json.loads(text)
                if f["status"] == "over":
                    break
                if not f["your_turn"]:
                    continue
                for path in (f"/api/games/{gid}", f"/api/games/{gid}/pgn",
                             f"/api/games/{gid}/transcript/{COLOR_NAMES[engine]}"):
                    r = c.get(path)
                    assert r.status_code == 409, path  # refused while the game runs
                    answers.append(r.text)
                answers.append(c.get("/api/games").text)
                legal = f["view"]["legal_moves"]
                caps = [m for m in legal if m[2:4] in f["view"]["pieces"]]
                uci = rng.choice(caps if caps and rng.random() < 0.5 else legal)
                ws.send_text(json.dumps({"type": "move", "uci": uci, "ply": f["ply"]}))
        for text in frames[:-1]:
            assert not holds_picture(text), text[:200]
        for text in answers:
            assert not holds_picture(text, frame=False), text[:200]
        reveal = c.get(f"/api/games/{gid}").json()
        positions = replay_pgn(c.get(f"/api/games/{gid}/pgn").text)
    n = len(reveal["plies"])
    assert n == len(positions) - 1 >= 6
    pictures = [reveal["initial"]["beliefs"]] + [p["beliefs"] for p in reveal["plies"]]
    ref = BeliefSet.initial(engine)
    shown = whole = 0
    for i, pos in enumerate(positions):
        about = pictures[i]
        assert set(about) <= {COLOR_NAMES[engine]}  # only the engine's belief, never the human's
        # the engine thought about every position after its first chance: as the side to move
        # (its decision) or while the player moved (after its own move); not after the end
        thought = i < n - 1 or (i == n - 1 and positions[i][12] == engine)
        if (i >= 1 or engine == WHITE) and thought:
            assert about, i
        if about:
            picture = about[COLOR_NAMES[engine]]
            exact = check_picture(picture, ref)
            whole += exact
            shown += 1
            if exact:
                board = chess.Board(to_fen(pos))
                for sq, piece in board.piece_map().items():
                    if piece.color == (engine == BLACK):  # the player's pieces
                        letter = "pnbrqk"[piece.piece_type - 1]
                        assert picture["counts"][letter][chess.square_name(sq)] > 0
        if i < n:
            pos_next = positions[i + 1]
            mover = int(pos[12])
            move = reveal["plies"][i]["uci"]
            obs = observe(pos_next, engine)
            ref = (ref.update_own_move(move, obs) if mover == engine
                   else ref.update_opponent_move(obs))
    assert shown >= n - 2 and whole >= 1
    for p in reveal["plies"]:  # the pictures are out of the analysis' raw keys
        assert not set((p["engine"] or {}).get("info", {})) & {BELIEF_MAP, BELIEF_MAP_PREV}


def test_rematch_same_settings_colours_swapped(client: TestClient) -> None:
    game = new_game(client, "white", tc="180+2", strength="mt=0.05")
    body = {"seat": game["seat"]}
    r = client.post(f"/api/games/{game['game']}/rematch", json=body)
    assert r.status_code == 409 and "still running" in r.json()["error"]
    with client.websocket_connect(ws_url(game)) as ws:
        recv(ws)
        ws.send_text('{"type": "resign"}')
        assert recv(ws)["status"] == "over"
    for bad, status in (
        ({"seat": "not-a-token"}, 403),
        ({"seat": 42}, 403),
        ({"seat": game["seat"], "x": 1}, 400),
        ([game["seat"]], 400),
    ):
        r = client.post(f"/api/games/{game['game']}/rematch", json=bad)
        assert r.status_code == status, (bad, r.text)
    r = client.post(
        f"/api/games/{game['game']}/rematch", content=b"{" + b" " * 5000 + b"}", headers=JSON
    )
    assert r.status_code == 413 and "too large" in r.json()["error"]
    other = new_game(client, "black")  # a seat of another game holds no seat in this one
    r = client.post(f"/api/games/{game['game']}/rematch", json={"seat": other["seat"]})
    assert r.status_code == 403
    r = client.post(f"/api/games/{game['game']}/rematch", json=body)
    assert r.status_code == 201, r.text
    again = r.json()
    assert again["color"] == "black" and again["game"] != game["game"]
    with client.websocket_connect(ws_url(again)) as ws:
        f = recv(ws)
        assert f["color"] == "black" and f["tc"] == "180+2"
        assert f["opponent"] == "Caligo (random moves)"
        ws.send_text('{"type": "abort"}')
        while f["status"] != "over":
            f = recv(ws)
    names = {g["id"]: (g["white"], g["black"]) for g in client.get("/api/games").json()}
    assert names[again["game"]] == ("Caligo (random moves)", "Human")
    assert names[game["game"]] == ("Human", "Caligo (random moves)")


def test_standard_pgn_reads_in_python_chess(client: TestClient) -> None:
    """The second PGN: python-chess reads every move in it without an error, and they are the
    game's moves up to the first one python-chess's rules refuse (the reveal says which)."""
    game = new_game(client, "white")
    frames: list[dict[str, Any]] = []
    with client.websocket_connect(ws_url(game)) as ws:
        play_out(ws, random.Random(3), frames)
    gid = game["game"]
    reveal = client.get(f"/api/games/{gid}").json()
    moves = [p["uci"] for p in reveal["plies"]]
    r = client.get(f"/api/games/{gid}/pgn/standard")
    assert r.status_code == 200 and "standard.pgn" in r.headers["content-disposition"]
    std = chess.pgn.read_game(io.StringIO(r.text))
    assert std is not None and std.errors == []
    written = [m.uci() for m in std.mainline_moves()]
    assert written == moves[: len(written)] and len(written) == reveal["standard"]["plies"]
    board = std.end().board()
    if len(written) < len(moves):
        assert not board.is_legal(chess.Move.from_uci(moves[len(written)]))
        assert reveal["standard"]["first"] in std.headers["FogOfWar"]
    assert std.headers["Result"] == reveal["result"]
    assert client.get("/api/games/nope/pgn/standard").status_code == 404


def test_a_game_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    rng = random.Random(11)
    with _client(db) as c:
        game = new_game(c, "white", tc="300+0")
        with c.websocket_connect(ws_url(game)) as ws:
            f = recv(ws)
            for _ in range(3):
                uci = rng.choice(f["view"]["legal_moves"])
                ws.send_text(json.dumps({"type": "move", "uci": uci, "ply": f["ply"]}))
                recv(ws)
                f = recv(ws)
            before = f
    with _client(db) as c:  # a new server process on the same database
        with c.websocket_connect(ws_url(game)) as ws:
            resumed = recv(ws)
            for key in ("ply", "view", "moves", "material", "your_turn", "status"):
                assert resumed[key] == before[key], key
            assert abs(resumed["clocks"]["white"] - before["clocks"]["white"]) < 1000
            frames: list[dict[str, Any]] = [resumed]
            last = play_out_from(ws, rng, resumed, frames)
        assert last["status"] == "over"
        reveal = c.get(f"/api/games/{game['game']}").json()
        assert len(reveal["plies"]) == last["ply"]


def play_out_from(ws: Any, rng: random.Random, f: dict[str, Any], frames: list[dict[str, Any]]):
    """`play_out` when the current frame was already received."""
    if f["status"] == "over":
        return f
    if f["your_turn"]:
        uci = rng.choice(f["view"]["legal_moves"])
        ws.send_text(json.dumps({"type": "move", "uci": uci, "ply": f["ply"]}))
    return play_out(ws, rng, frames)


def test_page_and_pieces(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "/static/board.js" in page.text
    for asset in ("board.js", "app.js", "style.css"):
        assert client.get(f"/static/{asset}").status_code == 200
    svg = client.get("/pieces/wN.svg")
    assert svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.text == chess.svg.piece(chess.Piece.from_symbol("N"), size=45)
    assert client.get("/pieces/bX.svg").status_code == 404
    info = client.get("/api/info").json()
    assert info["engine"] == "random"
    assert {"label": "3+2", "tc": "180+2"} in info["time_controls"]
    # what the lobby shows a player: no strength for a random mover, no option syntax
    assert info["strengths"] == [] and info["engine_name"] == "Caligo (random moves)"
    assert "random legal moves" in info["about"] and "=" not in info["about"]


def test_lobby_info_of_an_engine_with_strengths(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", agent="test-diag") as c:
        info = c.get("/api/info").json()
    assert info["strengths"] == ["mt=0.2", "mt=1", "mt=3", "iters=1000", "iters=4000"]
    assert info["strength_labels"]["iters=4000"] == "4,000 search steps"
    assert info["strength_labels"]["mt=0.2"] == "0.2 s per move"
    assert info["engine_name"] == "Caligo (test-diag, 1 s per move)"


def test_idle_games_are_unloaded_and_resume(tmp_path: Path) -> None:
    with _client(tmp_path / "g.sqlite", max_live_games=2) as c:
        first = new_game(c, "white")
        with c.websocket_connect(ws_url(first)) as ws:
            recv(ws)
            ws.send_text(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))
            recv(ws)
            before = recv(ws)
        second = new_game(c, "white")
        with c.websocket_connect(ws_url(second)) as ws:
            recv(ws)
            third = new_game(c, "white")  # the first game, idle, makes room
            with c.websocket_connect(ws_url(third)) as ws3:
                recv(ws3)
                r = c.post("/api/games", json={"color": "white"})
                assert r.status_code == 503 and "try again" in r.json()["error"]
        with c.websocket_connect(ws_url(first)) as ws:  # resumed from the store
            resumed = recv(ws)
            assert resumed["ply"] == before["ply"] == 2 and resumed["view"] == before["view"]
            ws.send_text(json.dumps({"type": "move", "uci": "d2d4", "ply": 2}))
            assert recv(ws)["ply"] == 3
            assert recv(ws)["ply"] == 4  # the engine of the resumed game moves


def test_invalid_server_settings_are_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "g.sqlite")
    with pytest.raises(WebConfigError, match="invalid workers 'threads:0'"):
        WebConfig(db=db, agent="random", workers="threads:0")
    with pytest.raises(AgentSpecError, match="'bad agent'"):
        WebConfig(db=db, agent="bad agent")
