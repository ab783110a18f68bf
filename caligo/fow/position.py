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

The layout's constants and kernels live in `caligo.fow.position_kernels` (this module exports
them): `@njit(cache=True, nogil=True)`, arrays and scalars in, status out, no raising.
The public pure-Python layer (`from_fen`, `to_fen`, `Position`, `move_from_uci`) validates and
raises the errors of `caligo.fow.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypeAlias

import numpy as np

from caligo.fow.bitboard import (
    FILE_NAMES,
    RANK_NAMES,
    SQUARE_NAMES,
    U1,
)
from caligo.fow.errors import FenError, MoveError
from caligo.fow.position_kernels import (
    _S32,
    BISHOP,
    BLACK,
    CASTLE_BK,
    CASTLE_BQ,
    CASTLE_KEEP,
    CASTLE_ROOK,
    CASTLE_WK,
    CASTLE_WQ,
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_NORMAL,
    KIND_PROMOTION,
    KING,
    KNIGHT,
    MOVE_NONE,
    NO_EP,
    PAWN,
    PIECE_SYMBOLS,
    POS_WORDS,
    QUEEN,
    ROOK,
    STARTING_FEN,
    UNDO_WORDS,
    W_CASTLE,
    W_CLOCKS,
    W_EP,
    W_STM,
    WHITE,
    ZOBRIST,
    apply_move,
    check_invariants,
    king_captured,
    make_move,
    make_move16,
    missing_king,
    move_from,
    move_kind,
    move_promo,
    move_to,
    piece_at,
    side_bb,
    square_attacked,
    unmake_move,
    zobrist_key,
)
from caligo.fow.values import Color, Move, MoveLike, Piece, parse_square


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
    "CASTLE_BK",
    "CASTLE_BQ",
    "CASTLE_KEEP",
    "CASTLE_ROOK",
    "CASTLE_WK",
    "CASTLE_WQ",
    "FILE_NAMES",
    "KIND_CASTLING",
    "KIND_EN_PASSANT",
    "KIND_NORMAL",
    "KIND_PROMOTION",
    "KING",
    "KNIGHT",
    "MOVE_NONE",
    "NO_EP",
    "PAWN",
    "PIECE_SYMBOLS",
    "POS_WORDS",
    "QUEEN",
    "RANK_NAMES",
    "ROOK",
    "STARTING_FEN",
    "UNDO_WORDS",
    "WHITE",
    "W_CASTLE",
    "W_CLOCKS",
    "W_EP",
    "W_STM",
    "ZOBRIST",
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
    "side_bb",
    "square_attacked",
    "to_fen",
    "unmake_move",
    "zobrist_key",
]
