"""Errors of the play layer (referee, storage, match runner); each message quotes the bad input."""

from __future__ import annotations

from caligo.errors import CaligoError


class PlayError(CaligoError):
    """Base class of play-layer errors."""


class SessionError(PlayError, ValueError):
    """A request the game session cannot honour (not your turn, game over, unknown colour)."""


class IllegalMoveError(SessionError):
    """A move outside the mover's legal set; `uci` is the move as given."""

    def __init__(self, message: str, uci: str) -> None:
        super().__init__(message)
        self.uci = uci


class StorageError(PlayError, ValueError):
    """A missing game or seat, or a read the storage refuses (e.g. a reveal before the end)."""


class MatchConfigError(PlayError, ValueError):
    """A malformed match option (engine spec, SPRT text, openings file...)."""
