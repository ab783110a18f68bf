"""Bitboard tables and attack kernels against independent references.

Leaper tables are checked against python-chess's `BB_KNIGHT_ATTACKS`, `BB_KING_ATTACKS` and
`BB_PAWN_ATTACKS` (same square order); slider kernels against the pure-Python ray walk
`slide_slow` and python-chess's `Board.attacks_mask` on random occupancies.
"""

from __future__ import annotations

import random

import chess
import numpy as np
from numba import njit, types

from caligo.fow.bitboard import (
    BISHOP_TABLE,
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    PAWN_ATTACKS,
    ROOK_TABLE,
    SQUARE_NAMES,
    U1,
    bishop_attacks,
    bishop_attacks_slow,
    king_attacks,
    knight_attacks,
    lsb,
    parse_square,
    pawn_attacks,
    popcount,
    queen_attacks,
    rook_attacks,
    rook_attacks_slow,
    squares_of,
)


def test_square_names_follow_python_chess() -> None:
    assert SQUARE_NAMES == tuple(chess.SQUARE_NAMES)
    assert parse_square("e4") == chess.E4
    assert squares_of(np.uint64(0b101)) == [0, 2]


def test_leaper_tables_match_python_chess() -> None:
    for sq in range(64):
        assert int(KNIGHT_ATTACKS[sq]) == chess.BB_KNIGHT_ATTACKS[sq]
        assert int(KING_ATTACKS[sq]) == chess.BB_KING_ATTACKS[sq]
        assert int(PAWN_ATTACKS[0, sq]) == chess.BB_PAWN_ATTACKS[chess.WHITE][sq]
        assert int(PAWN_ATTACKS[1, sq]) == chess.BB_PAWN_ATTACKS[chess.BLACK][sq]
        assert int(knight_attacks(sq)) == chess.BB_KNIGHT_ATTACKS[sq]
        assert int(king_attacks(sq)) == chess.BB_KING_ATTACKS[sq]
        assert int(pawn_attacks(1, sq)) == chess.BB_PAWN_ATTACKS[chess.BLACK][sq]
    assert KNIGHT_ATTACKS.dtype == np.uint64 and PAWN_ATTACKS.shape == (2, 64)


def test_magic_tables_have_the_known_sizes() -> None:
    assert ROOK_TABLE.size == 102400 and BISHOP_TABLE.size == 5248


def test_slider_attacks_match_ray_walk_and_python_chess() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        sq = rng.randrange(64)
        occ = rng.getrandbits(64) & rng.getrandbits(64)
        if rng.random() < 0.3:
            occ &= rng.getrandbits(64)
        o = np.uint64(occ)
        assert int(rook_attacks(sq, o)) == rook_attacks_slow(sq, occ)
        assert int(bishop_attacks(sq, o)) == bishop_attacks_slow(sq, occ)
        assert int(queen_attacks(sq, o)) == rook_attacks_slow(sq, occ) | bishop_attacks_slow(
            sq, occ
        )
    # python-chess on real boards
    for sq in range(64):
        board = chess.Board(None)
        board.set_piece_at(sq, chess.Piece(chess.QUEEN, chess.WHITE))
        for blocker in rng.sample(range(64), 12):
            if blocker != sq:
                board.set_piece_at(blocker, chess.Piece(chess.PAWN, chess.BLACK))
        occ = np.uint64(board.occupied)
        assert int(queen_attacks(sq, occ)) == board.attacks_mask(sq)


def test_bit_intrinsics() -> None:
    rng = random.Random(5)
    for _ in range(500):
        x = rng.getrandbits(64) | 1 << rng.randrange(64)
        assert popcount(np.uint64(x)) == bin(x).count("1")
        assert lsb(np.uint64(x)) == (x & -x).bit_length() - 1


@njit(cache=True)
def _use_from_njit(sq: int, occ: np.uint64) -> np.uint64:
    return rook_attacks(sq, occ) | bishop_attacks(sq, occ) | knight_attacks(sq) | U1


def test_kernels_callable_from_njit_and_stay_uint64() -> None:
    out = _use_from_njit(27, np.uint64(0))
    assert int(out) > 0
    assert _use_from_njit.nopython_signatures[0].return_type == types.uint64
    sig = rook_attacks.signatures[0]
    assert sig[1] == types.uint64
    assert rook_attacks.nopython_signatures[0].return_type == types.uint64
