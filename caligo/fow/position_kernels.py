"""The FoW position's layout and its compiled kernels (`caligo.fow.position` is the API over
them, and its docstring describes the layout): the 16-word array, piece and move codes, the
16-bit move, making and unmaking a move, attacks, king capture, Zobrist keys and the invariants
a position must keep. All kernels `nogil`."""

from __future__ import annotations

import numpy as np
from numba import njit

from caligo.fow.bitboard import (
    U0,
    U1,
    bishop_attacks,
    king_attacks,
    knight_attacks,
    lsb,
    pawn_attacks,
    popcount,
    rook_attacks,
)

WHITE = 0
BLACK = 1
PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = range(6)
PIECE_SYMBOLS = "pnbrqk"
PIECE_VALUES = (1, 3, 3, 5, 9, 0)
"""Conventional material values of pawn, knight, bishop, rook, queen, king (in pawns)."""

POS_WORDS = 16
W_STM = 12
W_CASTLE = 13
W_EP = 14
W_CLOCKS = 15
NO_EP = 64

CASTLE_WK = 1
CASTLE_WQ = 2
CASTLE_BK = 4
CASTLE_BQ = 8

MOVE_NONE = 0
KIND_NORMAL = 0
KIND_PROMOTION = 1
KIND_EN_PASSANT = 2
KIND_CASTLING = 3

UNDO_WORDS = 4
"""make_move's undo buffer: uint64 (UNDO_WORDS,): captured code + 1, castling, ep, clocks."""

STARTING_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

_LOW32 = np.uint64(0xFFFF_FFFF)
_S32 = np.uint64(32)


def piece_code(color: int, piece: int) -> int:
    """Return the word index color*6 + piece of a piece bitboard."""
    return color * 6 + piece


def _castle_keep_table() -> np.ndarray:
    """CASTLE_KEEP[sq]: rights kept when a move starts or ends on sq (built from home squares)."""
    keep = np.full(64, 15, dtype=np.uint64)
    for sq, lost in ((4, 3), (7, 1), (0, 2), (60, 12), (63, 4), (56, 8)):
        keep[sq] = np.uint64(15 & ~lost)
    return keep


CASTLE_KEEP = _castle_keep_table()


def _castle_rook_table() -> np.ndarray:
    """CASTLE_ROOK[king_to]: (rook_from, rook_to) for a castling move; -1 for other squares."""
    t = np.full((64, 2), -1, dtype=np.int64)
    for rank in (0, 7):
        base = 8 * rank
        t[base + 6] = (base + 7, base + 5)
        t[base + 2] = (base + 0, base + 3)
    return t


CASTLE_ROOK = _castle_rook_table()


# --- moves -----------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def move_from(move: int) -> int:
    """Return the from square of a move."""
    return int(move) & 63


@njit(cache=True, nogil=True, inline="always")
def move_to(move: int) -> int:
    """Return the to square of a move (the king's destination for castling)."""
    return (int(move) >> 6) & 63


@njit(cache=True, nogil=True, inline="always")
def move_promo(move: int) -> int:
    """Return the promotion field 0..3 (N, B, R, Q); meaningful only for promotions."""
    return (int(move) >> 12) & 3


@njit(cache=True, nogil=True, inline="always")
def move_kind(move: int) -> int:
    """Return the move kind: 0 normal, 1 promotion, 2 en passant, 3 castling."""
    return (int(move) >> 14) & 3


@njit(cache=True, nogil=True, inline="always")
def make_move16(frm: int, to: int, kind: int = 0, promo: int = 0) -> np.uint16:
    """Pack a move into a uint16."""
    return np.uint16(frm | (to << 6) | (promo << 12) | (kind << 14))


# --- position kernels ------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def side_bb(pos: np.ndarray, color: int) -> np.uint64:
    """Return the union of `color`'s six piece bitboards."""
    b = color * 6
    return np.uint64(pos[b] | pos[b + 1] | pos[b + 2] | pos[b + 3] | pos[b + 4] | pos[b + 5])


@njit(cache=True, nogil=True, inline="always")
def occupied_bb(pos: np.ndarray) -> np.uint64:
    """Return the union of all twelve piece bitboards."""
    return side_bb(pos, 0) | side_bb(pos, 1)


@njit(cache=True, nogil=True)
def piece_at(pos: np.ndarray, sq: int) -> int:
    """Return the piece code color*6+piece on `sq`, or -1 for an empty square."""
    b = U1 << np.uint64(sq)
    for code in range(12):
        if pos[code] & b:
            return code
    return -1


@njit(cache=True, nogil=True)
def king_captured(pos: np.ndarray) -> bool:
    """Return True when a king is missing (it was captured: the game is over)."""
    return bool(pos[KING] == U0 or pos[6 + KING] == U0)


@njit(cache=True, nogil=True)
def missing_king(pos: np.ndarray) -> int:
    """Return the color whose king is missing (the loser), or -1 if both kings are present."""
    if pos[KING] == U0:
        return WHITE
    if pos[6 + KING] == U0:
        return BLACK
    return -1


@njit(cache=True, nogil=True, inline="always")
def attackers_to(pos: np.ndarray, sq: int, occ: np.uint64, by: int) -> np.uint64:
    """Return the pieces of color `by` within `occ` that attack `sq` through the occupancy
    `occ` (a static exchange takes pieces off `occ` to find the x-rays behind them)."""
    b = by * 6
    att = pawn_attacks(1 - by, sq) & pos[b + PAWN]
    att |= knight_attacks(sq) & pos[b + KNIGHT]
    att |= king_attacks(sq) & pos[b + KING]
    att |= bishop_attacks(sq, occ) & (pos[b + BISHOP] | pos[b + QUEEN])
    att |= rook_attacks(sq, occ) & (pos[b + ROOK] | pos[b + QUEEN])
    return np.uint64(att & occ)


@njit(cache=True, nogil=True)
def square_attacked(pos: np.ndarray, sq: int, by: int) -> bool:
    """Return True if a piece of color `by` attacks `sq` (pawn diagonals, not pushes)."""
    occ = occupied_bb(pos)
    b = by * 6
    if pawn_attacks(1 - by, sq) & pos[b + PAWN]:
        return True
    if knight_attacks(sq) & pos[b + KNIGHT]:
        return True
    if king_attacks(sq) & pos[b + KING]:
        return True
    if bishop_attacks(sq, occ) & (pos[b + BISHOP] | pos[b + QUEEN]):
        return True
    if rook_attacks(sq, occ) & (pos[b + ROOK] | pos[b + QUEEN]):
        return True
    return False


@njit(cache=True, nogil=True)
def make_move(pos: np.ndarray, move: int, undo: np.ndarray) -> int:
    """Play `move` on `pos` in place; return the captured piece code, -1 for none.

    pos uint64 (16,); undo uint64 (>= UNDO_WORDS,) receives what `unmake_move` needs.
    Returns -2 and leaves pos unchanged if no piece of the side to move stands on the from
    square. The move is not checked further: pass moves from `gen_moves`.
    """
    frm = int(move) & 63
    to = (int(move) >> 6) & 63
    kind = (int(move) >> 14) & 3
    us = int(pos[W_STM])
    them = 1 - us
    fbb = U1 << np.uint64(frm)
    tbb = U1 << np.uint64(to)
    ub = us * 6
    tb = them * 6
    mp = -1
    for p in range(6):
        if pos[ub + p] & fbb:
            mp = p
            break
    if mp < 0:
        return -2
    undo[1] = pos[W_CASTLE]
    undo[2] = pos[W_EP]
    undo[3] = pos[W_CLOCKS]
    captured = -1
    if kind == KIND_EN_PASSANT:
        cap_sq = to - 8 if us == WHITE else to + 8
        pos[tb + PAWN] ^= U1 << np.uint64(cap_sq)
        captured = tb + PAWN
    else:
        for p in range(6):
            if pos[tb + p] & tbb:
                pos[tb + p] ^= tbb
                captured = tb + p
                break
    pos[ub + mp] ^= fbb | tbb
    if kind == KIND_PROMOTION:
        pos[ub + PAWN] ^= tbb
        pos[ub + KNIGHT + ((int(move) >> 12) & 3)] |= tbb
    elif kind == KIND_CASTLING:
        rf = CASTLE_ROOK[to, 0]
        rt = CASTLE_ROOK[to, 1]
        pos[ub + ROOK] ^= (U1 << np.uint64(rf)) | (U1 << np.uint64(rt))
    pos[W_CASTLE] &= CASTLE_KEEP[frm] & CASTLE_KEEP[to]
    if mp == PAWN and (to - frm == 16 or frm - to == 16):
        pos[W_EP] = np.uint64((frm + to) >> 1)
    else:
        pos[W_EP] = np.uint64(NO_EP)
    clocks = pos[W_CLOCKS]
    half = clocks & _LOW32
    full = clocks >> _S32
    if mp == PAWN or captured >= 0:
        half = U0
    else:
        half += U1
    if us == BLACK:
        full += U1
    pos[W_CLOCKS] = half | (full << _S32)
    pos[W_STM] = np.uint64(them)
    undo[0] = np.uint64(captured + 1)
    return captured


@njit(cache=True, nogil=True)
def unmake_move(pos: np.ndarray, move: int, undo: np.ndarray) -> None:
    """Take back `move`, played on `pos` by `make_move` which filled `undo`."""
    frm = int(move) & 63
    to = (int(move) >> 6) & 63
    kind = (int(move) >> 14) & 3
    us = 1 - int(pos[W_STM])
    ub = us * 6
    fbb = U1 << np.uint64(frm)
    tbb = U1 << np.uint64(to)
    pos[W_STM] = np.uint64(us)
    pos[W_CASTLE] = undo[1]
    pos[W_EP] = undo[2]
    pos[W_CLOCKS] = undo[3]
    if kind == KIND_PROMOTION:
        pos[ub + KNIGHT + ((int(move) >> 12) & 3)] ^= tbb
        pos[ub + PAWN] |= fbb
    else:
        for p in range(6):
            if pos[ub + p] & tbb:
                pos[ub + p] ^= fbb | tbb
                break
        if kind == KIND_CASTLING:
            rf = CASTLE_ROOK[to, 0]
            rt = CASTLE_ROOK[to, 1]
            pos[ub + ROOK] ^= (U1 << np.uint64(rf)) | (U1 << np.uint64(rt))
    cap = int(undo[0]) - 1
    if cap >= 0:
        if kind == KIND_EN_PASSANT:
            cap_sq = to - 8 if us == WHITE else to + 8
            pos[cap] |= U1 << np.uint64(cap_sq)
        else:
            pos[cap] |= tbb


@njit(cache=True, nogil=True)
def apply_move(src: np.ndarray, move: int, dst: np.ndarray) -> int:
    """Copy `src` into `dst` and play `move` there; return the captured code, -1 for none.

    src, dst uint64 (16,). Returns -2 (dst = copy of src) if the from square holds no piece of
    the side to move.
    """
    for i in range(POS_WORDS):
        dst[i] = src[i]
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    return make_move(dst, move, undo)


def _zobrist_keys() -> np.ndarray:
    """ZOBRIST: uint64 (12*64 + 1 + 16 + 65,): piece-square, side, castling, ep square keys."""
    rng = np.random.default_rng(0xCA1160)
    keys = rng.integers(0, 2**63, size=12 * 64 + 1 + 16 + 65, dtype=np.uint64)
    keys ^= rng.integers(0, 2**63, size=keys.size, dtype=np.uint64) << np.uint64(1)
    keys[12 * 64 + 1] = U0  # castling rights 0 hash to nothing
    keys[12 * 64 + 1 + 16 + NO_EP] = U0  # no en-passant square hashes to nothing
    return keys


ZOBRIST = _zobrist_keys()
_Z_SIDE = 12 * 64
_Z_CASTLE = 12 * 64 + 1
_Z_EP = 12 * 64 + 1 + 16


@njit(cache=True, nogil=True)
def zobrist_key(pos: np.ndarray) -> np.uint64:
    """Return the Zobrist key of pieces, side to move, castling rights and en-passant square.

    Two positions with the same key are the same for repetition (FIDE 9.2.2: same pieces, same
    side to move, same possible moves): clocks are left out, and the en-passant square counts
    only when a pawn of the side to move can capture there (a dead square after a double push
    changes no move; python-chess's repetition key does the same with its legal moves, and the
    belief rows pack it the same way). The key of a transposition is the key of its position.
    """
    key = U0
    for code in range(12):
        bb = pos[code]
        while bb:
            sq = lsb(bb)
            key ^= ZOBRIST[code * 64 + sq]
            bb &= bb - U1
    if pos[W_STM] != U0:
        key ^= ZOBRIST[_Z_SIDE]
    key ^= ZOBRIST[_Z_CASTLE + int(pos[W_CASTLE] & np.uint64(15))]
    ep = int(pos[W_EP])
    if 0 <= ep < NO_EP:
        us = int(pos[W_STM]) & 1
        if pawn_attacks(1 - us, ep) & pos[us * 6 + PAWN]:
            key ^= ZOBRIST[_Z_EP + ep]
    return np.uint64(key)


@njit(cache=True, nogil=True)
def check_invariants(pos: np.ndarray) -> int:
    """Return 0 if `pos` is well formed, else a positive code naming the first broken rule.

    1 overlapping piece bitboards; 2 side to move not 0/1; 3 castling bits beyond 15;
    4 castling right without its king and rook at home; 5 en-passant square off the board or on
    a wrong rank, occupied, with its pawn's start square occupied, or without the pawn that
    passed it; 6 more than one king of a color; 7 pawn on the first or last rank; 8 halfmove
    clock or fullmove number out of range; 9 more than 16 pieces of a color; 10 more than 8
    pawns of a color; 11 no king of the side not to move (only the side to move can have lost
    its king: the capture was the last move).
    (Stockfish `Position::pos_is_ok` and python-chess `Board.status` in spirit.)
    """
    seen = U0
    for code in range(12):
        if pos[code] & seen:
            return 1
        seen |= pos[code]
    if pos[W_STM] > U1:
        return 2
    cr = pos[W_CASTLE]
    if cr > np.uint64(15):
        return 3
    homes = (
        (CASTLE_WK, 4, 7, 0),
        (CASTLE_WQ, 4, 0, 0),
        (CASTLE_BK, 60, 63, 1),
        (CASTLE_BQ, 60, 56, 1),
    )
    for right, ksq, rsq, color in homes:
        if cr & np.uint64(right):
            if not (pos[color * 6 + KING] >> np.uint64(ksq)) & U1:
                return 4
            if not (pos[color * 6 + ROOK] >> np.uint64(rsq)) & U1:
                return 4
    ep = pos[W_EP]
    if ep > np.uint64(NO_EP):
        return 5
    if ep != np.uint64(NO_EP):
        e = int(ep)
        stm = int(pos[W_STM])
        if stm == WHITE:
            if (e >> 3) != 5:
                return 5
            pawn_sq = e - 8
            origin = e + 8
        else:
            if (e >> 3) != 2:
                return 5
            pawn_sq = e + 8
            origin = e - 8
        if (seen >> np.uint64(e)) & U1 or (seen >> np.uint64(origin)) & U1:
            return 5
        if not (pos[(1 - stm) * 6 + PAWN] >> np.uint64(pawn_sq)) & U1:
            return 5
    if popcount(pos[KING]) > 1 or popcount(pos[6 + KING]) > 1:
        return 6
    back = np.uint64(0xFF000000000000FF)
    if (pos[PAWN] | pos[6 + PAWN]) & back:
        return 7
    half = pos[W_CLOCKS] & _LOW32
    full = pos[W_CLOCKS] >> _S32
    if full < U1 or half > np.uint64(100000):
        return 8
    for color in range(2):
        b = color * 6
        side = pos[b] | pos[b + 1] | pos[b + 2] | pos[b + 3] | pos[b + 4] | pos[b + 5]
        if popcount(side) > 16:
            return 9
        if popcount(pos[b + PAWN]) > 8:
            return 10
    if pos[(1 - int(pos[W_STM])) * 6 + KING] == U0:
        return 11
    return 0
