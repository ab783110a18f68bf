"""Errors of the web layer; each message quotes the bad input (a request field, a frame)."""

from __future__ import annotations

from caligo.errors import CaligoError


class WebError(CaligoError):
    """Base class of web-layer errors; `code` is the short tag a client receives with the
    message (`{"error": ..., "code": ...}`)."""

    code = "bad_request"


class WebConfigError(WebError, ValueError):
    """An invalid server setting (`WebConfig`); the message quotes it."""

    code = "bad_config"


class BadRequestError(WebError, ValueError):
    """A malformed request or WebSocket frame from a browser (answered, never fatal).

    `code` is a short machine-readable tag sent to the client with the message.
    """

    def __init__(self, message: str, code: str = "bad_request") -> None:
        super().__init__(message)
        self.code = code


class SeatError(WebError, PermissionError):
    """A missing, unknown or foreign seat token: the client gets nothing of the game."""

    code = "forbidden"


class NotFoundError(WebError, LookupError):
    """No such resource (a game, a piece image, a path)."""

    code = "not_found"


class GameNotFoundError(NotFoundError):
    """No game with the requested id."""

    code = "no_such_game"


class GameRunningError(WebError):
    """A reveal request for a game that has not ended yet."""

    code = "game_running"


class RefusedError(WebError):
    """A request refused to protect the server or its players; `code` is a short tag and
    `retry_after` the seconds after which the same request may succeed (None: unknown)."""

    def __init__(self, message: str, code: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


class RateLimitError(RefusedError):
    """A client created games too fast, or has too many running (HTTP 429)."""


class ServerBusyError(RefusedError):
    """The server runs as many games as it may (HTTP 503)."""


class OriginError(RefusedError):
    """A state-changing request from a page of another origin (HTTP 403)."""


class MediaTypeError(RefusedError):
    """A request body that is not declared as JSON (HTTP 415)."""


__all__ = [
    "BadRequestError",
    "GameNotFoundError",
    "GameRunningError",
    "MediaTypeError",
    "NotFoundError",
    "OriginError",
    "RateLimitError",
    "RefusedError",
    "SeatError",
    "ServerBusyError",
    "WebConfigError",
    "WebError",
]
