"""A player's view of a FoW chess game, as JSON-ready data and as SVG (a pure consumer).

Every function here takes an `Observation` (and optionally the player's previous observation and
their own last move), never a position: nothing in this module can see a hidden square, so two
true positions that give a player the same observation give byte-identical views.

What a view holds, and why the player is entitled to it:

- the visible squares with their contents, and the fog squares (Obscuro, appendix A);
- the player's legal moves when it is their turn: derived from the observation alone (a player
  "always knows their exact set of legal moves"; `legal_moves_uci` rebuilds them with fog squares
  treated as blocked and never as capturable, and tests check it against the true move list);
- own castling rights and the en-passant square they may capture on (both in the observation);
- hints: the player's own last move, and the squares where their pieces disappeared during the
  opponent's last ply (they were captured there: derivable by comparing two of the player's own
  observations, so not a leak). Nothing about the opponent's move beyond that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.movegen import move_buffer
from caligo.fow.observation import Observation
from caligo.fow.position import (
    BLACK,
    PIECE_SYMBOLS,
    POS_WORDS,
    W_CASTLE,
    W_CLOCKS,
    W_EP,
    W_STM,
    apply_move,
    move_to_uci,
)

_COLOR_NAMES = ("white", "black")
_PIECE_NAMES = ("pawn", "knight", "bishop", "rook", "queen", "king")


def _symbol(code: int) -> str:
    s = PIECE_SYMBOLS[code % 6]
    return s.upper() if code < 6 else s


def _check(obs: Any) -> Observation:
    if not isinstance(obs, Observation):
        raise TypeError(f"a view is built from an Observation, got {type(obs).__name__}")
    return obs


def _stand_in(obs: Observation) -> np.ndarray:
    """The position the observer's moves are generated from: the observer's pieces, the visible
    enemy pieces, and a blocker (an enemy pawn) on every fog square."""
    pos = np.zeros(POS_WORDS, dtype=np.uint64)
    for code in range(12):
        pos[code] = np.uint64(obs.pieces[code])
    them = (1 - obs.player) * 6
    pos[them] |= np.uint64(obs.fog)
    pos[W_STM] = np.uint64(obs.player)
    pos[W_CASTLE] = np.uint64(obs.castling)
    pos[W_EP] = np.uint64(obs.ep_square)
    pos[W_CLOCKS] = np.uint64(1 << 32)
    return pos


def _legal_codes(obs: Observation) -> tuple[np.ndarray, list[int]]:
    """The stand-in position and the kernel codes of the observer's legal moves in it."""
    pos = _stand_in(obs)
    if obs.side_to_move != obs.player or not obs.pieces[obs.player * 6 + 5]:
        return pos, []  # not their turn, or their king was captured (the game is over)
    buf, n = move_buffer(pos)
    fog = obs.fog
    return pos, [int(m) for m in buf[:n] if not (fog >> ((int(m) >> 6) & 63)) & 1]


def legal_moves_uci(obs: Observation) -> list[str]:
    """Return the observer's legal moves (UCI, sorted) from the observation alone; [] if it is
    not their turn or the game is over.

    The position handed to the move generator holds the observer's pieces, the visible enemy
    pieces, and a blocker on every fog square (a fog square is never empty-for-sure nor a move
    destination); moves onto fog squares are then dropped (pawn "captures" of a blocker).
    """
    _check(obs)
    return sorted(move_to_uci(m) for m in _legal_codes(obs)[1])


def own_pieces_after(obs: Observation, move: str) -> tuple[int, ...]:
    """Return the observer's six own piece bitboards (pawn to king) after playing `move` (UCI)
    from `obs`: what their next observation must show of their own pieces. Own pieces are
    always visible and a move changes only them and the captured piece, so this needs nothing
    hidden. Raise ValueError if `move` is not one of `legal_moves_uci(obs)`."""
    _check(obs)
    pos, codes = _legal_codes(obs)
    code = next((m for m in codes if move_to_uci(m) == move), None)
    if code is None:
        raise ValueError(f"{move!r} is not a legal move of {obs.dark_fen()!r}")
    after = np.empty_like(pos)
    apply_move(pos, code, after)
    base = obs.player * 6
    return tuple(int(after[base + k]) for k in range(6))


def lost_squares(prev: Observation | None, obs: Observation) -> list[str]:
    """Return the squares where the observer's pieces vanished during the opponent's last ply.

    `prev` must be the observer's observation after their own last move; [] when it is missing
    or when `obs` is not an observation after an opponent ply.
    """
    _check(obs)
    if prev is None or obs.side_to_move != obs.player:
        return []
    _check(prev)
    if prev.player != obs.player:
        raise ValueError("observations of two different players")
    gone = prev.own & ~obs.own
    return [SQUARE_NAMES[sq] for sq in range(64) if (gone >> sq) & 1]


@dataclass(frozen=True)
class PlayerView:
    """What one player sees and may do: JSON-ready via `to_dict`."""

    player: str
    side_to_move: str
    your_turn: bool
    pieces: dict[str, str]
    fog: list[str]
    legal_moves: list[str]
    castling: str
    en_passant: str | None
    own_last_move: str | None
    lost: list[str]

    def to_dict(self) -> dict[str, Any]:
        """Return the view as plain JSON types (keys in a fixed order)."""
        return {
            "player": self.player,
            "side_to_move": self.side_to_move,
            "your_turn": self.your_turn,
            "pieces": dict(self.pieces),
            "fog": list(self.fog),
            "legal_moves": list(self.legal_moves),
            "castling": self.castling,
            "en_passant": self.en_passant,
            "hints": {"own_last_move": self.own_last_move, "lost": list(self.lost)},
        }


def player_view(
    obs: Observation, prev: Observation | None = None, own_last_move: str | None = None
) -> PlayerView:
    """Build the view of `obs`; `prev` and `own_last_move` feed the hints (see module doc)."""
    _check(obs)
    pieces = {}
    for sq in range(64):
        code = obs.piece_at(sq)
        if code is not None and code >= 0:
            pieces[SQUARE_NAMES[sq]] = _symbol(code)
    castle = "".join(c for bit, c in ((1, "K"), (2, "Q"), (4, "k"), (8, "q")) if obs.castling & bit)
    return PlayerView(
        player=_COLOR_NAMES[obs.player],
        side_to_move=_COLOR_NAMES[obs.side_to_move],
        your_turn=obs.side_to_move == obs.player,
        pieces=pieces,
        fog=[SQUARE_NAMES[sq] for sq in range(64) if (obs.fog >> sq) & 1],
        legal_moves=legal_moves_uci(obs),
        castling=castle or "-",
        en_passant=SQUARE_NAMES[obs.ep_square] if obs.ep_square < 64 else None,
        own_last_move=own_last_move,
        lost=lost_squares(prev, obs),
    )


def view_data(
    obs: Observation, prev: Observation | None = None, own_last_move: str | None = None
) -> dict[str, Any]:
    """Return `player_view(...).to_dict()`: the JSON-ready view."""
    return player_view(obs, prev, own_last_move).to_dict()


# --- SVG ---------------------------------------------------------------------------------------

_SQ = 45
_MARGIN = 20
_LIGHT = "#f0d9b5"
_DARK = "#b58863"
_FOG_FILL = "#6b6b6b"
_FOG_HATCH = "#3a3a3a"
_LAST = "#cdd26a"
_LOST = "#e06666"


def _piece_defs(codes: set[int]) -> list[str]:
    """The vector piece drawings (45x45 units, one `<g id="white-knight">` each) of the given
    piece codes, from python-chess's `chess.svg` (a dependency, used at run time)."""
    import chess.svg

    return [chess.svg.PIECES[_symbol(code)] for code in sorted(codes)]


def view_svg(
    obs: Observation, prev: Observation | None = None, own_last_move: str | None = None
) -> str:
    """Return an SVG board from the observer's side: fog squares are dark grey with black
    diagonal hatching (never mistakable for an empty square), the own last move and lost
    squares are tinted, pieces are vector drawings (python-chess's `chess.svg` set, so the
    board looks the same whatever fonts are installed). Deterministic text."""
    view = player_view(obs, prev, own_last_move)
    size = 8 * _SQ + 2 * _MARGIN
    flip = obs.player == BLACK
    shown = {code for sq in range(64) if (code := obs.piece_at(sq)) is not None and code >= 0}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'viewBox="0 0 {size} {size}" width="{size}" height="{size}" class="caligo-fow-board">',
        "<defs>",
        f'<pattern id="fog" width="8" height="8" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="8" height="8" fill="{_FOG_FILL}"/>'
        f'<line x1="0" y1="0" x2="0" y2="8" stroke="{_FOG_HATCH}" stroke-width="4"/></pattern>',
        *_piece_defs(shown),
        "</defs>",
        f'<rect width="{size}" height="{size}" fill="#302e2b"/>',
    ]
    marked: dict[str, str] = {}
    if own_last_move:
        marked[own_last_move[0:2]] = _LAST
        marked[own_last_move[2:4]] = _LAST
    for name in view.lost:
        marked[name] = _LOST
    fog = obs.fog
    for sq in range(64):
        f, r = sq & 7, sq >> 3
        col, row = (7 - f, r) if flip else (f, 7 - r)
        x, y = _MARGIN + col * _SQ, _MARGIN + row * _SQ
        name = SQUARE_NAMES[sq]
        if (fog >> sq) & 1:
            out.append(
                f'<rect x="{x}" y="{y}" width="{_SQ}" height="{_SQ}" fill="url(#fog)" '
                f'class="fog" data-square="{name}"/>'
            )
            continue
        fill = marked.get(name, _LIGHT if (f + r) % 2 else _DARK)
        out.append(
            f'<rect x="{x}" y="{y}" width="{_SQ}" height="{_SQ}" fill="{fill}" '
            f'data-square="{name}"/>'
        )
        code = obs.piece_at(sq)
        if code is not None and code >= 0:
            ref = f"#{_COLOR_NAMES[code // 6]}-{_PIECE_NAMES[code % 6]}"
            out.append(
                f'<use href="{ref}" xlink:href="{ref}" transform="translate({x}, {y})" '
                f'data-piece="{_symbol(code)}"/>'
            )
    for i in range(8):
        file_name = "abcdefgh"[7 - i if flip else i]
        rank_name = str(i + 1 if flip else 8 - i)
        cx = _MARGIN + i * _SQ + _SQ // 2
        cy = _MARGIN + i * _SQ + _SQ // 2 + 4
        out.append(
            f'<text x="{cx}" y="{size - 6}" font-size="12" text-anchor="middle" '
            f'fill="#ddd">{file_name}</text>'
        )
        out.append(
            f'<text x="{_MARGIN // 2}" y="{cy}" font-size="12" text-anchor="middle" '
            f'fill="#ddd">{rank_name}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = [
    "PlayerView",
    "legal_moves_uci",
    "lost_squares",
    "player_view",
    "view_data",
    "view_svg",
]
