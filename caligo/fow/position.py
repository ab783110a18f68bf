"""FoW chess positions as 16 uint64 words: layout, moves, FEN, Zobrist, make/unmake, checker.

Square indexing (python-chess order, see also `bitboard.py`)::

        a  b  c  d  e  f  g  h
    8  56 57 58 59 60 61 62 63
    7  48 49 50 51 52 53 54 55
    6  40 41 42 43 44 45 46 47
    5  32 33 34 35 36 37 38 39
    4  24 25 26 27 28 29 30 31
    3  16 17 18 19 20 21 22 23
    2   8  9 10 11 12 13 14 15
    1   0  1  2  3  4  5  6  7

Position: `np.ndarray`, dtype uint64, shape (POS_WORDS,) = (16,)::

    word  0.. 5  white PAWN KNIGHT BISHOP ROOK QUEEN KING bitboards   (index color*6 + piece)
    word  6..11  black PAWN KNIGHT BISHOP ROOK QUEEN KING bitboards
    word 12      side to move: WHITE = 0, BLACK = 1
    word 13      castling rights: 1 white O-O, 2 white O-O-O, 4 black O-O, 8 black O-O-O
    word 14      en-passant target square, 64 = none. Set after EVERY double pawn push (FoW
                 visibility depends on it), not only when a capture is possible.
    word 15      halfmove clock (bits 0-31) | fullmove number << 32 (bits 32-63)

Move: `uint16` (Stockfish `Move` style)::

    bit  15 14 | 13 12 | 11 10 9 8 7 6 | 5 4 3 2 1 0
         kind  | promo |  to square    | from square

    kind:  0 normal, 1 promotion, 2 en passant, 3 castling
    promo: 0 knight, 1 bishop, 2 rook, 3 queen (promoted piece = KNIGHT + promo)
    castling is written king-from -> king-destination (e1g1, e1c1, e8g8, e8c8)
    MOVE_NONE = 0 (a1a1 is never a move)

Kernels here are `@njit(cache=True, nogil=True)`: arrays and scalars in, status out, no raising.
The public pure-Python layer (`from_fen`, `to_fen`, `Position`, `move_from_uci`) validates and
raises the errors of `caligo.fow.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypeAlias

import numpy as np
from numba import njit

from caligo.fow.bitboard import (
    FILE_NAMES,
    RANK_NAMES,
    SQUARE_NAMES,
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
from caligo.fow.errors import FenError, MoveError
from caligo.fow.values import Color, Move, MoveLike, Piece, parse_square

WHITE = 0
BLACK = 1
PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = range(6)
PIECE_SYMBOLS = "pnbrqk"

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


def move_to_uci(move: int | Move) -> str:
    """Return the UCI text of a move code or Move ("e2e4", "e7e8q", castling as "e1g1");
    "0000" for MOVE_NONE."""
    if isinstance(move, Move):
        return move.uci()
    m = int(move)
    if m == MOVE_NONE:
        return "0000"
    text = SQUARE_NAMES[m & 63] + SQUARE_NAMES[(m >> 6) & 63]
    if (m >> 14) & 3 == KIND_PROMOTION:
        text += "nbrq"[(m >> 12) & 3]
    return text


def move_from_uci(pos: PositionLike, uci: str) -> int:
    """Return the code of the move of `pos`'s FoW move set written `uci`; raise MoveError."""
    arr = position_array(pos)
    move = Move.from_uci(uci)
    from caligo.fow.movegen import legal_moves

    for m in legal_moves(arr):
        if move.matches(m):
            return m
    raise MoveError(f"illegal uci move in {to_fen(arr)!r}: {uci!r}")


def resolve_move(pos: PositionLike, move: object) -> int:
    """Return the kernel code of `move` in the FoW move set of `pos`; raise MoveError.

    `move` is a `Move`, UCI text, a python-chess `chess.Move` or a code from `legal_moves`.
    """
    arr = position_array(pos)
    from caligo.fow.movegen import legal_moves

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


# --- FEN -------------------------------------------------------------------------------------


def empty_position() -> np.ndarray:
    """Return a new all-zero position array (no pieces, white to move, no ep, fullmove 1)."""
    pos = np.zeros(POS_WORDS, dtype=np.uint64)
    pos[W_EP] = np.uint64(NO_EP)
    pos[W_CLOCKS] = np.uint64(1) << _S32
    return pos


_CLOCK_RE = re.compile(r"[0-9]{1,10}\Z")
"""A FEN clock: ASCII digits only (int() would also take "1_0", "+5" and non-ASCII digits)."""


def from_fen(fen: str) -> np.ndarray:
    """Parse a FEN into a position array; raise FenError quoting the FEN if it is malformed.

    Accepts 4 fields (clocks default to 0 1) or 6 (clocks in ASCII digits). Rejected as
    impossible (`check_invariants`): more than 16 pieces or 8 pawns of a color, pawns on the first
    or last rank, two kings of a color, castling rights whose king or rook is not at home, an
    en-passant square no double push could have made (wrong rank, occupied, the pawn's start
    square occupied, or no pawn in front of it), and a missing king of the side *not* to move.
    A missing king of the side to move is allowed: it is the position right after a king
    capture, so the game is over (no moves; the other side has won).
    """
    if not isinstance(fen, str):
        raise FenError(f"invalid fen: {fen!r} (not a string)")
    parts = fen.split()
    if len(parts) not in (4, 6):
        raise FenError(f"invalid fen: {fen!r} (expected 4 or 6 fields, got {len(parts)})")
    pos = empty_position()
    rows = parts[0].split("/")
    if len(rows) != 8:
        raise FenError(f"invalid fen: {fen!r} (expected 8 ranks, got {len(rows)})")
    for i, row in enumerate(rows):
        rank = 7 - i
        f = 0
        prev_digit = False
        for ch in row:
            if ch in "12345678":
                if prev_digit:
                    raise FenError(f"invalid fen: {fen!r} (two digits in a row in rank {rank + 1})")
                f += int(ch)
                prev_digit = True
            elif ch.lower() in PIECE_SYMBOLS:
                if f >= 8:
                    raise FenError(f"invalid fen: {fen!r} (rank {rank + 1} too long)")
                color = WHITE if ch.isupper() else BLACK
                code = color * 6 + PIECE_SYMBOLS.index(ch.lower())
                pos[code] |= U1 << np.uint64(8 * rank + f)
                f += 1
                prev_digit = False
            else:
                raise FenError(f"invalid fen: {fen!r} (bad character {ch!r})")
        if f != 8:
            raise FenError(f"invalid fen: {fen!r} (rank {rank + 1} has {f} squares)")
    if parts[1] not in ("w", "b"):
        raise FenError(f"invalid fen: {fen!r} (side to move {parts[1]!r})")
    pos[W_STM] = np.uint64(WHITE if parts[1] == "w" else BLACK)
    cr = 0
    if parts[2] != "-":
        for ch in parts[2]:
            if ch not in "KQkq":
                raise FenError(f"invalid fen: {fen!r} (castling {parts[2]!r})")
            bit = {"K": CASTLE_WK, "Q": CASTLE_WQ, "k": CASTLE_BK, "q": CASTLE_BQ}[ch]
            if cr & bit:
                raise FenError(f"invalid fen: {fen!r} (castling {parts[2]!r} repeats {ch!r})")
            cr |= bit
    pos[W_CASTLE] = np.uint64(cr)
    if parts[3] == "-":
        pos[W_EP] = np.uint64(NO_EP)
    else:
        if parts[3] not in SQUARE_NAMES:
            raise FenError(f"invalid fen: {fen!r} (en-passant square {parts[3]!r})")
        pos[W_EP] = np.uint64(SQUARE_NAMES.index(parts[3]))
    if len(parts) == 6:
        if not (_CLOCK_RE.match(parts[4]) and _CLOCK_RE.match(parts[5])):
            raise FenError(f"invalid fen: {fen!r} (clocks {parts[4]!r} {parts[5]!r})")
        half = int(parts[4])
        full = int(parts[5])
        if half < 0 or full < 1 or half > 100000 or full > 2**31:
            raise FenError(f"invalid fen: {fen!r} (clocks out of range)")
        pos[W_CLOCKS] = np.uint64(half) | (np.uint64(full) << _S32)
    code = int(check_invariants(pos))
    if code != 0:
        raise FenError(f"invalid fen: {fen!r} ({_INVARIANT_TEXT[code]})")
    return pos


_INVARIANT_TEXT = {
    1: "two pieces on one square",
    2: "bad side to move",
    3: "bad castling bits",
    4: "castling right without king and rook on their home squares",
    5: "en-passant square not behind a pawn that just made a double push",
    6: "more than one king of a color",
    7: "pawn on the first or last rank",
    8: "clocks out of range",
    9: "more than 16 pieces of one color",
    10: "more than 8 pawns of one color",
    11: "the side that just moved has no king",
}


def to_fen(pos: PositionLike) -> str:
    """Return the FEN of a position (the en-passant square after every double push)."""
    pos = position_array(pos)
    board = ["."] * 64
    for code in range(12):
        bb = int(pos[code])
        sym = PIECE_SYMBOLS[code % 6]
        if code < 6:
            sym = sym.upper()
        for sq in range(64):
            if (bb >> sq) & 1:
                board[sq] = sym
    rows = []
    for rank in range(7, -1, -1):
        row = ""
        empty = 0
        for f in range(8):
            s = board[8 * rank + f]
            if s == ".":
                empty += 1
            else:
                if empty:
                    row += str(empty)
                    empty = 0
                row += s
        if empty:
            row += str(empty)
        rows.append(row)
    cr = int(pos[W_CASTLE])
    castle = "".join(c for bit, c in ((1, "K"), (2, "Q"), (4, "k"), (8, "q")) if cr & bit) or "-"
    ep = int(pos[W_EP])
    ep_text = SQUARE_NAMES[ep] if ep < 64 else "-"
    side = "w" if int(pos[W_STM]) == WHITE else "b"
    clocks = int(pos[W_CLOCKS])
    return f"{'/'.join(rows)} {side} {castle} {ep_text} {clocks & 0xFFFFFFFF} {clocks >> 32}"


def halfmove_clock(pos: np.ndarray) -> int:
    """Return the halfmove clock (plies since the last pawn move or capture)."""
    return int(pos[W_CLOCKS]) & 0xFFFFFFFF


def fullmove_number(pos: np.ndarray) -> int:
    """Return the fullmove number."""
    return int(pos[W_CLOCKS]) >> 32


def square_names() -> tuple[str, ...]:
    """Return the 64 square names in index order."""
    return SQUARE_NAMES


class Position:
    """A FoW chess position to print, query and play moves on (python-chess's `Board` in
    spirit); `arr` is the uint64 (16,) array every kernel takes (the engine's fast path).

    `Position()` is the start position; `Position(fen)` parses a FEN (FenError if impossible);
    `Position(arr)` wraps an existing array without copying or checking its contents.
    Mutable: `push` plays a move in place, like `chess.Board.push`. Therefore it is not
    hashable (a dict keyed by positions would lose entries once one of them moved); use
    `key()` (the Zobrist key, equal for positions equal for repetition) or `fen()` as a key.
    Equality compares everything, clocks included.
    """

    __slots__ = ("arr",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, fen: str | np.ndarray = STARTING_FEN) -> None:
        if isinstance(fen, str):
            self.arr = from_fen(fen)
        elif isinstance(fen, np.ndarray):
            self.arr = position_array(fen)
        else:
            raise TypeError(f"Position takes a FEN or a uint64 array, got {type(fen).__name__}")

    @classmethod
    def from_fen(cls, fen: str = STARTING_FEN) -> Position:
        """Parse a FEN (raises FenError)."""
        return cls(fen)

    @classmethod
    def start(cls) -> Position:
        """Return the starting position."""
        return cls(STARTING_FEN)

    def fen(self) -> str:
        """Return the FEN (the en-passant square after every double push)."""
        return to_fen(self.arr)

    def copy(self) -> Position:
        """Return an independent copy."""
        return Position(self.arr.copy())

    @property
    def turn(self) -> Color:
        """The side to move."""
        return Color(int(self.arr[W_STM]))

    @property
    def ep_square(self) -> int | None:
        """The en-passant square after a double push (whether or not a capture is possible)."""
        ep = int(self.arr[W_EP])
        return None if ep >= NO_EP else ep

    @property
    def halfmove_clock(self) -> int:
        """Plies since the last pawn move or capture."""
        return halfmove_clock(self.arr)

    @property
    def fullmove_number(self) -> int:
        """The full-move number."""
        return fullmove_number(self.arr)

    def legal_moves(self) -> list[Move]:
        """Return the FoW moves (pseudo-legal; none once a king is captured)."""
        from caligo.fow.movegen import legal_moves

        return [Move.from_code(m) for m in legal_moves(self.arr)]

    def piece_at(self, square: int | str) -> Piece | None:
        """Return the piece on `square` (an index or a name like "e4"), None if empty."""
        code = int(piece_at(self.arr, parse_square(square)))
        return None if code < 0 else Piece.from_code(code)

    def push(self, move: MoveLike) -> Piece | None:
        """Play a move in place: a Move, UCI text, a `chess.Move` or a code from the kernels.

        Returns the captured piece (None for none); raises MoveError if the move is not a FoW
        move here (after a king capture there is none).
        """
        code = resolve_move(self.arr, move)
        captured = int(make_move(self.arr, code, np.empty(UNDO_WORDS, dtype=np.uint64)))
        return None if captured < 0 else Piece.from_code(captured)

    def push_uci(self, uci: str) -> Piece | None:
        """Play a UCI move in place (raises MoveError); return the captured piece or None."""
        return self.push(move_from_uci(self.arr, uci))

    def push_san(self, san: str) -> Piece | None:
        """Play a SAN move in place (raises MoveError); return the captured piece or None."""
        from caligo.fow.notation import parse_san

        return self.push(parse_san(self.arr, san))

    def san(self, move: MoveLike) -> str:
        """Return the SAN of a move of this position (no check marks: FoW has no check)."""
        from caligo.fow.notation import move_to_san

        return move_to_san(self.arr, resolve_move(self.arr, move))

    def parse_san(self, san: str) -> Move:
        """Return the move written `san` here (raises MoveError)."""
        from caligo.fow.notation import parse_san

        return Move.from_code(parse_san(self.arr, san))

    def key(self) -> int:
        """Return the Zobrist key (equal for positions that are the same for repetition)."""
        return int(zobrist_key(self.arr))

    def is_over(self) -> bool:
        """Return True when a king has been captured."""
        return bool(king_captured(self.arr))

    def __iter__(self) -> Iterator[Move]:
        return iter(self.legal_moves())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Position) and bool(np.array_equal(self.arr, other.arr))

    def __str__(self) -> str:
        """The board as text, rank 8 first, "." for empty squares (as python-chess prints)."""
        rows = []
        for rank in range(7, -1, -1):
            cells = []
            for file in range(8):
                code = int(piece_at(self.arr, 8 * rank + file))
                cells.append("." if code < 0 else Piece.from_code(code).symbol())
            rows.append(" ".join(cells))
        return "\n".join(rows)

    def __repr__(self) -> str:
        return f"Position({self.fen()!r})"


PositionLike: TypeAlias = "Position | np.ndarray"
"""What the boundary functions take as a position: a `Position` or its uint64 (16,) array."""


def position_array(pos: PositionLike) -> np.ndarray:
    """Return the uint64 (16,) array of a `Position` or of an array (validated, not copied)."""
    if isinstance(pos, Position):
        return pos.arr
    if isinstance(pos, np.ndarray) and pos.dtype == np.uint64 and pos.shape == (POS_WORDS,):
        return pos if pos.flags.c_contiguous else np.ascontiguousarray(pos)
    what = f"array of dtype {pos.dtype} and shape {pos.shape}" if isinstance(pos, np.ndarray) else (
        type(pos).__name__
    )
    raise TypeError(f"a position must be a Position or a uint64 array of shape (16,), got {what}")


__all__ = [
    "BISHOP",
    "BLACK",
    "FILE_NAMES",
    "KING",
    "KNIGHT",
    "MOVE_NONE",
    "NO_EP",
    "PAWN",
    "POS_WORDS",
    "QUEEN",
    "RANK_NAMES",
    "ROOK",
    "STARTING_FEN",
    "UNDO_WORDS",
    "WHITE",
    "Position",
    "PositionLike",
    "apply_move",
    "check_invariants",
    "from_fen",
    "king_captured",
    "make_move",
    "make_move16",
    "missing_king",
    "move_from",
    "move_from_uci",
    "move_kind",
    "move_promo",
    "move_to",
    "move_to_uci",
    "piece_at",
    "position_array",
    "resolve_move",
    "square_attacked",
    "to_fen",
    "unmake_move",
    "zobrist_key",
]
