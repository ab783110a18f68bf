"""A FoW game record held by whoever holds the true position (the referee).

The rules that end a game (king capture, threefold repetition, the 50-move rule, no move at all)
are in `caligo.fow.outcome`; `Game` applies them after every ply and keeps the history.
"""

from __future__ import annotations

import numpy as np

from caligo.fow.errors import GameOverError, MoveError
from caligo.fow.movegen import legal_moves
from caligo.fow.notation import PgnGame, parse_san, read_pgn, write_pgn
from caligo.fow.outcome import FIFTY_MOVE_PLIES, REPETITIONS, Outcome, Referee, Termination
from caligo.fow.position import (
    STARTING_FEN,
    UNDO_WORDS,
    Position,
    make_move,
    move_from_uci,
    move_to_uci,
    resolve_move,
    to_fen,
)
from caligo.fow.values import Color, Move, MoveLike


def _shown(move: object) -> str:
    if isinstance(move, int) and not isinstance(move, bool) and 0 < move < 1 << 16:
        return repr(move_to_uci(move))
    return repr(str(move))


class Game:
    """The true position, the move history and the result of one FoW game.

    `Game()` starts from the initial position, `Game(fen)` (or `Game(position)`) from another
    one. `push` takes a `Move`, UCI text, a python-chess `chess.Move` or a kernel move code.

    `Game` is the referee's record, which engines and the play layer drive move by move, so
    it hands out moves as the kernels' `uint16` codes (ints: `legal_moves`, `moves`, `pop`),
    exactly what `push` takes back; `move_to_uci(code)` or `Move.from_code(code)` name them,
    and `board()` gives the current position as a `Position`, whose `legal_moves()` are
    `Move`s.
    """

    def __init__(self, fen: str | Position = STARTING_FEN) -> None:
        start = fen if isinstance(fen, Position) else Position(fen)
        self.start_fen = start.fen()
        self._positions: list[np.ndarray] = [start.arr.copy()]
        self._moves: list[int] = []
        self._captures: list[int] = []
        self._referee = Referee()
        self._outcomes: list[Outcome | None] = [self._referee.start(self._positions[0])]

    # --- state -----------------------------------------------------------------------------

    @property
    def position(self) -> np.ndarray:
        """The current true position as a uint64 (16,) array (a copy: the record cannot be
        changed through it). `board()` gives it as a Position."""
        return self._positions[-1].copy()

    def board(self) -> Position:
        """The current true position as a Position (a copy)."""
        return Position(self._positions[-1].copy())

    @property
    def positions(self) -> list[np.ndarray]:
        """Copies of the true position before the first move and after every ply."""
        return [p.copy() for p in self._positions]

    @property
    def moves(self) -> list[int]:
        """The moves played, as kernel uint16 codes."""
        return list(self._moves)

    def move_list(self) -> list[Move]:
        """The moves played, as Moves."""
        return [Move.from_code(m) for m in self._moves]

    @property
    def captures(self) -> list[int]:
        """Per ply, the captured piece code (color*6+piece) or -1."""
        return list(self._captures)

    @property
    def ply(self) -> int:
        """Number of plies played."""
        return len(self._moves)

    @property
    def turn(self) -> Color:
        """Side to move."""
        return Color(int(self._positions[-1][12]))

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
        """The FoW moves of the side to move as kernel codes; [] once the game is over."""
        if self.is_over():
            return []
        return legal_moves(self._positions[-1])

    def repetitions(self) -> int:
        """How often the current true position has occurred (including now)."""
        return self._referee.repetitions(self._positions[-1])

    def __repr__(self) -> str:
        return f"<Game {self.fen()!r} ply={self.ply} result={self.result}>"

    # --- play ------------------------------------------------------------------------------

    def push(self, move: MoveLike) -> Outcome | None:
        """Play a FoW move; return the outcome if it ended the game.

        Raises GameOverError after the end and MoveError for a move not in the FoW move set.
        """
        if self.is_over():
            raise GameOverError(f"game is over ({self.result}); cannot play {_shown(move)}")
        code = resolve_move(self._positions[-1], move)
        pos = self._positions[-1].copy()
        captured = int(make_move(pos, code, np.empty(UNDO_WORDS, dtype=np.uint64)))
        self._positions.append(pos)
        self._moves.append(code)
        self._captures.append(captured)
        self._outcomes.append(self._referee.after(pos))
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
        """Take back the last move and return its code."""
        if not self._moves:
            raise MoveError("no move to take back")
        self._positions.pop()
        self._referee.undo()
        self._captures.pop()
        self._outcomes.pop()
        return self._moves.pop()

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
