"""`ZS21Config` (frozen, validated), its enums, the budget of one decision, and the result.

Defaults are Zhang & Sandholm 2021, appendix D's: L = 200 particles, M = 10^7, Reach subgame solving
with transposition merging, Maxmargin first with the switch to Resolve (D.4), exact LP solves.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from caligo.core.lp import TieBreak
from caligo.errors import CaligoError
from caligo.search.config import RootGadget

__all__ = [
    "Penalty",
    "StartMode",
    "ZS21Budget",
    "ZS21Config",
    "ZS21ConfigError",
    "ZS21Error",
    "ZS21Result",
]


class ZS21Error(CaligoError, ValueError):
    """Bad input to the ZS21 search or agent (a state, a belief, an option)."""


class ZS21ConfigError(ZS21Error):
    """A `ZS21Config` or `ZS21Budget` field out of range or of the wrong type."""


class Penalty(enum.Enum):
    """The information-seeking term at our root infoset (Zhang & Sandholm 2021, appendix D.3,
    Algorithm 15 line 20).

    The two copies of the paper disagree. Both add, for each action a at the root infoset I,
    a payoff that depends only on a. They differ by the same constant |I|/M on every action,
    and I is reached with probability 1 by every strategy of the subgame, so both give the
    same optimal strategies; the gadget value differs by exactly |I|/M, and that value decides
    the Maxmargin/Resolve switch (Algorithm 15 lines 24-30). See docs/zs21.md.
    """

    TEXT = "text"  # D.3: a penalty 2^-H(a) |I| / M (payoff -2^-H(a) |I| / M); the default
    ALGORITHM = "algorithm"  # Alg. 15 line 20: B[Ia, 0] = (1 - 2^-H(a)) |I| / M
    OFF = "off"


class StartMode(enum.Enum):
    """The trunk at the first decision of a game."""

    ROOT_ONLY = "root_only"  # Algorithm 15 as written: the trunk is the start node alone
    SOLVE_FROM_START = "solve_from_start"  # first deepen and solve the game from its true
    # start (no gadget), then re-root at our infoset like every later decision


@dataclass(frozen=True)
class ZS21Budget:
    """What one decision may spend; the first limit reached stops the deepening loop.

    seconds: wall time (None: no time limit). expansions: leaf expansions, each adds all
    children of one leaf (None: no limit); with seconds=None the search is deterministic.
    iterations: deepening iterations (LP solve + expansion rounds; None: no limit).
    """

    seconds: float | None = None
    expansions: int | None = 2000
    iterations: int | None = None

    def __post_init__(self) -> None:
        if self.seconds is not None and (
            isinstance(self.seconds, bool) or not isinstance(self.seconds, int | float)
            or not math.isfinite(self.seconds) or self.seconds <= 0
        ):
            raise ZS21ConfigError(f"budget seconds must be a positive number or None, got "
                                  f"{self.seconds!r}")
        for name in ("expansions", "iterations"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer)
                                  or v < 0):
                raise ZS21ConfigError(f"budget {name} must be an int >= 0 or None, got {v!r}")
        if self.seconds is None and self.expansions is None and self.iterations is None:
            raise ZS21ConfigError("a budget needs at least one limit (seconds, expansions or "
                                  "iterations)")

    @property
    def deterministic(self) -> bool:
        """No wall-clock limit: the same inputs give the same search."""
        return self.seconds is None


@dataclass(frozen=True)
class ZS21Config:
    """Every knob of the ZS21 search (Zhang & Sandholm 2021, appendix D); validated at construction.

    particles: L, the least number of subgame roots in our infoset (D.3). penalty_m: M.
    penalty: which form of the information-seeking term (`Penalty`). merge_transpositions:
    Algorithm 12 lines 10-14. shuffle_merge: visit root infosets in random order when merging
    (line 11's advice; off for reproducing a fixed order). gifts: Reach subgame solving
    (line 22). budget: the default per-decision budget (an agent's clock overrides it).
    start: the first decision's trunk. expand_all: every iteration expands every leaf instead of
    following D.2's rules (small games: a fully expanded trunk). max_nodes: the trunk's node
    capacity. expand_batch: leaves per game / evaluator call. tie_break: which optimal LP
    solution (`caligo.core.lp`); `canonical=True` instead picks the vertex of the optimal face
    minimizing a fixed generic linear objective keyed by (infoset key, action), so two
    formulations of one subgame give the same strategy (the tests compare with
    `caligo.subgame.nested` this way).
    switch_tol: the Maxmargin value must be below -switch_tol to switch to Resolve (LP noise).
    seed: the root of every random choice.
    """

    particles: int = 200
    penalty_m: float = 1e7
    penalty: Penalty = Penalty.TEXT
    merge_transpositions: bool = True
    shuffle_merge: bool = True
    gifts: bool = True
    budget: ZS21Budget = ZS21Budget(seconds=1.0, expansions=None)
    start: StartMode = StartMode.ROOT_ONLY
    expand_all: bool = False
    max_nodes: int = 200_000
    expand_batch: int = 32
    tie_break: TieBreak = TieBreak.SIMPLEX
    canonical: bool = False
    switch_tol: float = 1e-9
    seed: int = 0

    def __post_init__(self) -> None:
        for name, kind in (("penalty", Penalty), ("start", StartMode), ("tie_break", TieBreak)):
            if not isinstance(getattr(self, name), kind):
                raise ZS21ConfigError(f"{name} must be a {kind.__name__}, got "
                                      f"{getattr(self, name)!r}")
        if not isinstance(self.budget, ZS21Budget):
            raise ZS21ConfigError(f"budget must be a ZS21Budget, got {self.budget!r}")
        for name, lo in (("particles", 0), ("max_nodes", 64), ("expand_batch", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
                raise ZS21ConfigError(f"{name} must be an int >= {lo}, got {v!r}")
        if self.particles > self.max_nodes:
            raise ZS21ConfigError(f"particles must be at most max_nodes ({self.max_nodes}): the "
                                  f"trunk holds its roots, got {self.particles!r}")
        for name in ("penalty_m", "switch_tol"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ZS21ConfigError(f"{name} must be a finite number, got {v!r}")
        if self.penalty_m <= 0 or self.switch_tol < 0:
            raise ZS21ConfigError(f"penalty_m must be > 0 and switch_tol >= 0, got "
                                  f"{self.penalty_m!r}, {self.switch_tol!r}")
        for name in ("merge_transpositions", "shuffle_merge", "gifts", "canonical", "expand_all"):
            if not isinstance(getattr(self, name), bool):
                raise ZS21ConfigError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise ZS21ConfigError(f"seed must be an int, got {self.seed!r}")


@dataclass(frozen=True, eq=False)
class ZS21Result:
    """One decision of the ZS21 search at our infoset.

    actions: int32[k] the game's action labels at our infoset; policy: float64[k] the exact
    LP strategy there, which the agent samples (ZS21 does not purify). value: our value of the
    subgame's gadget (LP optimum, our utility); infoset_value: our value of the infoset under
    the final (x, y) (û of the next decision). gadget: the gadget of the final solve; switches:
    Maxmargin/Resolve conversions. nodes / infosets: the trunk at the end; carried_nodes: copied
    from the previous trunk; roots: subgame roots; particles: roots sampled from the belief;
    merged: root infosets dropped as transpositions; iterations: deepening iterations;
    expansions: leaf expansions; lp_solves: LP solves (each = our LP + the opponent's);
    lp_seconds, expand_seconds, construct_seconds, seconds: where the time went; depth: the
    deepest trunk node below the roots; penalty: the information term per action (our utility).
    """

    actions: np.ndarray
    policy: np.ndarray
    value: float
    infoset_value: float
    gadget: RootGadget
    switches: int
    nodes: int
    infosets: int
    carried_nodes: int
    roots: int
    particles: int
    merged: int
    iterations: int
    expansions: int
    lp_solves: int
    lp_seconds: float
    expand_seconds: float
    construct_seconds: float
    seconds: float
    depth: int
    penalty: np.ndarray
