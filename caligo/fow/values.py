"""Small value types of the FoW front door: colours, piece types, pieces and moves.

The kernels work on plain integers (numba cannot lower `IntEnum` globals); these types are what a
user meets at the boundary, and they convert to and from the integers there.

Colours. Caligo's `Color.WHITE` is 0 and `Color.BLACK` is 1 (the layout of the position words and
of player 0 = white everywhere in `caligo.fow`), while python-chess's `chess.WHITE` is `True`
(== 1). `color()` is the one place a colour is read, and it maps each spelling to the colour it
means: `Color` members, the ints 0 and 1 (caligo's own constants), the strings "white"/"black"
("w"/"b", any case), and python-chess's booleans (`True` is white). So `observe(pos,
chess.WHITE)` is white's observation, never black's. Anything else raises `ColorError`.

Piece types are 0-based in caligo (PAWN = 0 ... KING = 5, the bitboard order) and 1-based in
python-chess (`chess.PAWN` = 1). A plain int is therefore never read as a piece type: `Piece` and
`Move.promotion` take `PieceType` members (or convert from python-chess objects).

Moves. `Move` is a value like `chess.Move`: from square, to square and the promotion piece, with
`uci()` / `str()` / `Move.from_uci`. Castling is written as the king's move (e1g1). The kernels'
packed `uint16` code (layout in `caligo.fow.position`) also says which *kind* of move it is
(en passant, castling), which depends on the position; `Position.push`, `Game.push` and
`BeliefSet.update_own_move` resolve a `Move`, a UCI string, a `chess.Move` or a code against the
FoW move set of the position.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeAlias

import numpy as np

from caligo.fow.errors import ColorError, MoveError

SQUARE_NAMES: tuple[str, ...] = tuple(f + r for r in "12345678" for f in "abcdefgh")
"""Square names in index order (a1 = 0, h8 = 63), built here (not in `bitboard`, which re-exports
them) so that this module needs no numba."""


class Color(IntEnum):
    """A side: WHITE = 0 (player 0), BLACK = 1. `str()` gives "white" / "black"."""

    WHITE = 0
    BLACK = 1

    @property
    def other(self) -> Color:
        """The opposite colour."""
        return Color(1 - self)

    def __str__(self) -> str:
        return self.name.lower()


ColorLike: TypeAlias = "Color | int | bool | str"
"""What `color()` accepts: a Color, 0/1, python-chess's True/False, or "white"/"black"."""

_COLOR_NAMES = {"white": Color.WHITE, "w": Color.WHITE, "black": Color.BLACK, "b": Color.BLACK}


def color(value: Any) -> Color:
    """Return the `Color` that `value` names (see the module docstring); raise ColorError.

    python-chess booleans are read as python-chess means them (True = white), caligo's ints as
    caligo means them (0 = white, 1 = black).
    """
    if isinstance(value, Color):
        return value
    if isinstance(value, bool | np.bool_):
        return Color.WHITE if value else Color.BLACK
    if isinstance(value, int | np.integer):
        if value in (0, 1):
            return Color(int(value))
        raise ColorError(f"invalid color: {value!r} (use 0 = white or 1 = black)")
    if isinstance(value, str):
        named = _COLOR_NAMES.get(value.strip().lower())
        if named is not None:
            return named
    raise ColorError(f"invalid color: {value!r} (use Color.WHITE/BLACK, 'white'/'black')")


class PieceType(IntEnum):
    """A piece type in caligo's bitboard order (0-based, unlike python-chess's 1-based)."""

    PAWN = 0
    KNIGHT = 1
    BISHOP = 2
    ROOK = 3
    QUEEN = 4
    KING = 5

    @property
    def symbol(self) -> str:
        """Lower-case letter: p n b r q k."""
        return "pnbrqk"[self]

    @classmethod
    def from_chess(cls, piece_type: int) -> PieceType:
        """Convert python-chess's 1-based piece type (`chess.KNIGHT` = 2 -> KNIGHT)."""
        if isinstance(piece_type, bool) or piece_type not in range(1, 7):
            raise ValueError(f"invalid python-chess piece type: {piece_type!r}")
        return cls(int(piece_type) - 1)


def _piece_type(value: Any, what: str) -> PieceType:
    if not isinstance(value, PieceType):
        raise TypeError(
            f"{what} must be a PieceType (caligo's are 0-based, python-chess's 1-based), "
            f"got {value!r}"
        )
    return value


@dataclass(frozen=True)
class Piece:
    """A piece: its type and colour (`Piece(PieceType.KNIGHT, Color.WHITE)`, or from_symbol)."""

    piece_type: PieceType
    color: Color

    def __post_init__(self) -> None:
        _piece_type(self.piece_type, "piece_type")
        object.__setattr__(self, "color", color(self.color))

    @property
    def code(self) -> int:
        """The position word of this piece's bitboard: color * 6 + piece_type."""
        return int(self.color) * 6 + int(self.piece_type)

    @classmethod
    def from_code(cls, code: int) -> Piece:
        """Return the piece of bitboard word `code` (0..11)."""
        if isinstance(code, bool) or not 0 <= int(code) < 12:
            raise ValueError(f"invalid piece code: {code!r}")
        return cls(PieceType(int(code) % 6), Color(int(code) // 6))

    def symbol(self) -> str:
        """FEN letter: upper case for white."""
        s = self.piece_type.symbol
        return s.upper() if self.color is Color.WHITE else s

    @classmethod
    def from_symbol(cls, symbol: str) -> Piece:
        """Parse a FEN letter ("N", "q")."""
        if not isinstance(symbol, str) or len(symbol) != 1 or symbol.lower() not in "pnbrqk":
            raise ValueError(f"invalid piece symbol: {symbol!r}")
        kind = PieceType("pnbrqk".index(symbol.lower()))
        return cls(kind, Color.WHITE if symbol.isupper() else Color.BLACK)

    def __str__(self) -> str:
        return self.symbol()

    def __repr__(self) -> str:
        return f"Piece.from_symbol({self.symbol()!r})"


_PROMOTIONS = (PieceType.KNIGHT, PieceType.BISHOP, PieceType.ROOK, PieceType.QUEEN)


def _square(value: Any, what: str) -> int:
    if isinstance(value, str):
        if value in SQUARE_NAMES:
            return SQUARE_NAMES.index(value)
        raise ValueError(f"invalid {what}: {value!r}")
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < 64:
        raise ValueError(f"invalid {what}: {value!r} (a square 0..63 or a name like 'e4')")
    return int(value)


def parse_square(value: int | str) -> int:
    """Return the square 0..63 of an index or a name ("e4"); raise ValueError otherwise."""
    return _square(value, "square")


@dataclass(frozen=True, order=True)
class Move:
    """A move as the player names it: from square, to square, promotion piece type (or None).

    Squares are indices 0..63 (a1 = 0, h8 = 63); names ("e2") are accepted by the
    constructor and converted. Equal moves compare equal whatever position they came from;
    moves sort by from square, then to square.
    """

    from_square: int
    to_square: int
    promotion: PieceType | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "from_square", _square(self.from_square, "from square"))
        object.__setattr__(self, "to_square", _square(self.to_square, "to square"))
        if self.promotion is not None:
            if _piece_type(self.promotion, "promotion") not in _PROMOTIONS:
                raise ValueError(f"invalid promotion: {self.promotion!r}")
        if self.from_square == self.to_square:
            raise ValueError(f"invalid move: from and to square are both {self.from_square}")

    def uci(self) -> str:
        """Return the UCI text ("e2e4", "e7e8q", castling as "e1g1")."""
        text = SQUARE_NAMES[self.from_square] + SQUARE_NAMES[self.to_square]
        return text if self.promotion is None else text + self.promotion.symbol

    def __str__(self) -> str:
        return self.uci()

    def __repr__(self) -> str:
        return f"Move.from_uci({self.uci()!r})"

    @classmethod
    def from_uci(cls, uci: str) -> Move:
        """Parse UCI text; raise MoveError quoting it when it is not a move's syntax."""
        if not isinstance(uci, str) or len(uci) not in (4, 5):
            raise MoveError(f"invalid uci: {uci!r}")
        if uci[0:2] not in SQUARE_NAMES or uci[2:4] not in SQUARE_NAMES or uci[0:2] == uci[2:4]:
            raise MoveError(f"invalid uci: {uci!r}")
        promo = None
        if len(uci) == 5:
            if uci[4] not in "nbrq":
                raise MoveError(f"invalid uci: {uci!r}")
            promo = PieceType("pnbrqk".index(uci[4]))
        return cls(SQUARE_NAMES.index(uci[0:2]), SQUARE_NAMES.index(uci[2:4]), promo)

    @classmethod
    def from_code(cls, code: int) -> Move:
        """Return the move of a kernel `uint16` code (layout in `caligo.fow.position`)."""
        m = int(code)
        if not 0 < m < 1 << 16:
            raise MoveError(f"invalid move code: {code!r}")
        promo = _PROMOTIONS[(m >> 12) & 3] if (m >> 14) & 3 == 1 else None
        return cls(m & 63, (m >> 6) & 63, promo)

    @classmethod
    def from_chess(cls, move: Any) -> Move:
        """Convert a `chess.Move` (standard castling notation e1g1; no drops, no null move)."""
        if getattr(move, "drop", None) or not move:
            raise MoveError(f"not a FoW move: {move!r}")
        promo = None if move.promotion is None else PieceType.from_chess(move.promotion)
        return cls(move.from_square, move.to_square, promo)

    def to_chess(self) -> Any:
        """Return the equal `chess.Move`."""
        import chess

        promo = None if self.promotion is None else int(self.promotion) + 1
        return chess.Move(self.from_square, self.to_square, promo)

    def matches(self, code: int) -> bool:
        """Return True when kernel move `code` is this move (same squares and promotion)."""
        m = int(code)
        if m & 63 != self.from_square or (m >> 6) & 63 != self.to_square:
            return False
        if (m >> 14) & 3 == 1:
            return self.promotion is not None and _PROMOTIONS[(m >> 12) & 3] is self.promotion
        return self.promotion is None


MoveLike: TypeAlias = "Move | str | int"
"""What the boundary resolves against a position's move set: a Move, UCI text, a `chess.Move`
or a kernel uint16 code."""


__all__ = [
    "Color",
    "ColorLike",
    "Move",
    "MoveLike",
    "Piece",
    "PieceType",
    "color",
    "parse_square",
]
