"""Time controls and clocks (`caligo.agents.timing`): `TimeControl` (none, `iters=N`, `mt=S`
or `INITIAL+INC`; non-finite and huge numbers refused), `TcKind`, `Clock` (what a seat knows
of its time when asked to move) and their errors. The rule that turns them into a move's
limits is `caligo.agents.timing`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from caligo.errors import CaligoError

MAX_MS = 10**9
"""The largest time in a time control or a clock (11.6 days): larger values are refused."""
MAX_ITERATIONS = 10**12
"""The largest iteration budget accepted."""


class TimeControlError(CaligoError, ValueError):
    """A malformed time control text or clock; the message quotes it."""


class TcKind(Enum):
    """How a move's budget is given."""

    NONE = "none"
    """No budget from the referee (the engine's own options decide); only the move timeout."""
    ITERATIONS = "iterations"
    """A fixed search budget in iterations: results do not depend on the machine's speed."""
    MOVETIME = "movetime"
    """A fixed time per move."""
    CLOCK = "clock"
    """A game clock: initial time plus an increment added after every own move."""


_CLOCK_RE = re.compile(r"^(\d+(?:\.\d+)?)(?:\+(\d+(?:\.\d+)?))?$")


def _ms(seconds: str) -> int:
    value = float(seconds)
    if not math.isfinite(value) or value < 0 or value * 1000 > MAX_MS:
        raise ValueError(seconds)
    return round(value * 1000)


def _seconds(ms: int) -> str:
    text = f"{ms / 1000:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _count(value: Any, name: str, limit: int) -> int:
    """An int field of a time control or clock: finite, >= 0, <= limit; TimeControlError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TimeControlError(f"invalid {name}: {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise TimeControlError(f"invalid {name}: {value!r}")
    if not 0 <= value <= limit:
        raise TimeControlError(f"{name} out of range [0, {limit}]: {value!r}")
    return int(value)


@dataclass(frozen=True)
class TimeControl:
    """One side's budget: `none`, `iters=N`, `mt=SECONDS` or `INITIAL+INCREMENT` (seconds).

    Text forms (`TimeControl.parse`, `str`): ``none``; ``iters=4000``; ``mt=2.5`` (move time);
    ``180+2`` or ``0.5+0.05`` or ``60`` (clock, seconds). Times are kept in milliseconds, at
    most `MAX_MS`; non-finite numbers are refused.
    """

    kind: TcKind = TcKind.NONE
    initial_ms: int = 0
    increment_ms: int = 0
    movetime_ms: int = 0
    iterations: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, TcKind):
            raise TimeControlError(f"invalid time control kind: {self.kind!r}")
        for name in ("initial_ms", "increment_ms", "movetime_ms", "iterations"):
            value = getattr(self, name)
            limit = MAX_ITERATIONS if name == "iterations" else MAX_MS
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
                raise TimeControlError(f"invalid time control {name}: {value!r}")
        if self.kind is TcKind.CLOCK and self.initial_ms <= 0:
            raise TimeControlError(f"a clock needs a positive initial time: {self!r}")
        if self.kind is TcKind.MOVETIME and self.movetime_ms <= 0:
            raise TimeControlError(f"a move time must be positive: {self!r}")
        if self.kind is TcKind.ITERATIONS and self.iterations <= 0:
            raise TimeControlError(f"an iteration budget must be positive: {self!r}")

    @classmethod
    def parse(cls, text: str) -> TimeControl:
        """Parse a time control text (see the class docstring); raise TimeControlError."""
        if not isinstance(text, str):
            raise TimeControlError(f"invalid time control: {text!r}")
        t = text.strip().lower()
        try:
            if t in ("none", "inf", "-"):
                return cls()
            for prefix in ("iters=", "iterations="):
                if t.startswith(prefix):
                    digits = t[len(prefix) :]
                    if not digits.isdigit() or len(digits) > 13:
                        raise ValueError(digits)
                    return cls(TcKind.ITERATIONS, iterations=int(digits))
            for prefix in ("mt=", "movetime="):
                if t.startswith(prefix):
                    return cls(TcKind.MOVETIME, movetime_ms=_ms(t[len(prefix) :]))
            match = _CLOCK_RE.match(t)
            if match and len(t) <= 32:
                return cls(
                    TcKind.CLOCK,
                    initial_ms=_ms(match.group(1)),
                    increment_ms=_ms(match.group(2) or "0"),
                )
        except (ValueError, OverflowError, TimeControlError):
            pass
        raise TimeControlError(
            f"invalid time control: {text[:80]!r} (expected none, iters=N, mt=SECONDS or "
            "INITIAL+INCREMENT in seconds, e.g. 180+2)"
        )

    def __str__(self) -> str:
        if self.kind is TcKind.ITERATIONS:
            return f"iters={self.iterations}"
        if self.kind is TcKind.MOVETIME:
            return f"mt={_seconds(self.movetime_ms)}"
        if self.kind is TcKind.CLOCK:
            return f"{_seconds(self.initial_ms)}+{_seconds(self.increment_ms)}"
        return "none"

    def pgn_tag(self) -> str:
        """Return the PGN `TimeControl` value: "180+2", "1/2.5" (move time) or "-"."""
        if self.kind is TcKind.CLOCK:
            return str(self)
        if self.kind is TcKind.MOVETIME:
            return f"1/{_seconds(self.movetime_ms)}"
        return "-"

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form used by the protocol's `newgame` (only the fields that apply)."""
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.kind is TcKind.CLOCK:
            out["initial_ms"] = self.initial_ms
            out["increment_ms"] = self.increment_ms
        elif self.kind is TcKind.MOVETIME:
            out["movetime_ms"] = self.movetime_ms
        elif self.kind is TcKind.ITERATIONS:
            out["iterations"] = self.iterations
        return out

    @classmethod
    def from_dict(cls, data: Any) -> TimeControl:
        """Parse `to_dict` output; raise TimeControlError quoting it."""
        try:
            kind = TcKind(data["kind"])
            return cls(
                kind,
                initial_ms=_count(data.get("initial_ms", 0), "initial_ms", MAX_MS),
                increment_ms=_count(data.get("increment_ms", 0), "increment_ms", MAX_MS),
                movetime_ms=_count(data.get("movetime_ms", 0), "movetime_ms", MAX_MS),
                iterations=_count(data.get("iterations", 0), "iterations", MAX_ITERATIONS),
            )
        except (TypeError, KeyError, ValueError, AttributeError):
            raise TimeControlError(f"invalid time control: {str(data)[:200]}") from None


UNTIMED = TimeControl()
"""No budget from the referee."""


@dataclass(frozen=True)
class Clock:
    """What a seat knows about its time when asked to move (the protocol's `go` clock).

    `remaining_ms` is the own clock (CLOCK only), `opponent_ms` only when the referee shares it,
    `deadline_ms` the longest answer the referee accepts (measured from the request) before it
    declares the move lost on time.
    """

    kind: TcKind = TcKind.NONE
    remaining_ms: int | None = None
    increment_ms: int = 0
    movetime_ms: int | None = None
    iterations: int | None = None
    opponent_ms: int | None = None
    deadline_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form (only the fields that apply)."""
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.kind is TcKind.CLOCK:
            out["own_ms"] = self.remaining_ms
            out["increment_ms"] = self.increment_ms
            if self.opponent_ms is not None:
                out["opponent_ms"] = self.opponent_ms
        elif self.kind is TcKind.MOVETIME:
            out["movetime_ms"] = self.movetime_ms
        elif self.kind is TcKind.ITERATIONS:
            out["iterations"] = self.iterations
        return out

    @classmethod
    def from_dict(cls, data: Any, deadline_ms: int | None = None) -> Clock:
        """Parse `to_dict` output; raise TimeControlError quoting it (non-finite, negative or
        huge numbers included)."""
        try:
            kind = TcKind(data["kind"])

            def opt(key: str, limit: int = MAX_MS) -> int | None:
                value = data.get(key)
                return None if value is None else _count(value, key, limit)

            return cls(
                kind,
                remaining_ms=opt("own_ms"),
                increment_ms=_count(data.get("increment_ms", 0), "increment_ms", MAX_MS),
                movetime_ms=opt("movetime_ms"),
                iterations=opt("iterations", MAX_ITERATIONS),
                opponent_ms=opt("opponent_ms"),
                deadline_ms=None if deadline_ms is None else _count(deadline_ms, "deadline_ms",
                                                                     MAX_MS),
            )
        except (TypeError, KeyError, ValueError, AttributeError):
            raise TimeControlError(f"invalid clock: {str(data)[:200]}") from None

    def aged(self, elapsed_ms: float) -> Clock:
        """This clock `elapsed_ms` later (a request that waited before it reached the engine):
        the own time and the deadline shrink, nothing else changes."""
        ms = max(0, math.ceil(elapsed_ms))
        rem = self.remaining_ms
        return replace(
            self,
            remaining_ms=None if rem is None else max(0, rem - ms),
            deadline_ms=None if self.deadline_ms is None else max(0, self.deadline_ms - ms),
        )
