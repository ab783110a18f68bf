"""Observation kernel: against the python-chess reference, and hand-checked positions.

Expected values: `observe_reference` (python-chess pseudo-legal moves + FoW castling, as if the
observer were to move, en passant only for the side to move) for random games; the hand-checked
cases below say square by square why each square is or is not visible (Obscuro, appendix A).
"""

from __future__ import annotations

import os
import random

import chess
import numpy as np
import pytest

from caligo.fow.bitboard import RANKS, parse_square
from caligo.fow.observation import (
    OBS_WORDS,
    Observation,
    ObservationError,
    fow_moves_reference,
    observe,
    observe_array,
    observe_kernel,
    observe_reference,
    parse_dark_fen,
)
from caligo.fow.position import BLACK, STARTING_FEN, WHITE, from_fen

SHORT = os.environ.get("CALIGO_SHORT") == "1"


def _sq(*names: str) -> int:
    out = 0
    for n in names:
        out |= 1 << parse_square(n)
    return out


def _visible(fen: str, player: int) -> int:
    return observe(from_fen(fen), player).visible


def test_kernel_equals_reference_on_random_games() -> None:
    rng = random.Random(17)
    n = 0
    for _ in range(120 if SHORT else 600):
        board = chess.Board()
        for _ply in range(rng.randrange(20, 200)):
            moves = fow_moves_reference(board)
            if not moves or board.king(chess.WHITE) is None or board.king(chess.BLACK) is None:
                break
            board.push(rng.choice(moves))
            pos = from_fen(board.fen(en_passant="fen"))
            for p in (WHITE, BLACK):
                assert observe(pos, p) == observe_reference(board, p), (board.fen(), p)
                n += 1
    assert n > 10000


def test_start_position_each_side_sees_its_four_ranks() -> None:
    # own pieces (ranks 1-2), pawn single and double pushes (ranks 3-4); knights reach rank 3.
    assert _visible(STARTING_FEN, WHITE) == int(RANKS[0] | RANKS[1] | RANKS[2] | RANKS[3])
    assert _visible(STARTING_FEN, BLACK) == int(RANKS[4] | RANKS[5] | RANKS[6] | RANKS[7])


def test_blocked_pawn_does_not_reveal_its_blocker() -> None:
    fen = "4k3/8/8/8/4p3/4P3/8/4K3 w - - 0 1"
    # white: e3 pawn is blocked by e4 (not seen); its diagonals d4, f4 are empty (not seen);
    # the king sees d1 d2 e2 f1 f2.
    assert _visible(fen, WHITE) == _sq("e3", "e1", "d1", "d2", "e2", "f1", "f2")
    # black likewise does not see e3
    assert not _visible(fen, BLACK) & _sq("e3")


def test_pawn_sees_what_it_can_capture() -> None:
    fen = "4k3/8/8/3p4/4P3/8/8/4K3 w - - 0 1"
    obs = observe(from_fen(fen), WHITE)
    assert obs.visible & _sq("d5", "e5") == _sq("d5", "e5")  # capture target, push square
    assert not obs.visible & _sq("f5")  # empty diagonal
    assert obs.piece_at(parse_square("d5")) == 6  # black pawn: code 6 + PAWN
    assert obs.piece_at(parse_square("f5")) is None
    assert obs.piece_at(parse_square("e5")) == -1


def test_en_passant_reveals_the_pawn_to_the_side_to_move_only() -> None:
    # 1.e4 with a black pawn on d4: black to move may take e.p. on e3, so sees e3 and the e4 pawn
    fen = "4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1"
    black = observe(from_fen(fen), BLACK)
    assert black.visible & _sq("e3", "e4") == _sq("e3", "e4")
    assert black.ep_square == parse_square("e3")
    assert black.piece_at(parse_square("e4")) == 0  # white pawn
    # without the right (the pawn did not just double-push) e4 stays hidden from black
    no_ep = observe(from_fen("4k3/8/8/8/3pP3/8/8/4K3 b - - 0 1"), BLACK)
    assert not no_ep.visible & _sq("e4", "e3") and no_ep.ep_square == 64
    # white, who just moved, has no en-passant right of its own
    assert observe(from_fen(fen), WHITE).ep_square == 64


def test_player_who_just_moved_gets_no_en_passant_view() -> None:
    # black just played ...e7e5 past a white d5 pawn; black's d7 pawn attacks e6, but the e.p.
    # right is white's. OpenSpiel would show black e6 and e7 here (see test_dark_chess_diff.py).
    fen = "4k3/3p4/8/3Pp3/8/8/8/4K3 w - e6 0 2"
    black = observe(from_fen(fen), BLACK)
    assert not black.visible & _sq("e6")
    white = observe(from_fen(fen), WHITE)
    assert white.ep_square == parse_square("e6") and white.visible & _sq("e5", "e6")


def test_sliders_see_up_to_and_including_the_first_piece() -> None:
    fen = "4k3/8/8/8/R2n3p/8/8/4K3 w - - 0 1"
    vis = _visible(fen, WHITE)
    assert vis & _sq("b4", "c4", "d4") == _sq("b4", "c4", "d4")
    assert not vis & _sq("e4", "f4", "g4", "h4")
    assert vis & _sq("a1", "a8") == _sq("a1", "a8")


def test_castling_destination_visible_even_through_check() -> None:
    # black rook on f8 attacks f1: castling through check is legal in FoW, so g1 is a move.
    fen = "4kr2/8/8/8/8/8/8/4K2R w K - 0 1"
    assert _visible(fen, WHITE) & _sq("g1")
    obs = observe(from_fen(fen), WHITE)
    assert obs.castling == 1  # own rights only
    assert observe(from_fen(fen), BLACK).castling == 0


def test_promotion_squares() -> None:
    fen = "r3k3/1P6/8/8/8/8/8/4K3 w - - 0 1"
    vis = _visible(fen, WHITE)
    assert vis & _sq("b8", "a8") == _sq("b8", "a8")  # push onto empty b8, capture on a8
    assert not vis & _sq("c8")


def test_observation_after_king_capture() -> None:
    fen = "4Q3/8/8/8/8/8/8/4K3 b - - 0 1"  # white's queen has just taken the king on e8
    black = observe(from_fen(fen), BLACK)
    assert black.visible == 0 and black.own == 0 and black.castling == 0


def test_observation_is_a_value() -> None:
    pos = from_fen(STARTING_FEN)
    a, b = observe(pos, WHITE), observe(pos.copy(), WHITE)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != observe(pos, BLACK)
    arr = observe_array(pos, WHITE)
    assert arr.dtype == np.uint64 and arr.shape == (OBS_WORDS,)
    assert np.array_equal(a.to_array(), arr)
    assert Observation.from_array(WHITE, arr) == a
    assert Observation.from_dict(a.to_dict()) == a
    assert parse_dark_fen(WHITE, a.dark_fen()) == a


def test_dark_fen_round_trips_on_random_games() -> None:
    rng = random.Random(3)
    for _ in range(30):
        board = chess.Board()
        for _ply in range(60):
            moves = fow_moves_reference(board)
            if not moves or board.king(chess.WHITE) is None or board.king(chess.BLACK) is None:
                break  # (a king capture ends the game)
            board.push(rng.choice(moves))
            pos = from_fen(board.fen(en_passant="fen"))
            for p in (WHITE, BLACK):
                obs = observe(pos, p)
                assert parse_dark_fen(p, obs.dark_fen()) == obs


@pytest.mark.parametrize(
    "text",
    [
        "8/8/8/8/8/8/8/8 w -",  # 3 fields
        "8/8/8/8/8/8/8 w - -",  # 7 ranks
        "9/8/8/8/8/8/8/8 w - -",  # bad character
        "8/8/8/8/8/8/8/7 w - -",  # short rank
        "8/8/8/8/8/8/8/8 x - -",  # side
        "8/8/8/8/8/8/8/8 w k -",  # black's castling in white's observation
        "8/8/8/8/8/8/8/8 w - e3",  # white's en passant is on rank 6
    ],
)
def test_bad_dark_fen_raises_quoting_it(text: str) -> None:
    with pytest.raises(ObservationError) as err:
        parse_dark_fen(WHITE, text)
    assert repr(text) in str(err.value)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="invalid color: 2"):
        observe(from_fen(STARTING_FEN), 2)
    with pytest.raises(TypeError):
        observe(np.zeros(16, dtype=np.int64), WHITE)
    with pytest.raises(ObservationError, match="invalid observation"):
        Observation.from_dict({"player": "white"})


def test_kernel_signature() -> None:
    from numba import types

    out = np.empty(OBS_WORDS, dtype=np.uint64)
    observe_kernel(from_fen(STARTING_FEN), WHITE, out)
    for sig in observe_kernel.signatures:
        assert sig[0] == types.Array(types.uint64, 1, "C")
        assert sig[2] == types.Array(types.uint64, 1, "C")
