"""The `caligo-fow` engine protocol v1: JSON lines over stdio (docs/protocol.md).

One JSON object per line, UTF-8, keys in a fixed order, no spaces: the same message always
encodes to the same bytes (the leak tests compare bytes). Unknown fields are ignored; unknown
message types are reported, never fatal. Lines are parsed by `loads_untrusted`: a line longer
than `MAX_LINE_BYTES`, nested deeper than `MAX_DEPTH`, with an integer longer than
`MAX_INT_DIGITS` digits or a non-finite number (`NaN`, `Infinity`, `1e400`) is refused with a
`ProtocolError`, and so is a time outside [0, `MAX_TIME_MS`] in a time control, clock or deadline.

Referee to engine: `hello`, `setoption`, `isready`, `newgame`, `observe`, `go`, `force`,
`gameover`, `quit`. Engine to referee: `hello`, `readyok`, `move`, `info`, `resign`, `error`.
Moves are UCI strings on the wire ("e1g1" for castling); observations are dark FENs
(`Observation.dark_fen`); colours are "white" / "black".

The classes below are the messages; `encode` writes one line, `decode_referee_message` and
`decode_engine_message` parse one line and raise `ProtocolError` quoting it. The referee builds
every message it sends with `caligo.play.session.project`; agents and engines never see the
true position, the opponent's moves, the half-move clock, repetition counts or the match seed.

This module lives in `caligo.agents` (not `caligo.play`) because both sides use it: the referee
(`caligo.play`) and `ExternalAgent` (`caligo.agents.external`), and the layering lets play import
agents but not the reverse (docs/design.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from caligo.agents.base import COLOR_NAMES, Clock, TimeControl, TimeControlError, color_from_name
from caligo.agents.untrusted_json import UntrustedJsonError, loads_untrusted
from caligo.errors import CaligoError
from caligo.fow.observation import Observation, ObservationError, parse_dark_fen

PROTOCOL = "caligo-fow"
VERSION = 1
"""Bumped on every breaking change; an engine answering another version is refused."""
MAX_LINE_BYTES = 1 << 16
"""Longest line either side accepts (64 KiB, newline excluded)."""
MAX_DEPTH = 32
"""Deepest nesting of arrays/objects in a line (a message needs 3; `info` may hold more)."""
MAX_INT_DIGITS = 40
"""Longest integer in a line, in digits (a 64-bit seed needs 20)."""
MAX_TIME_MS = 10**9
"""Largest time (ms, about 11.6 days) or iteration budget in a time control, clock or deadline."""
MAX_SEED = 2**64
"""A `newgame` seed is an integer in [0, MAX_SEED)."""
RESULTS = ("1-0", "0-1", "1/2-1/2", "*")


class ProtocolError(CaligoError, ValueError):
    """A line that is not a valid message; the message quotes the (shortened) line."""


def shorten(text: Any, limit: int = 160) -> str:
    """Return repr(text) cut to `limit` characters (for error messages and logs)."""
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


# --- referee to engine -----------------------------------------------------------------------


@dataclass(frozen=True)
class Hello:
    """First message: the protocol and version the referee speaks."""

    protocol: str = PROTOCOL
    version: int = VERSION

    def to_wire(self) -> dict[str, Any]:
        return {"type": "hello", "protocol": self.protocol, "version": self.version}


@dataclass(frozen=True)
class SetOption:
    """Set an engine option (names come from the engine's `hello`)."""

    name: str
    value: str

    def to_wire(self) -> dict[str, Any]:
        return {"type": "setoption", "name": self.name, "value": self.value}


@dataclass(frozen=True)
class IsReady:
    """Liveness check; the engine answers `readyok` with the same id."""

    id: int

    def to_wire(self) -> dict[str, Any]:
        return {"type": "isready", "id": self.id}


@dataclass(frozen=True)
class NewGame:
    """A game starts: the engine's colour, the public start position, its seed and budget.

    `observation` is the engine's view of the start position (derivable from `start`; sent so
    an engine needs no FoW visibility code of its own).
    """

    game: str
    color: int
    start: str
    seed: int
    time_control: TimeControl
    observation: Observation

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "newgame",
            "game": self.game,
            "color": COLOR_NAMES[self.color],
            "start": self.start,
            "seed": self.seed,
            "time_control": self.time_control.to_dict(),
            "observation": self.observation.dark_fen(),
        }


@dataclass(frozen=True)
class Observe:
    """The engine's observation after ply `ply` (1-based); `own_move` on its own plies."""

    game: str
    ply: int
    own_move: str | None
    observation: Observation

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "observe",
            "game": self.game,
            "ply": self.ply,
            "own_move": self.own_move,
            "observation": self.observation.dark_fen(),
        }


@dataclass(frozen=True)
class Go:
    """Choose the move of ply `ply` among `legal` (UCI, sorted) within `clock`."""

    game: str
    ply: int
    legal: tuple[str, ...]
    clock: Clock

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "go",
            "game": self.game,
            "ply": self.ply,
            "legal": list(self.legal),
            "clock": self.clock.to_dict(),
            "deadline_ms": self.clock.deadline_ms,
        }


@dataclass(frozen=True)
class Force:
    """Ply `ply` is imposed: the engine plays `move` (no answer expected)."""

    game: str
    ply: int
    move: str

    def to_wire(self) -> dict[str, Any]:
        return {"type": "force", "game": self.game, "ply": self.ply, "move": self.move}


@dataclass(frozen=True)
class GameOver:
    """The game ended; after this, diagnostics may be revealed (a separate `analyze`, later)."""

    game: str
    result: str
    termination: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "gameover",
            "game": self.game,
            "result": self.result,
            "termination": self.termination,
        }


@dataclass(frozen=True)
class Quit:
    """The engine exits."""

    def to_wire(self) -> dict[str, Any]:
        return {"type": "quit"}


RefereeMessage = Hello | SetOption | IsReady | NewGame | Observe | Go | Force | GameOver | Quit


# --- engine to referee -----------------------------------------------------------------------


@dataclass(frozen=True)
class OptionInfo:
    """One engine option as announced in `hello`."""

    name: str
    type: str = "string"
    default: Any = None

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "default": self.default}


@dataclass(frozen=True)
class EngineHello:
    """The engine's answer to `hello`: protocol version, name and options."""

    name: str
    protocol: str = PROTOCOL
    version: int = VERSION
    engine_version: str = ""
    author: str = ""
    options: tuple[OptionInfo, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "hello",
            "protocol": self.protocol,
            "version": self.version,
            "name": self.name,
            "engine_version": self.engine_version,
            "author": self.author,
            "options": [o.to_wire() for o in self.options],
        }


@dataclass(frozen=True)
class ReadyOk:
    """Answer to `isready`."""

    id: int

    def to_wire(self) -> dict[str, Any]:
        return {"type": "readyok", "id": self.id}


@dataclass(frozen=True)
class MoveReply:
    """The engine's move for ply `ply`, with optional policy (UCI -> prob), value and info."""

    game: str
    ply: int
    move: str
    policy: Mapping[str, float] = field(default_factory=dict)
    value: float | None = None
    info: Mapping[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "move", "game": self.game, "ply": self.ply}
        out["move"] = self.move
        if self.policy:
            out["policy"] = dict(self.policy)
        if self.value is not None:
            out["value"] = self.value
        if self.info:
            out["info"] = dict(self.info)
        return out


@dataclass(frozen=True)
class InfoReply:
    """Streamed diagnostics while thinking (logged by the referee, never forwarded)."""

    game: str | None
    ply: int | None
    info: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {"type": "info", "game": self.game, "ply": self.ply, **dict(self.info)}


@dataclass(frozen=True)
class ResignReply:
    """The engine gives up the game instead of moving."""

    game: str
    ply: int

    def to_wire(self) -> dict[str, Any]:
        return {"type": "resign", "game": self.game, "ply": self.ply}


@dataclass(frozen=True)
class ErrorReply:
    """The engine could not process a message (or failed to move: the referee forfeits it)."""

    message: str
    game: str | None = None
    ply: int | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "error", "message": self.message}
        if self.game is not None:
            out["game"] = self.game
        if self.ply is not None:
            out["ply"] = self.ply
        return out


EngineMessage = EngineHello | ReadyOk | MoveReply | InfoReply | ResignReply | ErrorReply


@dataclass(frozen=True)
class UnknownMessage:
    """A well-formed object with a type this version does not know (ignored, but reported)."""

    type: str
    data: Mapping[str, Any]


# --- encoding --------------------------------------------------------------------------------


def encode(message: RefereeMessage | EngineMessage) -> str:
    """Return the message as one JSON line (with the trailing newline)."""
    return json.dumps(message.to_wire(), separators=(",", ":"), ensure_ascii=True) + "\n"


def _load(line: str | bytes) -> tuple[dict[str, Any], str]:
    """Return (the JSON object, the line as text); raise ProtocolError quoting the line."""
    if isinstance(line, bytes):
        if len(line.rstrip(b"\r\n")) > MAX_LINE_BYTES:
            raise ProtocolError(f"line longer than {MAX_LINE_BYTES} bytes: {shorten(line)}")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"line is not UTF-8: {shorten(line)}") from None
    else:
        text = line
        if len(text.rstrip("\r\n").encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
            raise ProtocolError(f"line longer than {MAX_LINE_BYTES} bytes: {shorten(text)}")
    text = text.rstrip("\r\n")
    try:
        data = loads_untrusted(
            text, max_bytes=MAX_LINE_BYTES, max_depth=MAX_DEPTH, max_int_digits=MAX_INT_DIGITS
        )
    except UntrustedJsonError as exc:
        raise ProtocolError(str(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ProtocolError(f"not a message object with a 'type': {shorten(text)}")
    return data, text


class _Fields:
    """Typed access to a message's fields; errors quote the line."""

    def __init__(self, data: dict[str, Any], line: str) -> None:
        self.data = data
        self.line = line

    def fail(self, what: str) -> ProtocolError:
        return ProtocolError(f"{self.data['type']!r} message: {what}: {shorten(self.line)}")

    def text(self, key: str, optional: bool = False) -> Any:
        value = self.data.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(f"field {key!r} must be a string")
        return value

    def integer(self, key: str, optional: bool = False) -> Any:
        value = self.data.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"field {key!r} must be an integer")
        return value

    def bounded(self, key: str, low: int, high: int, optional: bool = False) -> Any:
        """An integer field in [low, high]."""
        value = self.integer(key, optional)
        if value is not None and not low <= value <= high:
            raise self.fail(f"field {key!r} must be in [{low}, {high}], got {value}")
        return value

    def times(self, key: str, names: tuple[str, ...]) -> dict[str, Any]:
        """The object `key` (a time control or clock) with its time fields checked.

        Each of `names` that is present must be a whole number in [0, MAX_TIME_MS] (`2500.0`
        is taken as 2500); the result holds integers, so `TimeControl.from_dict` and
        `Clock.from_dict` never see a non-finite, huge, negative or fractional time.
        """
        raw = self.obj(key)
        out = dict(raw)
        for name in names:
            value = raw.get(name)
            if value is None:
                continue
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise self.fail(f"{key}.{name} must be a number, got {shorten(value, 40)}")
            if not 0 <= value <= MAX_TIME_MS:  # NaN fails this too
                raise self.fail(f"{key}.{name} must be in [0, {MAX_TIME_MS}], got {value!r}")
            if isinstance(value, float) and not value.is_integer():
                raise self.fail(f"{key}.{name} must be a whole number, got {value!r}")
            out[name] = int(value)
        return out

    def obj(self, key: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(f"field {key!r} must be an object")
        return value

    def color(self, key: str) -> int:
        try:
            return color_from_name(self.data.get(key))
        except ValueError as exc:
            raise self.fail(str(exc)) from None

    def observation(self, key: str, player: int) -> Observation:
        try:
            return parse_dark_fen(player, self.data.get(key))
        except ObservationError as exc:
            raise self.fail(str(exc)) from None


_TC_FIELDS = ("initial_ms", "increment_ms", "movetime_ms", "iterations")
_CLOCK_FIELDS = ("own_ms", "increment_ms", "movetime_ms", "iterations", "opponent_ms")


def decode_referee_message(
    line: str | bytes, player: int | None = None
) -> RefereeMessage | UnknownMessage:
    """Parse one referee-to-engine line (`player`: the engine's colour, for `observe`)."""
    data, text = _load(line)
    f = _Fields(data, text)
    kind = data["type"]
    if kind == "hello":
        return Hello(protocol=f.text("protocol"), version=f.integer("version"))
    if kind == "setoption":
        value = data.get("value")
        if not isinstance(value, str | int | float | bool):
            raise f.fail("field 'value' must be a string or number")
        return SetOption(name=f.text("name"), value=str(value))
    if kind == "isready":
        return IsReady(id=f.integer("id", optional=True) or 0)
    if kind == "newgame":
        color = f.color("color")
        fields = f.times("time_control", _TC_FIELDS)
        try:
            tc = TimeControl.from_dict(fields or {"kind": "none"})
        except TimeControlError as exc:
            raise f.fail(str(exc)) from None
        return NewGame(
            game=f.text("game"),
            color=color,
            start=f.text("start"),
            seed=f.bounded("seed", 0, MAX_SEED - 1),
            time_control=tc,
            observation=f.observation("observation", color),
        )
    if kind == "observe":
        if player is None:
            raise f.fail("observe before newgame")
        own = f.text("own_move", optional=True)
        return Observe(
            game=f.text("game"),
            ply=f.integer("ply"),
            own_move=own,
            observation=f.observation("observation", player),
        )
    if kind == "go":
        legal = data.get("legal")
        if not isinstance(legal, list) or not all(isinstance(m, str) for m in legal):
            raise f.fail("field 'legal' must be a list of UCI strings")
        fields = f.times("clock", _CLOCK_FIELDS)
        deadline = f.bounded("deadline_ms", 0, MAX_TIME_MS, optional=True)
        try:
            clock = Clock.from_dict(fields or {"kind": "none"}, deadline)
        except TimeControlError as exc:
            raise f.fail(str(exc)) from None
        return Go(game=f.text("game"), ply=f.integer("ply"), legal=tuple(legal), clock=clock)
    if kind == "force":
        return Force(game=f.text("game"), ply=f.integer("ply"), move=f.text("move"))
    if kind == "gameover":
        result = f.text("result")
        if result not in RESULTS:
            raise f.fail(f"unknown result {result!r}")
        return GameOver(game=f.text("game"), result=result, termination=f.text("termination"))
    if kind == "quit":
        return Quit()
    return UnknownMessage(type=kind, data=data)


def _policy(f: _Fields) -> dict[str, float]:
    raw = f.obj("policy")
    out: dict[str, float] = {}
    for key, p in raw.items():
        if not isinstance(p, int | float) or isinstance(p, bool) or not math.isfinite(p):
            raise f.fail(f"policy probability for {key!r} must be a finite number")
        out[key] = float(p)
    return out


def decode_engine_message(line: str | bytes) -> EngineMessage | UnknownMessage:
    """Parse one engine-to-referee line; raise ProtocolError quoting it."""
    data, text = _load(line)
    f = _Fields(data, text)
    kind = data["type"]
    if kind == "hello":
        options = data.get("options", [])
        if not isinstance(options, list):
            raise f.fail("field 'options' must be a list")
        opts = []
        for o in options:
            if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                raise f.fail(f"bad option {shorten(o)}")
            opts.append(OptionInfo(o["name"], str(o.get("type", "string")), o.get("default")))
        return EngineHello(
            name=str(data.get("name", "?")),
            protocol=f.text("protocol"),
            version=f.integer("version"),
            engine_version=str(data.get("engine_version", "")),
            author=str(data.get("author", "")),
            options=tuple(opts),
        )
    if kind == "readyok":
        return ReadyOk(id=f.integer("id", optional=True) or 0)
    if kind == "move":
        value = data.get("value")
        if value is not None and (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
        ):
            raise f.fail("field 'value' must be a finite number")
        return MoveReply(
            game=f.text("game"),
            ply=f.integer("ply"),
            move=f.text("move"),
            policy=_policy(f),
            value=None if value is None else float(value),
            info=f.obj("info"),
        )
    if kind == "info":
        rest = {k: v for k, v in data.items() if k not in ("type", "game", "ply")}
        return InfoReply(
            game=f.text("game", optional=True), ply=f.integer("ply", optional=True), info=rest
        )
    if kind == "resign":
        return ResignReply(game=f.text("game"), ply=f.integer("ply"))
    if kind == "error":
        return ErrorReply(
            message=str(data.get("message", "")),
            game=f.text("game", optional=True),
            ply=f.integer("ply", optional=True),
        )
    return UnknownMessage(type=kind, data=data)


__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_LINE_BYTES",
    "MAX_SEED",
    "MAX_TIME_MS",
    "PROTOCOL",
    "VERSION",
    "EngineHello",
    "EngineMessage",
    "ErrorReply",
    "Force",
    "GameOver",
    "Go",
    "Hello",
    "InfoReply",
    "IsReady",
    "MoveReply",
    "NewGame",
    "Observe",
    "OptionInfo",
    "ProtocolError",
    "Quit",
    "ReadyOk",
    "RefereeMessage",
    "ResignReply",
    "SetOption",
    "UnknownMessage",
    "decode_engine_message",
    "decode_referee_message",
    "encode",
    "shorten",
]
