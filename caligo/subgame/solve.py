"""Solve a gadget game (tree, B): exactly by sequence-form LP, approximately by the CFR family.

- `SolveMethod.LP`: `caligo.core.lp.solve_player(gadget, 0, floors, extra=B)` (HiGHS). For a
  Maxmargin gadget this is Ha 2016's LP (I.2): maximize m subject to v_I - m >= CBV(I) at every
  root infoset, written as a game (the player-1 root choice is the min over root infosets);
  for a Resolve gadget it is (H.1) with the EXIT options; for unsafe solving it is the endgame
  LP of Ha 2016, section G.3.
- `SolveMethod.CFR`: a `caligo.core.cfr.CFRSolver` run on the gadget with B folded into the
  sequence-form traversal as extra payoff entries (B[s0, s1] is one more (s0, s1, coefficient)
  term, exactly like a chance-weighted terminal). Needs `Traversal.SEQUENCE_FORM`.

Both give a `SubgameSolution`: player 0's gadget strategy (player 1's part: a best response in
the gadget), the gadget value for player 0, and the margins M(I0) = u*(x'|I0) - u*(x|I0) per
root infoset (`caligo.subgame.gadget.subgame_margins`).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

import numpy as np

from caligo.core import cfr as cfr_mod
from caligo.core.best_response import best_response
from caligo.core.lp import TieBreak, solve_player
from caligo.core.strategy import check_strategy, uniform_strategy
from caligo.core.tree import FloatArray
from caligo.subgame.gadget import Subgame, SubgameError, subgame_margins


class SolveMethod(enum.Enum):
    """How to solve a gadget."""

    LP = "lp"
    CFR = "cfr"


@dataclass(frozen=True)
class CFRSettings:
    """CFR run for `SolveMethod.CFR`: configuration, iterations, and which iterate to return."""

    config: cfr_mod.CFRConfig = dataclasses.field(default_factory=cfr_mod.CFRConfig.cfr_plus)
    iterations: int = 1000
    use_average: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.config, cfr_mod.CFRConfig):
            raise SubgameError(f"config must be a CFRConfig, got {self.config!r}")
        if self.config.traversal is not cfr_mod.Traversal.SEQUENCE_FORM:
            raise SubgameError("gadgets with extra payoffs need Traversal.SEQUENCE_FORM")
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, int) or (
            self.iterations < 0
        ):
            raise SubgameError(f"iterations must be a nonnegative int, got {self.iterations!r}")


@dataclass(frozen=True, eq=False)
class SubgameSolution:
    """A solved gadget.

    strategy: a profile over the gadget's slots (player 0 the solution, player 1 a best
    response to it in the gadget). value: player 0's value of the strategy in the gadget
    (against that best response, B included). margins: M(I0) per root infoset, in the order of
    `Subgame.root_kinfo`.
    """

    method: SolveMethod
    strategy: FloatArray
    value: float
    margins: FloatArray
    iterations: int

    def __repr__(self) -> str:
        its = f", {self.iterations} iterations" if self.method is SolveMethod.CFR else ""
        return (f"<SubgameSolution {self.method.value}{its}: value {self.value:.6g}, "
                f"min margin {self.min_margin:.6g}>")

    @property
    def min_margin(self) -> float:
        """The subgame margin of Ha 2016, Definition 5 (inf if there are no roots)."""
        return float(self.margins.min()) if self.margins.size else float("inf")


def cfr_solver(sub: Subgame, settings: CFRSettings | None = None,
               initial: FloatArray | None = None) -> cfr_mod.CFRSolver:
    """A CFR solver over the gadget whose sequence-form payoffs include B."""
    st = settings if settings is not None else CFRSettings()
    return cfr_mod.CFRSolver(sub.tree, st.config, initial, extra=sub.extra)


def _finish(sub: Subgame, method: SolveMethod, strat0: FloatArray, iterations: int,
            ) -> SubgameSolution:
    br = best_response(sub.tree, strat0, 1, extra=sub.extra)
    return SubgameSolution(
        method=method,
        strategy=br.strategy,
        value=br.value,
        margins=subgame_margins(sub, br.strategy),
        iterations=iterations,
    )


def solve_subgame(
    sub: Subgame,
    method: SolveMethod = SolveMethod.LP,
    floors: FloatArray | None = None,
    cfr: CFRSettings | None = None,
    *,
    tie_break: TieBreak = TieBreak.SIMPLEX,
    rng: np.random.Generator | None = None,
) -> SubgameSolution:
    """Solve the gadget for player 0 (LP with optional per-slot floors, or CFR).

    With the LP, `tie_break` (and `rng` for `TieBreak.RANDOM`) chooses among optimal solutions.
    """
    if not isinstance(method, SolveMethod):
        raise SubgameError(f"method must be a SolveMethod, got {method!r}")
    if sub.tree.num_infosets == 0 or len(sub.tree.infosets_of(0)) == 0:
        strat = uniform_strategy(sub.tree)
        return _finish(sub, method, strat, 0)
    if method is SolveMethod.LP:
        res = solve_player(sub.tree, 0, floors=floors, extra=sub.extra, tie_break=tie_break,
                           rng=rng)
        return _finish(sub, method, res.strategy, 0)
    if floors is not None:
        raise SubgameError("floors are only supported with SolveMethod.LP")
    st = cfr if cfr is not None else CFRSettings()
    solver = cfr_solver(sub, st)
    solver.iterate(st.iterations)
    strat = solver.average_strategy() if st.use_average else solver.current_strategy()
    return _finish(sub, method, check_strategy(sub.tree, strat), st.iterations)
