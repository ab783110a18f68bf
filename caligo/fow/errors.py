"""Errors raised at the boundary of the FoW rules engine; each message quotes the bad input.

Kernels never raise (they return status codes); the pure-Python layer turns bad input into these.
Every FoW error is a `caligo.errors.CaligoError` (the command line and servers catch that one
class) and a `ValueError` (what code written against the first releases caught).
"""

from __future__ import annotations

from caligo.errors import CaligoError


class FowError(ValueError, CaligoError):
    """Base class of FoW input errors."""


class FenError(FowError):
    """A malformed or impossible FEN; the message quotes the FEN and says what is wrong."""


class MoveError(FowError):
    """An unparsable move, or one not in the FoW move set; the message quotes the move."""


class ColorError(FowError):
    """A value that names no colour (or names one ambiguously); the message quotes it."""


class TooManyMovesError(FowError):
    """A position (built by hand: no FEN `from_fen` accepts can get there) has more FoW moves
    than a move buffer holds; raised instead of dropping moves."""


class PgnError(FowError):
    """A broken PGN; the message quotes the offending text and its line number."""

    def __init__(self, message: str, line: int | None = None, text: str | None = None) -> None:
        self.line = line
        self.text = text
        if line is not None:
            message = f"{message} (line {line}: {text!r})"
        super().__init__(message)


class GameOverError(FowError):
    """A move was played after the game ended."""


__all__ = [
    "ColorError",
    "FenError",
    "FowError",
    "GameOverError",
    "MoveError",
    "PgnError",
    "TooManyMovesError",
]
