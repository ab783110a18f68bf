"""What a browser may send: the request bodies of the REST routes (Pydantic models, checked
after `caligo.agents.untrusted_json` has parsed the bytes within its limits) and the frames of
a seat's WebSocket. Anything malformed raises `BadRequestError` quoting the input; nothing
here touches a game."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from caligo.agents.base import UNTIMED, TcKind, TimeControl
from caligo.agents.ladder import LEVELS
from caligo.agents.untrusted_json import UntrustedJsonError, loads_untrusted
from caligo.web.config import (
    MAX_INCREMENT_MS,
    MAX_INITIAL_MS,
    MAX_ITERATIONS,
    MAX_MOVETIME_MS,
    MIN_INITIAL_MS,
)
from caligo.web.errors import BadRequestError


class ColorChoice(Enum):
    """The colour a player asks for."""

    WHITE = "white"
    BLACK = "black"
    RANDOM = "random"


class GameRequestBody(BaseModel):
    """The body of `POST /api/games`: `{"color": ..., "tc": "3+2"|"none", "strength":
    "mt=1"|"iters=N"|"level=N"}`, every field optional (no strength: the server's default),
    nothing else; strict types (a number is not a time control)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    color: Literal["white", "black", "random"] = "random"
    tc: str = "none"
    strength: str | None = None
    """Absent: the server's default; never null."""

    @field_validator("strength", mode="before")
    @classmethod
    def _given_not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("a strength is a string (mt=..., iters=... or level=...)")
        return value


class RematchBody(BaseModel):
    """The body of `POST /api/games/{id}/rematch`: `{"seat": TOKEN}`, the finished game's seat.
    Any value is taken here: what is not a token of the game is a seat refusal (403, as a
    wrong token), not a malformed request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seat: Any


def validate_body(model: type[BaseModel], data: Any, what: str) -> Any:
    """`data` (parsed JSON) as `model`; BadRequestError naming the first field at fault and
    quoting its value."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        kind, loc = first["type"], first["loc"]
        if kind == "model_type":
            raise BadRequestError(f"{what} is a JSON object, got {short(data)}") from None
        if kind == "extra_forbidden":
            extra = sorted(k for k in data if k not in model.model_fields)
            raise BadRequestError(f"unknown field(s) in {what}: {extra!r}") from None
        field = ".".join(str(part) for part in loc)
        raise BadRequestError(
            f"invalid {field} {short(first.get('input'))} in {what}: {first['msg']}"
        ) from None


@dataclass(frozen=True)
class GameRequest:
    """A new game as the lobby form asks for it (checked: `from_json`): a strength is a
    budget (`strength`) or a level of the ladder (`level`), at most one; neither is the
    server's default (`GameHub.engine_for`)."""

    color: ColorChoice = ColorChoice.RANDOM
    time_control: TimeControl = UNTIMED
    strength: TimeControl | None = None
    level: int | None = None

    @classmethod
    def from_json(cls, data: Any) -> GameRequest:
        """Parse a `GameRequestBody` and check its time control (a clock or none, within
        `MIN_INITIAL_MS`, `MAX_INITIAL_MS` and `MAX_INCREMENT_MS`) and strength (a move time
        or an iteration count, within `MAX_MOVETIME_MS` and `MAX_ITERATIONS`, or a level of
        the ladder)."""
        body = validate_body(GameRequestBody, data, "a game request")
        tc = _parse_tc(body.tc, "time control")
        if tc.kind not in (TcKind.NONE, TcKind.CLOCK):
            raise BadRequestError(f"a game's time control is a clock or none, got {str(tc)!r}")
        if tc.initial_ms > MAX_INITIAL_MS or tc.increment_ms > MAX_INCREMENT_MS:
            raise BadRequestError(f"time control too long: {str(tc)!r}")
        if tc.kind is TcKind.CLOCK and tc.initial_ms < MIN_INITIAL_MS:
            raise BadRequestError(f"time control too short: {str(tc)!r} (a clock starts with "
                                  f"at least {MIN_INITIAL_MS // 1000} s)")
        if body.strength is None:
            return cls(ColorChoice(body.color), tc)
        if body.strength.startswith("level="):
            return cls(ColorChoice(body.color), tc, level=_parse_level(body.strength))
        strength = _parse_tc(body.strength, "engine strength")
        if strength.kind not in (TcKind.MOVETIME, TcKind.ITERATIONS):
            raise BadRequestError(f"engine strength is mt=SECONDS or iters=N, got "
                                  f"{body.strength!r}")
        if strength.movetime_ms > MAX_MOVETIME_MS or strength.iterations > MAX_ITERATIONS:
            raise BadRequestError(f"engine strength too large: {str(strength)!r}")
        return cls(ColorChoice(body.color), tc, strength)


def _parse_level(text: str) -> int:
    digits = text.removeprefix("level=")
    number = int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 4 else 0
    if not 1 <= number <= len(LEVELS):
        raise BadRequestError(f"invalid engine strength {short(text)}: a level is level=1 to "
                              f"level={len(LEVELS)}")
    return number


def _parse_tc(text: str, what: str) -> TimeControl:
    try:
        return TimeControl.parse(text)
    except ValueError as exc:  # it says "invalid time control: ..." itself
        raise BadRequestError(f"{what}: {exc}") from None


def short(value: Any, limit: int = 80) -> str:
    """`value` quoted (its repr), cut to `limit` characters: how an error names bad input."""
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


# --- a seat's WebSocket frames ---------------------------------------------------------------


class ClientKind(Enum):
    """What a browser may send on its seat's WebSocket."""

    MOVE = "move"
    RESIGN = "resign"
    ABORT = "abort"
    SYNC = "sync"


@dataclass(frozen=True)
class ClientMessage:
    """One parsed browser frame."""

    kind: ClientKind
    uci: str = ""
    ply: int | None = None


_UCI_RE = re.compile(r"^[a-h][1-8][a-h][1-8][nbrq]?$")
_FIELDS = frozenset({"type"})
_MOVE_FIELDS = frozenset({"type", "uci", "ply"})


def parse_client_message(text: Any, max_bytes: int) -> ClientMessage:
    """Parse a browser frame; raise BadRequestError (quoting it) for anything malformed."""
    if not isinstance(text, str):
        raise BadRequestError("only text frames holding JSON are accepted", "bad_frame")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise BadRequestError(f"message too large: {size} bytes (limit {max_bytes})", "too_large")
    try:
        data = loads_untrusted(text, max_bytes=max_bytes)
    except UntrustedJsonError as exc:
        raise BadRequestError(f"invalid JSON: {exc}", "bad_json") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise BadRequestError(f"a message is an object with a type: {short(text)}", "bad_frame")
    try:
        kind = ClientKind(data["type"])
    except ValueError:
        raise BadRequestError(f"unknown message type {data['type']!r}", "bad_type") from None
    allowed = _MOVE_FIELDS if kind is ClientKind.MOVE else _FIELDS
    extra = sorted(str(k) for k in data if k not in allowed)
    if extra:  # e.g. a "game" field: a frame is for its socket's game, never another one
        raise BadRequestError(f"unknown field(s) in a {kind.value!r} message: "
                              f"{short(extra)}", "bad_frame")
    if kind is not ClientKind.MOVE:
        return ClientMessage(kind)
    uci = data.get("uci")
    if not isinstance(uci, str) or not _UCI_RE.match(uci):
        raise BadRequestError(f"invalid move {short(uci)} (UCI such as e2e4)", "bad_move")
    ply = data.get("ply")
    if ply is not None and (not isinstance(ply, int) or isinstance(ply, bool) or ply < 0):
        raise BadRequestError(f"invalid ply {short(ply)}", "bad_move")
    return ClientMessage(kind, uci, ply)


def encode(frame: dict[str, Any]) -> str:
    """One frame as compact JSON text."""
    return json.dumps(frame, separators=(",", ":"))


def error_frame(code: str, message: str) -> dict[str, Any]:
    """The frame telling one client what was wrong with its request."""
    return {"type": "error", "code": code, "message": message}


__all__ = [
    "ClientKind",
    "ClientMessage",
    "ColorChoice",
    "GameRequest",
    "GameRequestBody",
    "RematchBody",
    "encode",
    "error_frame",
    "parse_client_message",
    "short",
    "validate_body",
]
