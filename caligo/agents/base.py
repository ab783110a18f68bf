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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from caligo.agents.timing import UNTIMED, Clock, TcKind, TimeControl, TimeControlError
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
