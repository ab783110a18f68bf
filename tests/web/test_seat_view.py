"""The frames a browser seat is shown: functions of that seat's transcript only, and correct.

Expected values and their sources:
- SAN of own moves: python-chess `Board.san` (check marks stripped) wherever chess and FoW give
  the same disambiguation; `caligo.fow.notation.move_to_san` on the TRUE position otherwise
  (itself tested against python-chess in tests/fow/test_notation.py);
- material: the true captures recorded by `caligo.fow.game.Game.captures` (the referee's record,
  which the seat never sees);
- leaks: two different true histories with the same transcript for the seat (built by swapping
  an opponent move for another the seat observes identically) must give identical frames; every
  piece and fog square in a frame equals the seat's true observation (`observe` on the truth).
"""

from __future__ import annotations

import json

import chess
import pytest

from caligo.agents.base import Decision, TimeControl
from caligo.fow.game import Game
from caligo.fow.notation import move_to_san
from caligo.fow.observation import observe
from caligo.fow.position import BLACK, KING, WHITE, move_from_uci, move_to_uci
from caligo.fow.view import view_data
from caligo.play.session import GameSession, SessionConfig
from caligo.web.live import LiveGame
from caligo.web.seat_view import SeatTracker, own_san
from caligo.web.store import WebGameMeta
from tests.web.helpers import (
    check_state_keys,
    holds_picture,
    random_game,
    truth_pictures,
    twin_history,
)

SEEDS = range(12)


def _frames(moves: list[str], color: int, decisions: bool = False) -> list[dict]:
    """Play `moves` in a session; return `color`'s frame after every ply (fed incrementally)."""
    session = GameSession(SessionConfig("g-test"))
    tracker = SeatTracker()
    tracker.feed(session.project(color, tracker.synced_ply))
    frames = [tracker.state_frame()]
    for uci in moves:
        mover = session.to_move
        assert mover is not None
        legal = {m: m for m in session.legal(mover)}
        move = next(m for m in legal if move_to_uci(m) == uci)
        decision = None
        if decisions:
            info = {"belief": 99, "marker": "X", **truth_pictures(session, mover)}
            decision = Decision(move, {move: 1.0}, value=0.123457, info=info)
        session.play(mover, move, 1.0, decision)
        tracker.feed(session.project(color, tracker.synced_ply))
        frames.append(tracker.state_frame())
    return frames


@pytest.mark.parametrize("color", [WHITE, BLACK])
def test_frames_equal_for_two_true_histories_with_one_transcript(color: int) -> None:
    found = 0
    for seed in range(60):
        moves = random_game(seed, max_plies=40)
        twin = twin_history(moves, color)
        if twin is None:
            continue
        assert twin != moves
        assert _frames(moves, color) == _frames(twin, color)
        found += 1
        if found == 3:
            break
    assert found == 3, "too few games with a twin history"


class _Clock:
    def __init__(self) -> None:
        self.t = 50.0

    def __call__(self) -> float:
        return self.t


def _live_frames(moves: list[str], human: int, pictures: list | None = None) -> list[dict]:
    """The web app's whole frames (`LiveGame.frame`: the seat's frame plus the public clocks,
    with the first-move fields) after every ply, each ply taking 1.5 s on a fake clock. Every
    move's analysis holds belief pictures of the true position (`truth_pictures`), appended to
    `pictures` when given."""
    now = _Clock()
    tc = TimeControl.parse("60+1")
    config = SessionConfig(
        "g-live", time_controls=(tc, tc), names=("A", "B"), first_move_timeout_ms=(30_000, 30_000)
    )
    session = GameSession(config, now=now)
    meta = WebGameMeta("g-live", human, "random", TimeControl.parse("mt=1"))
    live = LiveGame(None, session, meta)  # type: ignore[arg-type]
    frames = [live.frame()]
    for uci in moves:
        now.t += 1.5
        mover = session.to_move
        assert mover is not None
        move = next(m for m in session.legal(mover) if move_to_uci(m) == uci)
        info = {"belief": 7, "marker": "SECRET", **truth_pictures(session, mover)}
        if pictures is not None:
            pictures.append(info)
        decision = Decision(move, {move: 1.0}, value=0.5, info=info)
        session.play(mover, move, decision=decision)
        frames.append(live.frame())
    return frames


@pytest.mark.parametrize("color", [WHITE, BLACK])
def test_live_frames_with_clocks_equal_for_two_true_histories(color: int) -> None:
    """The fields the web adds to a seat's frame (both clocks, whose clock runs, the time left
    for a first move) are the same for two true histories the seat cannot tell apart, and hold
    nothing of the engine's analysis: not even its belief pictures, which differ between the
    two histories (they show the true pieces)."""
    found = 0
    for seed in range(60):
        moves = random_game(seed, max_plies=30)
        twin = twin_history(moves, color)
        if twin is None:
            continue
        infos: list = []
        twin_infos: list = []
        frames = _live_frames(moves, color, infos)
        assert frames == _live_frames(twin, color, twin_infos)
        assert infos != twin_infos  # the pictures differ; the frames do not
        for frame in frames:
            check_state_keys(frame)
            text = json.dumps(frame)
            assert "SECRET" not in text and not holds_picture(text)
        first = frames[0]["clocks"]
        assert first["running"] is None and first["first_move_ms"] == 30_000
        found += 1
        if found == 2:
            break
    assert found == 2, "too few games with a twin history"


@pytest.mark.parametrize("seed", SEEDS)
def test_frames_show_exactly_the_true_observation(seed: int) -> None:
    moves = random_game(seed)
    game = Game()
    positions = [game.position]
    for uci in moves:
        game.push_uci(uci)
        positions.append(game.position)
    for color in (WHITE, BLACK):
        frames = _frames(moves, color, decisions=True)
        for ply, frame in enumerate(frames):
            check_state_keys(frame)
            truth = view_data(observe(positions[ply], color))
            assert frame["view"]["pieces"] == truth["pieces"]
            assert frame["view"]["fog"] == truth["fog"]
            assert frame["ply"] == ply
            text = repr(frame)
            assert "marker" not in text and "belief" not in text and "0.123457" not in text
            assert not holds_picture(json.dumps(frame))
            own = [m["uci"] for m in frame["moves"] if m["uci"] is not None]
            mover_plies = [i for i in range(ply) if (i % 2 == 0) == (color == WHITE)]
            assert own == [moves[i] for i in mover_plies]  # own moves, never the opponent's


def _chess_san(board: chess.Board, uci: str) -> str | None:
    move = chess.Move.from_uci(uci)
    if not board.is_legal(move):
        return None
    piece = board.piece_type_at(move.from_square)
    pseudo = {
        m.from_square
        for m in board.pseudo_legal_moves
        if m.to_square == move.to_square and board.piece_type_at(m.from_square) == piece
    }
    legal = {
        m.from_square
        for m in board.legal_moves
        if m.to_square == move.to_square and board.piece_type_at(m.from_square) == piece
    }
    if pseudo != legal:
        return None  # a pinned rival: FoW disambiguates where chess does not
    return board.san(move).rstrip("+#")


@pytest.mark.parametrize("seed", SEEDS)
def test_own_san_against_python_chess(seed: int) -> None:
    moves = random_game(seed)
    game = Game()
    board = chess.Board()
    compared = 0
    for uci in moves:
        pos = game.position
        mover = game.turn
        if (pos[KING] == 0) or (pos[6 + KING] == 0):
            break
        got = own_san(observe(pos, mover), uci)
        expected = None if board.king(not board.turn) is None else _chess_san(board, uci)
        if expected is None:
            expected = move_to_san(pos, move_from_uci(pos, uci))
        else:
            compared += 1
        assert got == expected, (uci, board.fen())
        game.push_uci(uci)
        try:
            board.push(chess.Move.from_uci(uci))
        except (ValueError, AssertionError):
            break
    assert compared > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_material_tally_equals_the_true_captures(seed: int) -> None:
    moves = random_game(seed)
    game = Game()
    for uci in moves:
        game.push_uci(uci)
    captures = game.captures
    for color in (WHITE, BLACK):
        frame = _frames(moves, color)[-1]
        taken: list[str] = []
        lost: list[str] = []
        for ply, code in enumerate(captures):
            if code < 0 or code % 6 == KING:
                continue
            own_ply = (ply % 2 == 0) == (color == WHITE)
            (taken if own_ply else lost).append("pnbrqk"[code % 6])
        assert sorted(frame["material"]["captured"]) == sorted(taken)
        assert sorted(frame["material"]["lost"]) == sorted(lost)
        values = {"p": 1, "n": 3, "b": 3, "r": 5, "q": 9}
        balance = sum(values[p] for p in taken) - sum(values[p] for p in lost)
        assert frame["material"]["balance"] == balance


def test_lost_square_hint_and_san_of_a_scripted_game() -> None:
    # 1.e4 d5 2.a3 dxe4: White's e4 pawn is captured on e4 (tests/fow/test_view.py's game).
    frames = _frames(["e2e4", "d7d5", "a2a3", "d5e4"], WHITE)
    last = frames[-1]
    assert last["view"]["hints"]["lost"] == ["e4"]
    assert last["view"]["hints"]["own_last_move"] == "a2a3"
    assert last["material"] == {"captured": [], "lost": ["p"], "balance": -1}
    assert [m["san"] for m in last["moves"]] == ["e4", None, "a3", None]
    assert last["your_turn"] and last["view"]["legal_moves"]
    black = _frames(["e2e4", "d7d5", "e4d5"], BLACK)[-1]
    assert black["material"]["lost"] == ["p"] and black["view"]["hints"]["lost"] == ["d5"]


def test_no_legal_moves_once_the_game_is_over() -> None:
    session = GameSession(SessionConfig("g-over"))
    tracker = SeatTracker()
    session.resign(WHITE)
    tracker.feed(session.project(WHITE, -1))
    frame = tracker.state_frame()
    assert frame["status"] == "over" and not frame["your_turn"]
    assert frame["view"]["legal_moves"] == []
    assert frame["end"] == {"result": "0-1", "termination": "resignation", "winner": "black"}
