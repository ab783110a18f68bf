"""A FoW game record held by whoever holds the true position (the referee).

Rules (seed 001 appendix A; chess.com): capturing the king ends the game and wins it. There is
no check, checkmate, stalemate or insufficient-material draw. Threefold repetition of the true
position (pieces, side to move, castling rights, and the en-passant square when a pawn of the
side to move can capture there: FIDE 9.2.2's "same possible moves", i.e. equal Zobrist keys) and
the 50-move rule (100 plies without a pawn move or capture) end the game in a draw at once;
nobody claims them, the holder of the true position declares them. A side to move with no FoW
move at all draws (chess.com documents no rule; OpenSpiel `dark_chess` and Fairy-Stockfish's
`fogofwar` score it a draw; see docs/fow.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum

import numpy as np

from caligo.fow.errors import GameOverError, MoveError
from caligo.fow.movegen import legal_moves
from caligo.fow.notation import PgnGame, parse_san, read_pgn, write_pgn
from caligo.fow.position import (
    BLACK,
    STARTING_FEN,
    UNDO_WORDS,
    WHITE,
    from_fen,
    halfmove_clock,
    make_move,
    missing_king,
    move_from_uci,
    move_to_uci,
    to_fen,
    zobrist_key,
)

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
    """How a game ended: result text, reason, winner (WHITE, BLACK or None for a draw)."""

    result: str
    termination: Termination
    winner: int | None


class Game:
    """The true position, the move history and the result of one FoW game."""

    def __init__(self, fen: str = STARTING_FEN) -> None:
        self.start_fen = fen
        self._positions: list[np.ndarray] = [from_fen(fen)]
        self._moves: list[int] = []
        self._captures: list[int] = []
        self._keys: Counter[int] = Counter([int(zobrist_key(self._positions[0]))])
        self._outcomes: list[Outcome | None] = [self._judge()]

    # --- state -----------------------------------------------------------------------------

    @property
    def position(self) -> np.ndarray:
        """The current true position (a copy: the record cannot be changed through it)."""
        return self._positions[-1].copy()

    @property
    def positions(self) -> list[np.ndarray]:
        """Copies of the true position before the first move and after every ply."""
        return [p.copy() for p in self._positions]

    @property
    def moves(self) -> list[int]:
        """The moves played (uint16 codes as ints)."""
        return list(self._moves)

    @property
    def captures(self) -> list[int]:
        """Per ply, the captured piece code (color*6+piece) or -1."""
        return list(self._captures)

    @property
    def ply(self) -> int:
        """Number of plies played."""
        return len(self._moves)

    @property
    def turn(self) -> int:
        """Side to move (WHITE or BLACK)."""
        return int(self._positions[-1][12])

    @property
    def outcome(self) -> Outcome | None:
        """The outcome once the game is over, else None."""
        return self._outcomes[-1]

    def is_over(self) -> bool:
        """Return True once the game has ended."""
        return self._outcomes[-1] is not None

    @property
    def result(self) -> str:
        """ "1-0", "0-1", "1/2-1/2", or "*" while the game goes on."""
        out = self._outcomes[-1]
        return "*" if out is None else out.result

    def fen(self) -> str:
        """FEN of the true position."""
        return to_fen(self._positions[-1])

    def legal_moves(self) -> list[int]:
        """The FoW moves of the side to move; [] once the game is over."""
        if self.is_over():
            return []
        return legal_moves(self._positions[-1])

    def repetitions(self) -> int:
        """How often the current true position has occurred (including now)."""
        return self._keys[int(zobrist_key(self._positions[-1]))]

    # --- play ------------------------------------------------------------------------------

    def push(self, move: int) -> Outcome | None:
        """Play a FoW move; return the outcome if it ended the game.

        Raises GameOverError after the end and MoveError for a move not in the FoW move set.
        """
        if self.is_over():
            raise GameOverError(f"game is over ({self.result}); cannot play {move_to_uci(move)!r}")
        move = int(move)
        if move not in legal_moves(self._positions[-1]):
            raise MoveError(f"illegal move in {self.fen()!r}: {move_to_uci(move)!r}")
        pos = self._positions[-1].copy()
        captured = int(make_move(pos, move, np.empty(UNDO_WORDS, dtype=np.uint64)))
        self._positions.append(pos)
        self._moves.append(move)
        self._captures.append(captured)
        self._keys[int(zobrist_key(pos))] += 1
        self._outcomes.append(self._judge())
        return self._outcomes[-1]

    def push_uci(self, uci: str) -> Outcome | None:
        """Play a move given in UCI (raises MoveError / GameOverError)."""
        if self.is_over():
            raise GameOverError(f"game is over ({self.result}); cannot play {uci!r}")
        return self.push(move_from_uci(self._positions[-1], uci))

    def push_san(self, san: str) -> Outcome | None:
        """Play a move given in SAN (raises MoveError / GameOverError)."""
        if self.is_over():
            raise GameOverError(f"game is over ({self.result}); cannot play {san!r}")
        return self.push(parse_san(self._positions[-1], san))

    def pop(self) -> int:
        """Take back the last move and return it."""
        if not self._moves:
            raise MoveError("no move to take back")
        pos = self._positions.pop()
        key = int(zobrist_key(pos))
        self._keys[key] -= 1
        if self._keys[key] == 0:
            del self._keys[key]
        self._captures.pop()
        self._outcomes.pop()
        return self._moves.pop()

    def _judge(self) -> Outcome | None:
        pos = self._positions[-1]
        loser = int(missing_king(pos))
        if loser >= 0:
            winner = BLACK if loser == WHITE else WHITE
            return Outcome("1-0" if winner == WHITE else "0-1", Termination.KING_CAPTURE, winner)
        if self._keys[int(zobrist_key(pos))] >= REPETITIONS:
            return Outcome("1/2-1/2", Termination.THREEFOLD_REPETITION, None)
        if halfmove_clock(pos) >= FIFTY_MOVE_PLIES:
            return Outcome("1/2-1/2", Termination.FIFTY_MOVES, None)
        if not legal_moves(pos):
            return Outcome("1/2-1/2", Termination.NO_MOVES, None)
        return None

    # --- PGN -------------------------------------------------------------------------------

    def to_pgn(self, headers: dict[str, str] | None = None) -> str:
        """Return the game as PGN with `[Variant "Fog of War"]` (and a Termination tag)."""
        tags = dict(headers or {})
        out = self.outcome
        if out is not None:
            tags.setdefault("Termination", out.termination.value)
        return write_pgn(self._moves, self.start_fen, tags, self.result)

    @classmethod
    def from_pgn(cls, text: str) -> Game:
        """Replay the single game of a PGN text (raises PgnError / MoveError)."""
        return cls.from_pgn_game(read_pgn(text))

    @classmethod
    def from_pgn_game(cls, pgn: PgnGame) -> Game:
        """Replay a parsed PGN game."""
        game = cls(pgn.start_fen)
        for m in pgn.moves:
            game.push(m)
        return game


__all__ = ["FIFTY_MOVE_PLIES", "REPETITIONS", "Game", "Outcome", "Termination"]
