"""Game record: king capture, threefold repetition, 50-move rule, no-move draw, PGN.

Expected outcomes are written by hand from the rules in Obscuro, appendix A (capture the king;
repetition and 50-move draws need no claim) and the no-move decision in docs/fow.md (a draw, as
OpenSpiel `dark_chess` and Fairy-Stockfish's `fogofwar` score it).
"""

from __future__ import annotations

import random

import chess
import pytest

from caligo.fow.errors import GameOverError, MoveError
from caligo.fow.game import Game, Termination
from caligo.fow.position import BLACK, WHITE, move_to_uci
from tests.conftest import SHORT


def test_king_capture_wins() -> None:
    g = Game()
    for san in ("e4", "f5", "Qh5", "g6", "Qxg6", "hxg6"):
        assert g.push_san(san) is None
    g = Game()
    for san in ("e4", "f6", "Qh5", "a6"):
        g.push_san(san)
    out = g.push_san("Qxe8")
    assert out is not None and out.termination is Termination.KING_CAPTURE
    assert out.winner == WHITE and g.result == "1-0" and g.is_over()
    assert g.legal_moves() == []
    with pytest.raises(GameOverError):
        g.push_san("a6")
    with pytest.raises(GameOverError):
        g.push_uci("a2a3")
    assert '[Termination "king capture"]' in g.to_pgn()


def test_black_wins_by_capture_and_moving_into_check_is_allowed() -> None:
    g = Game()
    for san in ("f3", "e5", "Kf2", "Qh4"):
        g.push_san(san)
    g.push_san("Kg3")  # steps next to the queen's line: legal in FoW
    out = g.push_san("Qxg3")
    assert out is not None and out.winner == BLACK and g.result == "0-1"


def test_threefold_repetition_draws() -> None:
    g = Game()
    shuffle = ["Nf3", "Nf6", "Ng1", "Ng8"]
    for san in shuffle + shuffle[:3]:
        assert g.push_san(san) is None
    assert g.repetitions() == 2
    out = g.push_san("Ng8")  # the start position for the third time
    assert out is not None and out.termination is Termination.THREEFOLD_REPETITION
    assert g.result == "1/2-1/2" and out.winner is None
    g.pop()
    assert not g.is_over() and g.repetitions() == 2


def test_fifty_move_rule_draws_after_100_quiet_plies() -> None:
    g = Game("4k3/8/8/8/8/8/8/R3K3 w - - 98 80")
    assert g.push_uci("a1a2") is None  # 99 plies
    out = g.push_uci("e8d8")  # the 100th ply without a pawn move or capture
    assert out is not None and out.termination is Termination.FIFTY_MOVES


def test_capture_resets_the_fifty_move_count() -> None:
    g = Game("4k3/8/8/8/8/8/r7/R3K3 w - - 99 80")
    assert g.push_uci("a1a2") is None  # capture: the clock is 0 again


def test_side_without_moves_draws() -> None:
    g = Game("KBBBBBBB/PPPPPPPP/8/8/8/8/8/7k w - - 0 1")
    assert g.is_over() and g.outcome is not None
    assert g.outcome.termination is Termination.NO_MOVES and g.result == "1/2-1/2"


def test_illegal_move_raises() -> None:
    g = Game()
    with pytest.raises(MoveError) as info:
        g.push_uci("e2e5")
    assert "'e2e5'" in str(info.value)
    with pytest.raises(MoveError):
        g.push(0)
    with pytest.raises(MoveError):
        g.pop()


def test_pgn_round_trip_of_random_games() -> None:
    rng = random.Random(11)
    n_games = 10 if SHORT else 30
    results = set()
    for _ in range(n_games):
        g = Game()
        while not g.is_over() and g.ply < 400:
            g.push(rng.choice(g.legal_moves()))
        results.add(g.result)
        h = Game.from_pgn(g.to_pgn({"Event": "random"}))
        assert h.moves == g.moves and h.result == g.result and h.fen() == g.fen()
        assert [move_to_uci(m) for m in h.moves] == [move_to_uci(m) for m in g.moves]
        assert len(g.positions) == g.ply + 1 and len(g.captures) == g.ply
    assert results & {"1-0", "0-1"}


def test_dead_en_passant_square_does_not_split_repetitions() -> None:
    # issue 11: after 1.e4 no black pawn can capture on e3, so the position after 1.e4 is the
    # one after 5.Ng1 and 9.Ng1 (FIDE 9.2.2: the same possible moves); python-chess agrees.
    sans = ["e4", "Nf6", "Nf3", "Ng8", "Ng1", "Nf6", "Nf3", "Ng8", "Ng1"]
    board = chess.Board()
    g = Game()
    for ply, san in enumerate(sans, start=1):
        board.push_san(san)
        out = g.push_san(san)
        assert board.is_repetition(3) == (ply == 9)
        assert (out is not None) == (ply == 9)
    assert g.outcome is not None and g.outcome.termination is Termination.THREEFOLD_REPETITION
    # a live en-passant square does count: the position after ...d5 with a white pawn on e5
    g = Game("4k3/3p4/8/4P3/8/8/8/4K1N1 b - - 0 1")
    first = g.push_san("d5")
    assert first is None and g.repetitions() == 1
    for san in ("Nf3", "Ke7", "Ng1", "Ke8", "Nf3", "Ke7", "Ng1", "Ke8"):
        g.push_san(san)
    assert g.repetitions() == 2  # e.p. gone: not the position after ...d5, twice otherwise


_REPETITION_FENS = (
    "4k3/3p4/8/4P3/8/8/8/4K1N1 b - - 0 1",
    "4k1n1/8/8/8/3p4/8/4P3/4K1N1 w - - 0 1",
    "4k1n1/1p6/8/P7/8/8/8/4K1N1 b - - 0 1",
    "r3k3/8/8/8/8/8/8/R3K3 w Qq - 0 1",
    "4k1n1/p7/8/1P6/6p1/8/5P2/1N2K3 w - - 0 1",
    "k7/p7/P7/8/1p6/8/P7/K7 w - - 0 1",
)


def test_repetition_counts_match_python_chess_on_random_games() -> None:
    # Expected: python-chess `Board.is_repetition`, whose position key holds the en-passant
    # square only when a legal en-passant capture exists. FoW has no check, so its captures are
    # python-chess's pseudo-legal ones; plies where the two differ (a pinned pawn) are skipped.
    rng = random.Random(4)
    compared = repeated = draws = 0
    for game_no in range(150 if SHORT else 400):
        fen = _REPETITION_FENS[game_no % len(_REPETITION_FENS)]
        g = Game(fen)
        board = chess.Board(fen)
        same_rule = True
        while not g.is_over():
            move = rng.choice(g.legal_moves())
            board.push(chess.Move.from_uci(move_to_uci(move)))
            g.push(move)
            same_rule &= board.has_legal_en_passant() == board.has_pseudo_legal_en_passant()
            if not same_rule or board.king(chess.WHITE) is None or board.king(chess.BLACK) is None:
                break
            n = g.repetitions()
            assert board.is_repetition(n) and not board.is_repetition(n + 1), (fen, g.ply)
            compared += 1
            repeated += n > 1
        out = g.outcome
        draws += out is not None and out.termination is Termination.THREEFOLD_REPETITION
    assert compared > 5000 and repeated > 100 and draws > 0


def test_push_takes_uci_moves_and_python_chess_moves() -> None:
    # usability #52: Game.push("e2e4") and Game.push(chess.Move) used to fail inside int()
    from caligo.fow.values import Move

    g = Game()
    board = chess.Board()
    for move in ("e2e4", chess.Move.from_uci("e7e5"), Move.from_uci("g1f3")):
        g.push(move)
        board.push(chess.Move.from_uci(str(move)))
    g.push(g.legal_moves()[0])  # the referee's codes go back in as they came out
    board.push(g.move_list()[-1].to_chess())
    assert g.fen() == board.fen(en_passant="fen")
    assert [m.uci() for m in g.move_list()] == [m.uci() for m in board.move_stack]
    assert [move_to_uci(m) for m in g.moves] == [m.uci() for m in board.move_stack]
    assert g.board().legal_moves() == [Move.from_code(m) for m in g.legal_moves()]
    assert g.turn == WHITE and str(g.turn) == "white"
    assert repr(g) == f"<Game {g.fen()!r} ply=4 result=*>"
    last = g.moves[-1]
    assert g.pop() == last and g.ply == 3
