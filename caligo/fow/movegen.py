"""FoW chess move generation (pseudo-legal, chess.com rules) and perft kernels, in numba.

FoW moves are the pseudo-legal chess moves: moving into or staying in check is legal, capturing
the king is an ordinary capture (it ends the game), castling needs only the right and empty squares
between king and rook (castling out of, through and into check is legal), en passant, and
promotion to N, B, R, Q. Layout of positions and moves: see `position.py`. `move_from_uci` and
`resolve_move` find a move in this move set (the boundary `Position.push` and notation use).

One generator serves FoW and standard chess: the legality filter used to check the published
perft counts (`perft_legal`) is a small hook on top of `gen_moves` (Stockfish-style
"pseudo-legal first"), not a second generator.

Kernels (`@njit(cache=True, nogil=True)`): arrays and scalars in, counts out, never raise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from caligo.fow.bitboard import (
    FILE_A,
    FILE_H,
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    PAWN_ATTACKS,
    RANK_1,
    RANK_3,
    RANK_6,
    RANK_8,
    U0,
    U1,
    bishop_attacks,
    lsb,
    popcount,
    rook_attacks,
)
from caligo.fow.errors import MoveError, TooManyMovesError
from caligo.fow.fen import PositionLike, move_to_uci, position_array, to_fen
from caligo.fow.position_kernels import (
    BISHOP,
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_PROMOTION,
    KING,
    KNIGHT,
    NO_EP,
    PAWN,
    POS_WORDS,
    QUEEN,
    ROOK,
    UNDO_WORDS,
    W_CASTLE,
    W_EP,
    W_STM,
    WHITE,
    king_captured,
    make_move,
    square_attacked,
    unmake_move,
)
from caligo.fow.values import Move

MAX_MOVES = 512
"""Size of a move buffer; gen_moves never writes past the buffer it is given.

Why 512 is enough for every position `from_fen` accepts (at most 16 pieces a side, a count that
no move raises): a queen has at most 27 moves, a pawn 12 (a push and two captures, each onto the
last rank as 4 promotions), the king 8 plus 2 castlings, so 15 pieces and a king make at most
15 * 27 + 10 = 415 moves. Arrays built by hand are not bound by that argument, so every kernel
that fills a buffer compares the count with the buffer's length and returns a status
(`MOVES_OVERFLOW`) instead of dropping moves; the public functions raise TooManyMovesError. (The
most a random search over arbitrary arrays, overlapping bitboards included, reached was 507.)
"""
MOVES_OVERFLOW = -1
"""Status returned by the perft kernels when a position has more moves than MAX_MOVES."""

_NOT_A = ~FILE_A
_NOT_H = ~FILE_H
_U7 = np.uint64(7)
_U8 = np.uint64(8)
_U9 = np.uint64(9)
_U16 = np.uint64(16)
# squares that must be empty for castling: white O-O f1 g1, O-O-O b1 c1 d1; black likewise
_WK_EMPTY = np.uint64((1 << 5) | (1 << 6))
_WQ_EMPTY = np.uint64((1 << 1) | (1 << 2) | (1 << 3))
_BK_EMPTY = _WK_EMPTY << np.uint64(56)
_BQ_EMPTY = _WQ_EMPTY << np.uint64(56)


@njit(cache=True, nogil=True, inline="always")
def _push(out: np.ndarray, n: int, frm: int, to: int, kind: int, promo: int) -> int:
    if n < out.shape[0]:
        out[n] = np.uint16(frm | (to << 6) | (promo << 12) | (kind << 14))
    return n + 1


@njit(cache=True, nogil=True, inline="always")
def _push_targets(out: np.ndarray, n: int, frm: int, targets: np.uint64) -> int:
    while targets:
        to = lsb(targets)
        n = _push(out, n, frm, to, 0, 0)
        targets &= targets - U1
    return n


@njit(cache=True, nogil=True, inline="always")
def _push_pawn_targets(
    out: np.ndarray, n: int, targets: np.uint64, delta: int, promo_rank: np.uint64
) -> int:
    """Add pawn moves to `targets` from `to - delta`; moves onto promo_rank become 4 promotions."""
    plain = targets & ~promo_rank
    while plain:
        to = lsb(plain)
        n = _push(out, n, to - delta, to, 0, 0)
        plain &= plain - U1
    prom = targets & promo_rank
    while prom:
        to = lsb(prom)
        for p in range(3, -1, -1):
            n = _push(out, n, to - delta, to, KIND_PROMOTION, p)
        prom &= prom - U1
    return n


@njit(cache=True, nogil=True)
def gen_moves(pos: np.ndarray, out: np.ndarray) -> int:
    """Write the FoW moves of the side to move into `out`; return how many there are.

    pos uint64 (16,); out uint16 (MAX_MOVES,) or any length. If the count exceeds len(out), only
    the first len(out) moves are written and the true count is returned: callers compare it
    with len(out) (see MAX_MOVES). Positions where a king is missing still get their moves;
    callers stop at king capture.
    """
    us = int(pos[W_STM])
    them = 1 - us
    ub = us * 6
    tb = them * 6
    own = pos[ub] | pos[ub + 1] | pos[ub + 2] | pos[ub + 3] | pos[ub + 4] | pos[ub + 5]
    opp = pos[tb] | pos[tb + 1] | pos[tb + 2] | pos[tb + 3] | pos[tb + 4] | pos[tb + 5]
    occ = own | opp
    empty = ~occ
    not_own = ~own
    n = 0
    pawns = pos[ub + PAWN]
    if us == WHITE:
        single = (pawns << _U8) & empty
        double = ((single & RANK_3) << _U8) & empty
        cap_w = ((pawns & _NOT_A) << _U7) & opp
        cap_e = ((pawns & _NOT_H) << _U9) & opp
        n = _push_pawn_targets(out, n, single, 8, RANK_8)
        n = _push_pawn_targets(out, n, double, 16, RANK_8)
        n = _push_pawn_targets(out, n, cap_w, 7, RANK_8)
        n = _push_pawn_targets(out, n, cap_e, 9, RANK_8)
    else:
        single = (pawns >> _U8) & empty
        double = ((single & RANK_6) >> _U8) & empty
        cap_w = ((pawns & _NOT_A) >> _U9) & opp
        cap_e = ((pawns & _NOT_H) >> _U7) & opp
        n = _push_pawn_targets(out, n, single, -8, RANK_1)
        n = _push_pawn_targets(out, n, double, -16, RANK_1)
        n = _push_pawn_targets(out, n, cap_w, -9, RANK_1)
        n = _push_pawn_targets(out, n, cap_e, -7, RANK_1)
    ep = int(pos[W_EP])
    if ep < NO_EP:
        att = PAWN_ATTACKS[them, ep] & pawns
        while att:
            frm = lsb(att)
            n = _push(out, n, frm, ep, KIND_EN_PASSANT, 0)
            att &= att - U1
    bb = pos[ub + KNIGHT]
    while bb:
        sq = lsb(bb)
        n = _push_targets(out, n, sq, KNIGHT_ATTACKS[sq] & not_own)
        bb &= bb - U1
    bb = pos[ub + BISHOP] | pos[ub + QUEEN]
    while bb:
        sq = lsb(bb)
        n = _push_targets(out, n, sq, bishop_attacks(sq, occ) & not_own)
        bb &= bb - U1
    bb = pos[ub + ROOK] | pos[ub + QUEEN]
    while bb:
        sq = lsb(bb)
        n = _push_targets(out, n, sq, rook_attacks(sq, occ) & not_own)
        bb &= bb - U1
    bb = pos[ub + KING]
    while bb:
        sq = lsb(bb)
        n = _push_targets(out, n, sq, KING_ATTACKS[sq] & not_own)
        bb &= bb - U1
    cr = pos[W_CASTLE]
    if us == WHITE:
        if (cr & U1) and not (occ & _WK_EMPTY):
            n = _push(out, n, 4, 6, KIND_CASTLING, 0)
        if (cr & np.uint64(2)) and not (occ & _WQ_EMPTY):
            n = _push(out, n, 4, 2, KIND_CASTLING, 0)
    else:
        if (cr & np.uint64(4)) and not (occ & _BK_EMPTY):
            n = _push(out, n, 60, 62, KIND_CASTLING, 0)
        if (cr & np.uint64(8)) and not (occ & _BQ_EMPTY):
            n = _push(out, n, 60, 58, KIND_CASTLING, 0)
    return n


@njit(cache=True, nogil=True)
def count_moves(pos: np.ndarray) -> int:
    """Return the number of FoW moves of the side to move without listing them (bulk count).

    Equals `gen_moves(pos, buf)`; pos uint64 (16,).
    """
    us = int(pos[W_STM])
    them = 1 - us
    ub = us * 6
    tb = them * 6
    own = pos[ub] | pos[ub + 1] | pos[ub + 2] | pos[ub + 3] | pos[ub + 4] | pos[ub + 5]
    opp = pos[tb] | pos[tb + 1] | pos[tb + 2] | pos[tb + 3] | pos[tb + 4] | pos[tb + 5]
    occ = own | opp
    empty = ~occ
    not_own = ~own
    pawns = pos[ub + PAWN]
    if us == WHITE:
        single = (pawns << _U8) & empty
        double = ((single & RANK_3) << _U8) & empty
        cap_w = ((pawns & _NOT_A) << _U7) & opp
        cap_e = ((pawns & _NOT_H) << _U9) & opp
        prom = RANK_8
    else:
        single = (pawns >> _U8) & empty
        double = ((single & RANK_6) >> _U8) & empty
        cap_w = ((pawns & _NOT_A) >> _U9) & opp
        cap_e = ((pawns & _NOT_H) >> _U7) & opp
        prom = RANK_1
    n = popcount(double)
    n += popcount(single & ~prom) + 4 * popcount(single & prom)
    n += popcount(cap_w & ~prom) + 4 * popcount(cap_w & prom)
    n += popcount(cap_e & ~prom) + 4 * popcount(cap_e & prom)
    ep = int(pos[W_EP])
    if ep < NO_EP:
        n += popcount(PAWN_ATTACKS[them, ep] & pawns)
    bb = pos[ub + KNIGHT]
    while bb:
        n += popcount(KNIGHT_ATTACKS[lsb(bb)] & not_own)
        bb &= bb - U1
    bb = pos[ub + BISHOP] | pos[ub + QUEEN]
    while bb:
        n += popcount(bishop_attacks(lsb(bb), occ) & not_own)
        bb &= bb - U1
    bb = pos[ub + ROOK] | pos[ub + QUEEN]
    while bb:
        n += popcount(rook_attacks(lsb(bb), occ) & not_own)
        bb &= bb - U1
    bb = pos[ub + KING]
    while bb:
        n += popcount(KING_ATTACKS[lsb(bb)] & not_own)
        bb &= bb - U1
    cr = pos[W_CASTLE]
    if us == WHITE:
        if (cr & U1) and not (occ & _WK_EMPTY):
            n += 1
        if (cr & np.uint64(2)) and not (occ & _WQ_EMPTY):
            n += 1
    else:
        if (cr & np.uint64(4)) and not (occ & _BK_EMPTY):
            n += 1
        if (cr & np.uint64(8)) and not (occ & _BQ_EMPTY):
            n += 1
    return n


@njit(cache=True, nogil=True)
def is_legal_chess(pos: np.ndarray, move: int, after: np.ndarray) -> bool:
    """Return True if a FoW move is legal in standard chess (the perft legality hook).

    pos uint64 (16,) before the move; after uint64 (16,) the position after it. A move is
    illegal if it leaves the mover's king attacked; castling also must not start from or pass
    over an attacked square.
    """
    us = int(pos[W_STM])
    them = 1 - us
    if ((int(move) >> 14) & 3) == KIND_CASTLING:
        frm = int(move) & 63
        to = (int(move) >> 6) & 63
        if square_attacked(pos, frm, them) or square_attacked(pos, (frm + to) >> 1, them):
            return False
    king = after[us * 6 + KING]
    if king == U0:
        return True
    return not square_attacked(after, lsb(king), them)


# Perft kernels are iterative with explicit stacks: numba segfaults when a self-recursive
# function is the first thing loaded from its on-disk cache (cache=True).


@njit(cache=True, nogil=True)
def _perft_copy_make(pos: np.ndarray, depth: int, legal: bool, max_moves: int) -> np.int64:
    """Copy-make perft walk shared by `perft` and `perft_legal`; pos uint64 (16,), unchanged.

    legal=False: FoW moves; a captured king ends a line; the last ply is bulk-counted.
    legal=True: FoW moves filtered by `is_legal_chess` (standard chess), every leaf made.
    max_moves: move buffer length per ply (MAX_MOVES; smaller in tests of the overflow path).
    Returns MOVES_OVERFLOW if a position on the way has more than max_moves moves.
    """
    if depth <= 0:
        return np.int64(1)
    if not legal:
        if king_captured(pos):
            return np.int64(0)
        if depth == 1:
            return np.int64(count_moves(pos))
    stack = np.empty((depth + 1, POS_WORDS), dtype=np.uint64)
    moves = np.empty((depth, max_moves), dtype=np.uint16)
    nmov = np.zeros(depth, dtype=np.int64)
    idx = np.zeros(depth, dtype=np.int64)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    for w in range(POS_WORDS):
        stack[0, w] = pos[w]
    nmov[0] = gen_moves(stack[0], moves[0])
    if nmov[0] > max_moves:
        return np.int64(MOVES_OVERFLOW)
    total = np.int64(0)
    ply = 0
    while ply >= 0:
        if idx[ply] >= nmov[ply]:
            ply -= 1
            continue
        m = moves[ply, idx[ply]]
        idx[ply] += 1
        parent = stack[ply]
        child = stack[ply + 1]
        for w in range(POS_WORDS):
            child[w] = parent[w]
        make_move(child, m, undo)
        if legal:
            if not is_legal_chess(parent, m, child):
                continue
            if ply + 1 == depth:
                total += 1
                continue
        else:
            if king_captured(child):
                continue
            if depth - ply == 2:
                total += count_moves(child)
                continue
        ply += 1
        nmov[ply] = gen_moves(child, moves[ply])
        if nmov[ply] > max_moves:
            return np.int64(MOVES_OVERFLOW)
        idx[ply] = 0
    return total


@njit(cache=True, nogil=True)
def _perft_kernel(pos: np.ndarray, depth: int, max_moves: int) -> np.int64:
    """FoW perft count with bulk counting at the last ply, or MOVES_OVERFLOW.

    A position with a captured king is terminal: it has no children. pos uint64 (16,);
    max_moves: move buffer length per ply.
    """
    return _perft_copy_make(pos, depth, False, max_moves)


@njit(cache=True, nogil=True)
def _perft_make_kernel(pos: np.ndarray, depth: int, max_moves: int) -> np.int64:
    """FoW perft count making and unmaking every move including the leaf moves, or
    MOVES_OVERFLOW. pos uint64 (16,) is used in place and restored; max_moves: move buffer
    length per ply.
    """
    if depth <= 0:
        return np.int64(1)
    if king_captured(pos):
        return np.int64(0)
    moves = np.empty((depth, max_moves), dtype=np.uint16)
    undos = np.empty((depth, UNDO_WORDS), dtype=np.uint64)
    nmov = np.zeros(depth, dtype=np.int64)
    idx = np.zeros(depth, dtype=np.int64)
    nmov[0] = gen_moves(pos, moves[0])
    if nmov[0] > max_moves:
        return np.int64(MOVES_OVERFLOW)
    total = np.int64(0)
    ply = 0
    while ply >= 0:
        if idx[ply] >= nmov[ply]:
            ply -= 1
            if ply >= 0:
                unmake_move(pos, moves[ply, idx[ply] - 1], undos[ply])
            continue
        m = moves[ply, idx[ply]]
        idx[ply] += 1
        make_move(pos, m, undos[ply])
        if ply + 1 == depth:
            total += 1
            unmake_move(pos, m, undos[ply])
            continue
        if king_captured(pos):
            unmake_move(pos, m, undos[ply])
            continue
        ply += 1
        nmov[ply] = gen_moves(pos, moves[ply])
        if nmov[ply] > max_moves:
            while ply > 0:  # restore pos before reporting
                ply -= 1
                unmake_move(pos, moves[ply, idx[ply] - 1], undos[ply])
            return np.int64(MOVES_OVERFLOW)
        idx[ply] = 0
    return total


@njit(cache=True, nogil=True)
def _perft_legal_kernel(pos: np.ndarray, depth: int, max_moves: int) -> np.int64:
    """Standard-chess perft count (FoW moves filtered by `is_legal_chess`), or MOVES_OVERFLOW.
    pos uint64 (16,); max_moves: move buffer length per ply."""
    return _perft_copy_make(pos, depth, True, max_moves)


# --- pure-Python boundary --------------------------------------------------------------------


def _checked_depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 0:
        raise ValueError(f"perft depth must be a non-negative int, got {depth!r}")
    return int(depth)


def _count(kernel: Callable[..., np.int64], pos: PositionLike, depth: int) -> int:
    """Run a perft kernel on a Position or array; raise TooManyMovesError on its overflow
    status."""
    arr = position_array(pos)
    n = int(kernel(arr, _checked_depth(depth), MAX_MOVES))
    if n == MOVES_OVERFLOW:
        raise TooManyMovesError(
            f"a position on the way from {to_fen(arr)!r} has more than MAX_MOVES = {MAX_MOVES} "
            "FoW moves (possible only in a position built by hand)"
        )
    return n


def perft(pos: PositionLike, depth: int) -> int:
    """Return the FoW perft count of `pos` (a Position or a uint64 (16,) array) at `depth`.

    Leaves are move sequences of length `depth`; a line ends when a king is captured; the last
    ply is bulk-counted. Raises TooManyMovesError instead of losing moves (see MAX_MOVES).
    """
    return _count(_perft_kernel, pos, depth)


def perft_make(pos: PositionLike, depth: int) -> int:
    """Return the FoW perft count making and unmaking every move, leaf moves included (the
    make/unmake benchmark); equals `perft`. The position is restored."""
    return _count(_perft_make_kernel, pos, depth)


def perft_legal(pos: PositionLike, depth: int) -> int:
    """Return the standard-chess perft count: FoW moves filtered by `is_legal_chess` (checks
    the generator against published perft counts)."""
    return _count(_perft_legal_kernel, pos, depth)


def move_buffer(pos: np.ndarray) -> tuple[np.ndarray, int]:
    """Return (buffer, n): the FoW moves of `pos` (uint64 (16,)) in buffer[:n], never truncated
    (a larger buffer is used when a hand-built position has more than MAX_MOVES moves)."""
    buf = np.empty(MAX_MOVES, dtype=np.uint16)
    n = int(gen_moves(pos, buf))
    if n > buf.size:
        buf = np.empty(n, dtype=np.uint16)
        n = int(gen_moves(pos, buf))
    return buf, n


def legal_moves(pos: PositionLike) -> list[int]:
    """Return the FoW moves of the side to move as uint16 codes (ints); [] once a king has been
    captured. `pos` is a Position or a uint64 (16,) array."""
    arr = position_array(pos)
    if king_captured(arr):
        return []
    buf, n = move_buffer(arr)
    return [int(m) for m in buf[:n]]


def move_from_uci(pos: PositionLike, uci: str) -> int:
    """Return the code of the move of `pos`'s FoW move set written `uci`; raise MoveError."""
    arr = position_array(pos)
    move = Move.from_uci(uci)
    for m in legal_moves(arr):
        if move.matches(m):
            return m
    raise MoveError(f"illegal uci move in {to_fen(arr)!r}: {uci!r}")


def resolve_move(pos: PositionLike, move: object) -> int:
    """Return the kernel code of `move` in the FoW move set of `pos`; raise MoveError.

    `move` is a `Move`, UCI text, a python-chess `chess.Move` or a code from `legal_moves`.
    """
    arr = position_array(pos)
    codes = legal_moves(arr)
    if isinstance(move, str):
        return move_from_uci(arr, move)
    if isinstance(move, bool):
        raise MoveError(f"invalid move: {move!r}")
    if isinstance(move, int | np.integer):
        if int(move) in codes:
            return int(move)
        shown = move_to_uci(int(move)) if 0 <= int(move) < 1 << 16 else str(int(move))
        raise MoveError(f"illegal move in {to_fen(arr)!r}: {shown!r}")
    if isinstance(move, Move):
        target = move
    elif hasattr(move, "from_square") and hasattr(move, "to_square"):
        target = Move.from_chess(move)
    else:
        raise MoveError(f"invalid move: {move!r} (a Move, UCI text, a chess.Move or a code)")
    for m in codes:
        if target.matches(m):
            return m
    raise MoveError(f"illegal move in {to_fen(arr)!r}: {target.uci()!r}")


def divide(pos: PositionLike, depth: int, legal: bool = False) -> dict[Move, int]:
    """Return {move: perft(child, depth - 1)} for each move of `pos`, depth >= 1 (FoW moves,
    or with `legal` the standard-chess ones; the perft debugging aid)."""
    arr = position_array(pos)
    depth = _checked_depth(depth)
    if depth == 0:
        raise ValueError("divide needs depth >= 1")
    out: dict[Move, int] = {}
    child = np.empty(POS_WORDS, dtype=np.uint64)
    for m in legal_moves(arr):
        child[:] = arr
        make_move(child, m, np.empty(UNDO_WORDS, dtype=np.uint64))
        if legal:
            if not is_legal_chess(arr, m, child):
                continue
            out[Move.from_code(m)] = perft_legal(child, depth - 1)
        else:
            out[Move.from_code(m)] = perft(child, depth - 1)
    return out


__all__ = [
    "MAX_MOVES",
    "MOVES_OVERFLOW",
    "count_moves",
    "divide",
    "gen_moves",
    "is_legal_chess",
    "legal_moves",
    "move_buffer",
    "move_from_uci",
    "perft",
    "perft_legal",
    "perft_make",
    "resolve_move",
]
