"""What each player observes in FoW chess after every ply (Obscuro, appendix A; Zhang & Sandholm
2021, appendix B.1).

After every ply both players observe. A player sees the squares of their own pieces and every
square their pieces could move to *as if it were their turn* (chess.com's rule; "each player
observes all squares onto which her pieces can legally move"), with the contents of those squares:

- knights and kings: their attack squares (own-occupied ones are visible anyway);
- sliders: along each ray up to and including the first piece;
- pawns: pushes only onto empty squares (a pawn blocked by any piece does not reveal it; the
  double push only when both squares are empty); diagonals only onto an enemy piece, or onto the
  en-passant square, in which case the pawn that can be captured en passant is visible too;
- castling: the king's destination (c1/g1, c8/g8) when the right is intact and the squares
  between king and rook are empty (FoW castling ignores check).

En passant belongs to the side to move only: the player who just moved never gets an en-passant
capture "as if it were their turn" (OpenSpiel's dark_chess does; see docs/fow.md).

An observation is a value: 16 `uint64` words (the kernel's output; compare, hash, serialise)::

    word  0      visible mask (own pieces' squares always included)
    word  1..12  the 12 piece bitboards (index 1 + color*6 + piece) masked by the visible mask
    word 13      side to move (WHITE = 0, BLACK = 1): public, both players know the ply count
    word 14      the observer's own castling rights (bits of position word 13; the other
                 side's bits are always 0)
    word 15      en-passant target square when the observer is to move and has a pawn that can
                 capture there, else 64

Nothing else: no clocks (chess.com shows neither the half-move clock nor a repetition count; they
are the referee's business), no "a piece was captured" flag. What a player can *derive* from
their own sequence of observations (which of their pieces was captured, where) is derived by
`caligo.fow.view`, never handed over.

`observe(pos, player)` is the public entry point; `observe_kernel` is the numba kernel the belief
update calls; `observe_reference` is the slow python-chess reference the tests check it against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from caligo.fow.bitboard import (
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    PAWN_ATTACKS,
    RANKS,
    SQUARE_NAMES,
    U0,
    U1,
    bishop_attacks,
    lsb,
    rook_attacks,
)
from caligo.fow.errors import FowError
from caligo.fow.position import (
    BISHOP,
    BLACK,
    CASTLE_BK,
    CASTLE_BQ,
    CASTLE_WK,
    CASTLE_WQ,
    KING,
    KNIGHT,
    NO_EP,
    PAWN,
    PIECE_SYMBOLS,
    QUEEN,
    ROOK,
    W_CASTLE,
    W_EP,
    W_STM,
    WHITE,
    PositionLike,
    position_array,
)
from caligo.fow.values import Color, ColorLike, color

OBS_WORDS = 16
"""Length of an observation array (uint64 words)."""
O_VISIBLE = 0
O_PIECES = 1
O_STM = 13
O_CASTLE = 14
O_EP = 15

OWN_CASTLE_BITS = (CASTLE_WK | CASTLE_WQ, CASTLE_BK | CASTLE_BQ)
"""Castling bits a player is entitled to see: their own."""

_RANK_4 = RANKS[3]
_RANK_5 = RANKS[4]
_S8 = np.uint64(8)
_OWN_CASTLE = np.array(OWN_CASTLE_BITS, dtype=np.uint64)


class ObservationError(FowError):
    """A malformed observation (e.g. in a transcript); the message quotes the bad input."""


# --- kernel ----------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def observe_kernel(pos: np.ndarray, player: int, out: np.ndarray) -> int:
    """Write `player`'s observation of `pos` into `out`; return 0.

    pos: uint64 (16,) position (layout in `caligo.fow.position`).
    player: WHITE (0) or BLACK (1).
    out: uint64 (OBS_WORDS,) receives the observation (layout in the module docstring).
    """
    ob = player * 6
    tb = (1 - player) * 6
    own = pos[ob] | pos[ob + 1] | pos[ob + 2] | pos[ob + 3] | pos[ob + 4] | pos[ob + 5]
    them = pos[tb] | pos[tb + 1] | pos[tb + 2] | pos[tb + 3] | pos[tb + 4] | pos[tb + 5]
    occ = own | them
    vis = own
    bb = pos[ob + KNIGHT]
    while bb:
        vis |= KNIGHT_ATTACKS[lsb(bb)]
        bb &= bb - U1
    bb = pos[ob + KING]
    while bb:
        vis |= KING_ATTACKS[lsb(bb)]
        bb &= bb - U1
    bb = pos[ob + BISHOP] | pos[ob + QUEEN]
    while bb:
        vis |= bishop_attacks(lsb(bb), occ)
        bb &= bb - U1
    bb = pos[ob + ROOK] | pos[ob + QUEEN]
    while bb:
        vis |= rook_attacks(lsb(bb), occ)
        bb &= bb - U1
    pawns = pos[ob + PAWN]
    empty = ~occ
    if player == WHITE:
        single = (pawns << _S8) & empty
        vis |= single | ((single << _S8) & empty & _RANK_4)
    else:
        single = (pawns >> _S8) & empty
        vis |= single | ((single >> _S8) & empty & _RANK_5)
    ep_out = NO_EP
    ep = int(pos[W_EP])
    ep_ok = int(pos[W_STM]) == player and ep < 64
    bb = pawns
    while bb:
        sq = lsb(bb)
        vis |= PAWN_ATTACKS[player, sq] & them
        bb &= bb - U1
    if ep_ok and (PAWN_ATTACKS[1 - player, ep] & pawns):
        ep_out = ep
        vis |= U1 << np.uint64(ep)
        vis |= U1 << np.uint64(ep - 8 if player == WHITE else ep + 8)
    rights = pos[W_CASTLE] & _OWN_CASTLE[player]
    if rights:
        base = 0 if player == WHITE else 56
        kbit = U1 << np.uint64(base + 4)
        if pos[ob + KING] & kbit:
            ks = CASTLE_WK if player == WHITE else CASTLE_BK
            qs = CASTLE_WQ if player == WHITE else CASTLE_BQ
            if rights & np.uint64(ks):
                path = (U1 << np.uint64(base + 5)) | (U1 << np.uint64(base + 6))
                if (occ & path) == U0:
                    vis |= U1 << np.uint64(base + 6)
            if rights & np.uint64(qs):
                path = (
                    (U1 << np.uint64(base + 1))
                    | (U1 << np.uint64(base + 2))
                    | (U1 << np.uint64(base + 3))
                )
                if (occ & path) == U0:
                    vis |= U1 << np.uint64(base + 2)
    out[O_VISIBLE] = vis
    for code in range(12):
        out[O_PIECES + code] = pos[code] & vis
    out[O_STM] = pos[W_STM]
    out[O_CASTLE] = rights
    out[O_EP] = np.uint64(ep_out)
    return 0


@njit(cache=True, nogil=True, inline="always")
def _obs_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Return True when two observation arrays (uint64 (OBS_WORDS,)) are equal."""
    for i in range(OBS_WORDS):
        if a[i] != b[i]:
            return False
    return True


# --- value at the boundary -------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Observation:
    """One player's observation after one ply: a hashable value, equal iff the arrays are equal.

    `pieces[code]` (code = color*6 + piece) is that piece bitboard restricted to `visible`;
    `ep_square` is 64 unless the observer is to move and can capture en passant there.
    `player` and `side_to_move` are stored as `Color`s (any `color()` spelling is accepted and
    converted; annotated `int`, which a Color is, so callers may pass 0/1).
    """

    player: int
    visible: int
    pieces: tuple[int, ...]
    side_to_move: int
    castling: int
    ep_square: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "player", color(self.player))
        object.__setattr__(self, "side_to_move", color(self.side_to_move))

    def __repr__(self) -> str:
        return f"<Observation {self.player} {self.dark_fen()!r}>"

    def __str__(self) -> str:
        """The board as text, rank 8 first, "?" on fog squares, "." on visible empty ones."""
        rows = []
        for rank in range(7, -1, -1):
            cells = []
            for file in range(8):
                code = self.piece_at(8 * rank + file)
                cells.append("?" if code is None else "." if code < 0 else _symbol(code))
            rows.append(" ".join(cells))
        return "\n".join(rows)

    @classmethod
    def from_array(cls, player: ColorLike, arr: np.ndarray) -> Observation:
        """Build from a kernel output array (uint64 (OBS_WORDS,))."""
        a = [int(x) for x in arr]
        return cls(
            player=color(player),
            visible=a[O_VISIBLE],
            pieces=tuple(a[O_PIECES : O_PIECES + 12]),
            side_to_move=Color(a[O_STM] & 1),
            castling=a[O_CASTLE],
            ep_square=a[O_EP],
        )

    def to_array(self) -> np.ndarray:
        """Return the uint64 (OBS_WORDS,) array form (what the kernels compare)."""
        out = np.empty(OBS_WORDS, dtype=np.uint64)
        out[O_VISIBLE] = np.uint64(self.visible)
        for code in range(12):
            out[O_PIECES + code] = np.uint64(self.pieces[code])
        out[O_STM] = np.uint64(self.side_to_move)
        out[O_CASTLE] = np.uint64(self.castling)
        out[O_EP] = np.uint64(self.ep_square)
        return out

    @property
    def fog(self) -> int:
        """Bitboard of the squares the player cannot see."""
        return ~self.visible & 0xFFFF_FFFF_FFFF_FFFF

    @property
    def own(self) -> int:
        """Bitboard of the observer's own pieces."""
        b = self.player * 6
        out = 0
        for code in range(b, b + 6):
            out |= self.pieces[code]
        return out

    def piece_at(self, sq: int) -> int | None:
        """Return the piece code on a visible square, -1 if it is visibly empty, None if fogged."""
        if not (self.visible >> sq) & 1:
            return None
        for code in range(12):
            if (self.pieces[code] >> sq) & 1:
                return code
        return -1

    def board_text(self) -> str:
        """Return the board as a FEN-like string with '?' for fogged squares (OpenSpiel style)."""
        rows = []
        for rank in range(7, -1, -1):
            row = ""
            empty = 0
            for f in range(8):
                code = self.piece_at(8 * rank + f)
                if code == -1:
                    empty += 1
                    continue
                if empty:
                    row += str(empty)
                    empty = 0
                row += "?" if code is None else _symbol(code)
            if empty:
                row += str(empty)
            rows.append(row)
        return "/".join(rows)

    def dark_fen(self) -> str:
        """Return board, side, own castling and en-passant fields (no clocks: not observed)."""
        castle = "".join(
            c for bit, c in ((1, "K"), (2, "Q"), (4, "k"), (8, "q")) if self.castling & bit
        )
        ep = SQUARE_NAMES[self.ep_square] if self.ep_square < 64 else "-"
        side = "w" if self.side_to_move == WHITE else "b"
        return f"{self.board_text()} {side} {castle or '-'} {ep}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict: {"player", "dark_fen"} (the dark FEN says everything)."""
        return {"player": str(self.player), "dark_fen": self.dark_fen()}

    @classmethod
    def from_dict(cls, data: Any) -> Observation:
        """Parse `to_dict` output; raise ObservationError quoting the input if it is malformed."""
        if not isinstance(data, dict) or set(data) != {"player", "dark_fen"}:
            raise ObservationError(f"invalid observation: {data!r}")
        player = {"white": WHITE, "black": BLACK}.get(data["player"])
        if player is None:
            raise ObservationError(f"invalid observation player: {data['player']!r}")
        return parse_dark_fen(player, data["dark_fen"])


def _symbol(code: int) -> str:
    s = PIECE_SYMBOLS[code % 6]
    return s.upper() if code < 6 else s


def parse_dark_fen(player: ColorLike, text: Any) -> Observation:
    """Parse `Observation.dark_fen` output; raise ObservationError quoting the text if bad."""
    player = color(player)
    if not isinstance(text, str):
        raise ObservationError(f"invalid dark fen: {text!r}")
    parts = text.split()
    if len(parts) != 4:
        raise ObservationError(f"invalid dark fen: {text!r} (expected 4 fields)")
    rows = parts[0].split("/")
    if len(rows) != 8:
        raise ObservationError(f"invalid dark fen: {text!r} (expected 8 ranks)")
    visible = 0
    pieces = [0] * 12
    for i, row in enumerate(rows):
        rank = 7 - i
        f = 0
        for ch in row:
            if ch in "12345678":
                for _ in range(int(ch)):
                    if f < 8:
                        visible |= 1 << (8 * rank + f)
                    f += 1
                continue
            if f >= 8:
                raise ObservationError(f"invalid dark fen: {text!r} (rank {rank + 1} too long)")
            if ch == "?":
                pass
            elif ch.lower() in PIECE_SYMBOLS:
                code = PIECE_SYMBOLS.index(ch.lower()) + (0 if ch.isupper() else 6)
                pieces[code] |= 1 << (8 * rank + f)
                visible |= 1 << (8 * rank + f)
            else:
                raise ObservationError(f"invalid dark fen: {text!r} (bad character {ch!r})")
            f += 1
        if f != 8:
            raise ObservationError(f"invalid dark fen: {text!r} (rank {rank + 1} has {f} squares)")
    if parts[1] not in ("w", "b"):
        raise ObservationError(f"invalid dark fen: {text!r} (side to move {parts[1]!r})")
    castling = 0
    if parts[2] != "-":
        for ch in parts[2]:
            bit = {"K": 1, "Q": 2, "k": 4, "q": 8}.get(ch)
            if bit is None or castling & bit or not bit & OWN_CASTLE_BITS[player]:
                raise ObservationError(f"invalid dark fen: {text!r} (castling {parts[2]!r})")
            castling |= bit
    if parts[3] == "-":
        ep = NO_EP
    elif parts[3] in SQUARE_NAMES:
        ep = SQUARE_NAMES.index(parts[3])
        if not (ep >> 3) == (5 if player == WHITE else 2):
            raise ObservationError(f"invalid dark fen: {text!r} (en-passant {parts[3]!r})")
    else:
        raise ObservationError(f"invalid dark fen: {text!r} (en-passant {parts[3]!r})")
    return Observation(
        player=player,
        visible=visible,
        pieces=tuple(pieces),
        side_to_move=Color.WHITE if parts[1] == "w" else Color.BLACK,
        castling=castling,
        ep_square=ep,
    )


def observe_array(pos: PositionLike, player: ColorLike) -> np.ndarray:
    """Return `player`'s observation of `pos` as a uint64 (OBS_WORDS,) array.

    `pos` is a Position or a uint64 (16,) array; `player` any `color()` spelling (python-chess's
    `chess.WHITE` is white).
    """
    arr = position_array(pos)
    out = np.empty(OBS_WORDS, dtype=np.uint64)
    observe_kernel(arr, int(color(player)), out)
    return out


def observe(pos: PositionLike, player: ColorLike) -> Observation:
    """Return `player`'s observation of `pos` (a Position or a uint64 (16,) array)."""
    who = color(player)
    return Observation.from_array(who, observe_array(pos, who))


# --- pure-Python reference -------------------------------------------------------------------


def fow_moves_reference(board: Any) -> list[Any]:
    """Return the FoW pseudo-legal moves of `board.turn` (a chess.Board): python-chess's
    pseudo-legal moves with its castling replaced by FoW castling (through check allowed)."""
    import chess

    out = [m for m in board.generate_pseudo_legal_moves() if not board.is_castling(m)]
    us = board.turn
    base = 0 if us == chess.WHITE else 56
    if board.piece_at(base + 4) == chess.Piece(chess.KING, us):
        for rook_sq, path, dest in ((base + 7, (5, 6), 6), (base, (1, 2, 3), 2)):
            if (
                board.castling_rights & chess.BB_SQUARES[rook_sq]
                and board.piece_at(rook_sq) == chess.Piece(chess.ROOK, us)
                and all(board.piece_at(base + f) is None for f in path)
            ):
                out.append(chess.Move(base + 4, base + dest))
    return out


def observe_reference(board: Any, player: ColorLike) -> Observation:
    """Return `player`'s observation of a chess.Board by enumerating python-chess moves (slow).

    The board's `ep_square` must follow the FEN convention (set after every double push), as
    python-chess's `push` does. Player 0 is white, as everywhere in caligo.fow.
    """
    import chess

    player = color(player)
    side = chess.WHITE if player == WHITE else chess.BLACK
    b = board.copy(stack=False)
    if b.turn != side:
        b.turn = side
        b.ep_square = None  # the player who just moved has no en-passant right
    visible = int(b.occupied_co[side])
    ep = NO_EP
    for m in fow_moves_reference(b):
        visible |= 1 << m.to_square
        if b.is_en_passant(m):
            ep = m.to_square
            visible |= 1 << (m.to_square + (-8 if side == chess.WHITE else 8))
    pieces = [0] * 12
    for sq in range(64):
        p = board.piece_at(sq)
        if p is not None and (visible >> sq) & 1:
            pieces[(0 if p.color == chess.WHITE else 6) + p.piece_type - 1] |= 1 << sq
    castling = 0
    base = 0 if side == chess.WHITE else 56
    for bit, rook_sq in ((1, base + 7), (2, base)):
        if board.castling_rights & chess.BB_SQUARES[rook_sq]:
            castling |= bit << (0 if side == chess.WHITE else 2)
    return Observation(
        player=player,
        visible=visible,
        pieces=tuple(pieces),
        side_to_move=Color.WHITE if board.turn == chess.WHITE else Color.BLACK,
        castling=castling,
        ep_square=ep,
    )


__all__ = [
    "OBS_WORDS",
    "OWN_CASTLE_BITS",
    "Observation",
    "ObservationError",
    "fow_moves_reference",
    "observe",
    "observe_array",
    "observe_reference",
    "parse_dark_fen",
]
