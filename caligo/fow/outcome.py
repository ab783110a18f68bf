"""When a FoW game ends and how: the rules the referee applies after every ply.

Rules (Obscuro, appendix A; chess.com): capturing the king ends the game and wins it. There is
no check, checkmate, stalemate or insufficient-material draw. Threefold repetition of the true
position (pieces, side to move, castling rights, and the en-passant square when a pawn of the
side to move can capture there: FIDE 9.2.2's "same possible moves", i.e. equal Zobrist keys) and
the 50-move rule (100 plies without a pawn move or capture) end the game in a draw at once;
nobody claims them, the holder of the true position declares them. A side to move with no FoW
move at all draws (chess.com documents no rule; OpenSpiel `dark_chess` and Fairy-Stockfish's
`fogofwar` score it a draw; see docs/fow.md).

`Referee` applies them to a sequence of positions; `Game` (the record) and the PGN reader (which
checks that a result agrees with the moves) both use it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum

import numpy as np

from caligo.fow.fen import halfmove_clock
from caligo.fow.movegen import count_moves
from caligo.fow.position_kernels import missing_king, zobrist_key
from caligo.fow.values import Color

FIFTY_MOVE_PLIES = 100
REPETITIONS = 3


class Termination(Enum):
    """Why a game ended."""

    KING_CAPTURE = "king capture"
    THREEFOLD_REPETITION = "threefold repetition"
    FIFTY_MOVES = "fifty-move rule"
    NO_MOVES = "no moves"


@dataclass(frozen=True)
class Outcome:
    """How a game ended: result text, reason, winner (a Color, or None for a draw)."""

    result: str
    termination: Termination
    winner: Color | None


class Referee:
    """Counts repetitions along one line of play and judges each position by the rules above.

    `start(pos)` before the first move, then `after(pos)` after every ply; `undo()` takes the
    last `after` back. Each returns the outcome (None while the game goes on).
    """

    def __init__(self) -> None:
        self._keys: Counter[int] = Counter()
        self._line: list[int] = []

    def start(self, pos: np.ndarray) -> Outcome | None:
        """Forget everything; judge the start position `pos` (uint64 (16,))."""
        self._keys.clear()
        self._line.clear()
        return self.after(pos)

    def after(self, pos: np.ndarray) -> Outcome | None:
        """Record position `pos` (uint64 (16,)) reached by the last ply and judge it."""
        key = int(zobrist_key(pos))
        self._keys[key] += 1
        self._line.append(key)
        return self.judge(pos)

    def undo(self) -> None:
        """Forget the last recorded position."""
        key = self._line.pop()
        self._keys[key] -= 1
        if self._keys[key] == 0:
            del self._keys[key]

    def repetitions(self, pos: np.ndarray) -> int:
        """How often `pos` has occurred on the line (including now if it is the last)."""
        return self._keys[int(zobrist_key(pos))]

    def judge(self, pos: np.ndarray) -> Outcome | None:
        """Return the outcome if the game ends at `pos`, the last recorded position."""
        loser = int(missing_king(pos))
        if loser >= 0:
            winner = Color(loser).other
            result = "1-0" if winner is Color.WHITE else "0-1"
            return Outcome(result, Termination.KING_CAPTURE, winner)
        if self.repetitions(pos) >= REPETITIONS:
            return Outcome("1/2-1/2", Termination.THREEFOLD_REPETITION, None)
        if halfmove_clock(pos) >= FIFTY_MOVE_PLIES:
            return Outcome("1/2-1/2", Termination.FIFTY_MOVES, None)
        if count_moves(pos) == 0:
            return Outcome("1/2-1/2", Termination.NO_MOVES, None)
        return None


__all__ = ["FIFTY_MOVE_PLIES", "REPETITIONS", "Outcome", "Referee", "Termination"]
