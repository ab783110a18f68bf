"""The agent interface: what every Fog of War player offers the referee (docs/design.md, "Agents").

Model: OpenSpiel's bot API (`open_spiel/spiel_bots.h`: `Step`, `InformAction`, `RestartAt`,
`ForceAction`, `StepWithPolicy`), made push-style and observation-only as reconchess's `Player`
is (docs/design.md, "The engine protocol"). An agent never sees the true position: it is built from
its own observations, its own moves and the public start position, so everything it decides is a
function of its transcript (Obscuro, appendix A: a player always knows their exact set of legal
moves).

Call order for one game (the referee, `caligo.play`, guarantees it)::

    new_game(color, start_fen, time_control, seed)
    for every ply 1, 2, ... until the game ends:
        if it is the agent's turn:  act(legal, clock) -> Decision     (or force(move))
        observe(observation, own_move)       # after EVERY ply: own_move is the agent's move
                                             # on its own plies and None on the opponent's
    game_over(result, termination)
    ... new_game(...) again for the next game ...
    close()                                  # once, when the agent is no longer needed

Moves are `caligo.fow` move codes (uint16 values as Python ints, layout in
`caligo.fow.position`); colours are `WHITE = 0` and `BLACK = 1`. `Decision` carries the chosen
move, the policy it was drawn from, a value and free-form diagnostics that the referee keeps
from the opponent until the game is over.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from caligo.errors import CaligoError
from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.errors import MoveError
from caligo.fow.observation import Observation
from caligo.fow.position import (
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_NORMAL,
    KIND_PROMOTION,
    KING,
    MOVE_NONE,
    PAWN,
)
from caligo.fow.view import legal_moves_uci


class TimeControlError(CaligoError, ValueError):
    """A malformed time control text; the message quotes it."""


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
    return round(float(seconds) * 1000)


def _seconds(ms: int) -> str:
    text = f"{ms / 1000:.3f}".rstrip("0").rstrip(".")
    return text or "0"


@dataclass(frozen=True)
class TimeControl:
    """One side's budget: `none`, `iters=N`, `mt=SECONDS` or `INITIAL+INCREMENT` (seconds).

    Text forms (`TimeControl.parse`, `str`): ``none``; ``iters=4000``; ``mt=2.5`` (move time);
    ``180+2`` or ``0.5+0.05`` or ``60`` (clock, seconds). Times are kept in milliseconds.
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
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
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
                    return cls(TcKind.ITERATIONS, iterations=int(t[len(prefix) :]))
            for prefix in ("mt=", "movetime="):
                if t.startswith(prefix):
                    return cls(TcKind.MOVETIME, movetime_ms=_ms(t[len(prefix) :]))
            match = _CLOCK_RE.match(t)
            if match:
                return cls(
                    TcKind.CLOCK,
                    initial_ms=_ms(match.group(1)),
                    increment_ms=_ms(match.group(2) or "0"),
                )
        except (ValueError, TimeControlError):
            pass
        raise TimeControlError(
            f"invalid time control: {text!r} (expected none, iters=N, mt=SECONDS or "
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
                initial_ms=int(data.get("initial_ms", 0)),
                increment_ms=int(data.get("increment_ms", 0)),
                movetime_ms=int(data.get("movetime_ms", 0)),
                iterations=int(data.get("iterations", 0)),
            )
        except (TypeError, KeyError, ValueError, AttributeError):
            raise TimeControlError(f"invalid time control: {data!r}") from None


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
        """Parse `to_dict` output; raise TimeControlError quoting it."""
        try:
            kind = TcKind(data["kind"])

            def opt(key: str) -> int | None:
                value = data.get(key)
                return None if value is None else int(value)

            return cls(
                kind,
                remaining_ms=opt("own_ms"),
                increment_ms=int(data.get("increment_ms", 0)),
                movetime_ms=opt("movetime_ms"),
                iterations=opt("iterations"),
                opponent_ms=opt("opponent_ms"),
                deadline_ms=deadline_ms,
            )
        except (TypeError, KeyError, ValueError, AttributeError):
            raise TimeControlError(f"invalid clock: {data!r}") from None


@dataclass(frozen=True)
class Decision:
    """An agent's answer to `act`: the move and what it knows about it.

    `policy` maps moves to probabilities over the legal moves (empty when not reported);
    `value` is the agent's estimate for itself in [-1, 1] (None when not reported); `info` is
    free-form but JSON-serialisable diagnostics (belief size, nodes, iterations, depth, gadget,
    elapsed, ...). The referee keeps policy, value and info from the opponent until the game
    is over. `resign=True` gives the game up (the move is then ignored).
    """

    move: int
    policy: Mapping[int, float] = field(default_factory=dict)
    value: float | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    resign: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.move, int) or isinstance(self.move, bool):
            raise TypeError(f"Decision.move must be an int move code, got {self.move!r}")
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError(f"Decision.value must be finite, got {self.value!r}")
        if self.info:
            try:
                json.dumps(self.info)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"Decision.info must be JSON-serialisable: {exc}") from None

    @classmethod
    def resignation(cls, info: Mapping[str, Any] | None = None) -> Decision:
        """Return a decision that resigns the game."""
        return cls(MOVE_NONE, info=dict(info or {}), resign=True)


@runtime_checkable
class Agent(Protocol):
    """A FoW player; see the module docstring for the call order."""

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Start a game as `color` from the public `start_fen`; `seed` is this game's seed."""
        ...

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Receive the observation after a ply (own_move: this agent's move, else None)."""
        ...

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Choose a move among `legal` (never empty) within `clock`'s budget."""
        ...

    def force(self, move: int) -> None:
        """Play `move` at this turn instead of choosing (opening books, exploitability DFS)."""
        ...

    def game_over(self, result: str, termination: str) -> None:
        """The game ended: result "1-0", "0-1", "1/2-1/2" or "*", and why."""
        ...

    def close(self) -> None:
        """Release processes, threads and memory; the agent is not used afterwards."""
        ...


class AgentBase:
    """Bookkeeping most agents share: colour, start, budget, seed and the observation history.

    Subclasses implement `act`; they may extend the other methods (call `super()`).
    """

    def __init__(self) -> None:
        self.color = 0
        self.start_fen = ""
        self.time_control = UNTIMED
        self.seed = 0
        self.history: list[tuple[int | None, Observation]] = []

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Remember the game's public facts and clear the history."""
        self.color = int(color)
        self.start_fen = start_fen
        self.time_control = time_control
        self.seed = int(seed)
        self.history = []

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Append (own_move, observation) to the history."""
        self.history.append((own_move, observation))

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:  # pragma: no cover
        raise NotImplementedError

    def force(self, move: int) -> None:
        """Nothing to do: the move comes back in the next `observe`."""

    def game_over(self, result: str, termination: str) -> None:
        """Nothing to do by default."""

    def close(self) -> None:
        """Nothing to release by default."""


_SQUARE_INDEX = {name: sq for sq, name in enumerate(SQUARE_NAMES)}
_PROMO_INDEX = {"n": 0, "b": 1, "r": 2, "q": 3}


def observed_moves(obs: Observation, ucis: Sequence[str]) -> list[int]:
    """Return the move codes of `ucis` for the observer of `obs` (who must be to move).

    The move kind comes from the observation alone: the piece on the from-square is the
    observer's own; a king moving two files is castling; a pawn moving diagonally onto the
    observation's en-passant square captures en passant; five characters promote. Raise
    MoveError for malformed text or a from-square without an own piece. Legality is the
    caller's business (compare with `legal_moves(obs)`).
    """
    base = obs.player * 6
    pieces = obs.pieces
    own = 0
    for code in range(base, base + 6):
        own |= pieces[code]
    pawns = pieces[base + PAWN]
    kings = pieces[base + KING]
    ep = obs.ep_square
    last_rank = 7 if obs.player == 0 else 0
    out = []
    for uci in ucis:
        frm = _SQUARE_INDEX.get(uci[0:2], -1) if isinstance(uci, str) else -1
        to = _SQUARE_INDEX.get(uci[2:4], -1) if isinstance(uci, str) else -1
        if frm < 0 or to < 0 or len(uci) not in (4, 5):
            raise MoveError(f"invalid uci: {uci!r}")
        if not (own >> frm) & 1:
            raise MoveError(f"no own piece on the from-square of {uci!r}")
        if len(uci) == 5:
            promo = _PROMO_INDEX.get(uci[4], -1)
            if promo < 0 or not (pawns >> frm) & 1 or to >> 3 != last_rank:
                raise MoveError(f"invalid uci: {uci!r}")
            out.append(frm | (to << 6) | (promo << 12) | (KIND_PROMOTION << 14))
            continue
        kind = KIND_NORMAL
        if (kings >> frm) & 1 and abs((frm & 7) - (to & 7)) == 2:
            kind = KIND_CASTLING
        elif to == ep and (pawns >> frm) & 1 and (frm & 7) != (to & 7):
            kind = KIND_EN_PASSANT
        out.append(frm | (to << 6) | (kind << 14))
    return out


def observed_move(obs: Observation, uci: str) -> int:
    """Return the move code of one UCI move for the observer of `obs` (see `observed_moves`)."""
    return observed_moves(obs, (uci,))[0]


def legal_moves(obs: Observation) -> list[int]:
    """Return the observer's legal move codes, from the observation alone (sorted by UCI)."""
    return observed_moves(obs, legal_moves_uci(obs))


COLOR_NAMES = ("white", "black")
"""Colour names on the wire and in files, indexed by WHITE = 0 and BLACK = 1."""


def color_from_name(name: Any) -> int:
    """Return WHITE or BLACK for "white" / "black"; raise ValueError quoting anything else."""
    if name == "white":
        return 0
    if name == "black":
        return 1
    raise ValueError(f"invalid colour: {name!r} (expected 'white' or 'black')")


__all__ = [
    "COLOR_NAMES",
    "UNTIMED",
    "Agent",
    "AgentBase",
    "Clock",
    "Decision",
    "TcKind",
    "TimeControl",
    "TimeControlError",
    "color_from_name",
    "legal_moves",
    "observed_move",
    "observed_moves",
]
