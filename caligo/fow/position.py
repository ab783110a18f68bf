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

The layout's constants and kernels live in `caligo.fow.position_kernels`:
`@njit(cache=True, nogil=True)`, arrays and scalars in, status out, no raising. The public
pure-Python layer validates and raises the errors of `caligo.fow.errors`: FEN and the array
check in `caligo.fow.fen` (`from_fen`, `to_fen`, `position_array`), the lookup of a move in the
move set in `caligo.fow.movegen` (`move_from_uci`, `resolve_move`), SAN in `caligo.fow.notation`.
This module exports all of them and holds `Position`, which uses them; it imports them, none
imports it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from caligo.fow.bitboard import (
    FILE_NAMES,
    RANK_NAMES,
    SQUARE_NAMES,
)
from caligo.fow.fen import (
    PositionLike,
    empty_position,
    from_fen,
    fullmove_number,
    halfmove_clock,
    move_to_uci,
    position_array,
    to_fen,
)
from caligo.fow.movegen import legal_moves, move_from_uci, resolve_move
from caligo.fow.notation import move_to_san, parse_san
from caligo.fow.position_kernels import (
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
    PIECE_VALUES,
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
        return self.push(parse_san(self.arr, san))

    def san(self, move: MoveLike) -> str:
        """Return the SAN of a move of this position (no check marks: FoW has no check)."""
        return move_to_san(self.arr, resolve_move(self.arr, move))

    def parse_san(self, san: str) -> Move:
        """Return the move written `san` here (raises MoveError)."""
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
    "PIECE_VALUES",
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
    "empty_position",
    "from_fen",
    "fullmove_number",
    "halfmove_clock",
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
    "square_names",
    "to_fen",
    "unmake_move",
    "zobrist_key",
]
