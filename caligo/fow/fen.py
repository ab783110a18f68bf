"""FEN and the array boundary of FoW chess positions (layout: `caligo.fow.position`).

`from_fen` and `to_fen` convert between FEN text and the uint64 (16,) array every kernel takes;
`position_array` is the check at every public boundary (a `Position` or such an array);
`move_to_uci` writes a move code. These sit below move generation (`caligo.fow.movegen`) and
notation (`caligo.fow.notation`), which both take positions, and below `Position`
(`caligo.fow.position`), which uses both: the modules import in one direction.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from caligo.fow.bitboard import SQUARE_NAMES, U1
from caligo.fow.errors import FenError
from caligo.fow.position_kernels import (
    _S32,
    BLACK,
    CASTLE_BK,
    CASTLE_BQ,
    CASTLE_WK,
    CASTLE_WQ,
    KIND_PROMOTION,
    MOVE_NONE,
    NO_EP,
    PIECE_SYMBOLS,
    POS_WORDS,
    W_CASTLE,
    W_CLOCKS,
    W_EP,
    W_STM,
    WHITE,
    check_invariants,
)
from caligo.fow.values import Move

if TYPE_CHECKING:
    from caligo.fow.position import Position

__all__ = [
    "PositionLike",
    "empty_position",
    "from_fen",
    "fullmove_number",
    "halfmove_clock",
    "move_to_uci",
    "position_array",
    "to_fen",
]


PositionLike: TypeAlias = "Position | np.ndarray"
"""What the boundary functions take as a position: a `Position` or its uint64 (16,) array."""


def position_array(pos: PositionLike) -> np.ndarray:
    """Return the uint64 (16,) array of a `Position` (its `arr`) or of an array (validated, not
    copied)."""
    arr = pos if isinstance(pos, np.ndarray) else getattr(pos, "arr", None)
    if isinstance(arr, np.ndarray) and arr.dtype == np.uint64 and arr.shape == (POS_WORDS,):
        return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
    what = f"array of dtype {arr.dtype} and shape {arr.shape}" if isinstance(arr, np.ndarray) else (
        type(pos).__name__
    )
    raise TypeError(f"a position must be a Position or a uint64 array of shape (16,), got {what}")


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
