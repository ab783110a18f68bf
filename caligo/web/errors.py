"""Errors of the web layer; each message quotes the bad input (a request field, a frame)."""

from __future__ import annotations

from caligo.errors import CaligoError


class WebError(CaligoError):
    """Base class of web-layer errors."""


class WebConfigError(WebError, ValueError):
    """An invalid server setting (`WebConfig`); the message quotes it."""


class BadRequestError(WebError, ValueError):
    """A malformed request or WebSocket frame from a browser (answered, never fatal).

    `code` is a short machine-readable tag sent to the client with the message.
    """

    def __init__(self, message: str, code: str = "bad_request") -> None:
        super().__init__(message)
        self.code = code


class SeatError(WebError, PermissionError):
    """A missing, unknown or foreign seat token: the client gets nothing of the game."""


class NotFoundError(WebError, LookupError):
    """No such resource (a game, a piece image)."""


class GameNotFoundError(NotFoundError):
    """No game with the requested id."""


class GameRunningError(WebError):
    """A reveal request for a game that has not ended yet."""


__all__ = [
    "BadRequestError",
    "GameNotFoundError",
    "GameRunningError",
    "NotFoundError",
    "SeatError",
    "WebConfigError",
    "WebError",
]
