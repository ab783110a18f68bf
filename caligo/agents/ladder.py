"""The strength ladder: named levels from a random mover to Obscuro, as one agent, `caligo`.

A player picks a level, not an engine and a budget: ``caligo engine --agent caligo:level=N``, the
web page's strength picker, or ``caligo match --engine caligo:level=N``. Each `Level` is a
registry spec with its own fixed search budget (`iters=N`: the same play on any machine, as
Stockfish's skill levels and lichess's AI levels are fixed settings, not clocks) and a share of
moves played uniformly at random (`noise`), the weakening Stockfish's "Skill Level" applies by
picking weaker MultiPV lines; here it closes the gap between a random mover and the weakest
engine, which wins every game against it.

The levels' ratings come from matches between neighbours, anchored at the random mover = 0
(docs/strength.md, "The strength ladder", with the commands); `LEVELS` is the table those
matches measured, and `caligo strength ladder` chains their results into the ratings.

A level's budget is its own: `LevelAgent` starts its engine with the level's budget whatever
time control the game has, and asks each move with that budget inside the referee's deadline
(`caligo.agents.timing.strength_clock`), so a level never flags and never plays stronger on a
longer clock.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from caligo.agents.base import Agent, Decision
from caligo.agents.options import OptionError, OptionReader
from caligo.agents.resources import EngineResources
from caligo.agents.timing import UNTIMED, Clock, TcKind, TimeControl, strength_clock
from caligo.fow.observation import Observation


@dataclass(frozen=True)
class Level:
    """One rung: `spec` (a registry spec, without a budget), its budget and its noise."""

    number: int
    spec: str
    budget: TimeControl = UNTIMED
    """The engine's budget at every move (`iters=N`), or none for engines whose own settings
    fix their work (Stockfish-PI's depth): those are asked with a count of one, never a time,
    so no level's play depends on the machine or the clock."""
    noise: float = 0.0
    """The share of moves drawn uniformly from the legal moves instead of asking the engine."""
    title: str = ""
    """The level in a player's words (the web page's picker)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.noise <= 1.0:
            raise ValueError(f"level {self.number}: noise must be in [0, 1], got {self.noise!r}")
        if self.budget.kind not in (TcKind.NONE, TcKind.ITERATIONS):
            raise ValueError(f"level {self.number}: a budget is iters=N or none, got "
                             f"{str(self.budget)!r}")

    @property
    def engine_spec(self) -> str:
        """The registry spec of the level's engine, with its budget."""
        if self.budget.kind is TcKind.NONE:
            return self.spec
        return with_option(self.spec, "budget", str(self.budget))


def with_option(spec: str, key: str, value: str) -> str:
    """The registry spec `spec` with `key=value` added to its options."""
    return f"{spec}{',' if ':' in spec else ':'}{key}={value}"


def _iters(n: int) -> TimeControl:
    return TimeControl(TcKind.ITERATIONS, iterations=n)


ONE_STEP = _iters(1)
"""How a level without a budget is asked: a count, so its engine's fixed settings decide."""


LEVELS: tuple[Level, ...] = (
    Level(1, "random", title="random moves"),
    Level(2, "stockfish-pi", noise=0.8, title="a beginner: most of its moves at random"),
    Level(3, "stockfish-pi", noise=0.5, title="a novice: half its moves at random"),
    Level(4, "stockfish-pi", title="Stockfish's move in one position you could be in"),
    Level(5, "zs21", _iters(50), title="ZS21, a short search over the positions you could be in"),
    Level(6, "obscuro:preset=safe", _iters(100), title="Obscuro, 100 search steps"),
    Level(7, "obscuro:preset=safe", _iters(400), title="Obscuro, 400 search steps"),
)
"""The ladder, weakest first; `LEVELS[n - 1].number == n`."""

DEFAULT_LEVEL = 6
"""The level the web page offers first."""


def level(number: int) -> Level:
    """Level `number` (1 to len(LEVELS)); ValueError naming the range otherwise."""
    if not 1 <= number <= len(LEVELS):
        raise ValueError(f"level must be 1 to {len(LEVELS)}, got {number!r}")
    return LEVELS[number - 1]


class LevelAgent:
    """A level's engine at the level's budget, playing `noise` of its moves at random.

    A random move is forced on the engine (`Agent.force`), so its belief and search follow
    the game it is in; the draw uses the game's seed, so a match replays exactly.
    """

    def __init__(self, lvl: Level, inner: Agent, seed: int = 0) -> None:
        self.level = lvl
        self.inner = inner
        self.base_seed = int(seed)
        self._rng = random.Random(f"caligo-level:{lvl.number}:{self.base_seed}:0")

    @classmethod
    def from_options(cls, options: Mapping[str, str],
                     resources: EngineResources | None = None) -> LevelAgent:
        """Build from registry options: `level=N` (1 to 7, default `DEFAULT_LEVEL`), `seed=N`
        (passed to the level's engine too)."""
        from caligo.agents import registry

        opts = OptionReader("caligo", options, ("level", "seed"))
        number = opts.integer("level") if "level" in opts else DEFAULT_LEVEL
        try:
            lvl = level(number)
        except ValueError as exc:
            raise OptionError(f"caligo: {exc}") from None
        seed = opts.integer("seed") if "seed" in opts else 0
        spec = lvl.engine_spec
        if "seed" in opts:
            spec = with_option(spec, "seed", str(seed))
        return cls(lvl, registry.create(spec, resources), seed)

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Start the engine with the level's budget (not the game's time control)."""
        self._rng = random.Random(f"caligo-level:{self.level.number}:{self.base_seed}:{seed}")
        self.inner.new_game(color, start_fen, self.level.budget, seed)

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Pass the observation on."""
        self.inner.observe(observation, own_move)

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """A uniform move with probability `noise` (forced on the engine), else the engine's
        move at the level's budget within the referee's deadline."""
        if self.level.noise > 0.0 and self._rng.random() < self.level.noise:
            move = legal[self._rng.randrange(len(legal))]
            self.inner.force(move)
            return Decision(move, info={"level": self.level.number, "random": True})
        budget = self.level.budget if self.level.budget.kind is TcKind.ITERATIONS else ONE_STEP
        decision = self.inner.act(legal, strength_clock(budget, clock))
        return replace(decision, info={**decision.info, "level": self.level.number})

    def force(self, move: int) -> None:
        """Pass the forced move on."""
        self.inner.force(move)

    def game_over(self, result: str, termination: str) -> None:
        """Pass the result on."""
        self.inner.game_over(result, termination)

    def close(self) -> None:
        """Close the engine."""
        self.inner.close()


__all__ = ["DEFAULT_LEVEL", "LEVELS", "Level", "LevelAgent", "level"]
