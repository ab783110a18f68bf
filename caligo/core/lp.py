"""Exact equilibria by sequence-form linear programming (HiGHS), Ha 2016, chapter E.

Player 0's LP (the dual of the responder's best-response LP min_y {x^T A y : F y = f, y >= 0}):

    maximize f^T q   over x >= 0, q free
    subject to  F^T q - A^T x <= 0,   E x = e,   optional floors below.

Player 1's LP is symmetric. The optimum f^T q is the game value for player 0.

Floors (the epsilon-constrained LP of Zhang & Sandholm 2021, section 7): `floor[slot]` asks
x(Ia) >= floor(Ia) * x(parent(I)), i.e. a behavioral probability of at least floor at every
infoset the player reaches. `epsilon_floors` builds the usual epsilon/|A(I)| floor, with a set of
exempt infosets (the subgame root in Table 1's protocol) and an optional action filter (the
epsilon-bet and epsilon-fold variants). Extra payoff matrices B (gadgets) add to A.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from caligo.core.game import ArgumentError
from caligo.core.sequence_form import sequence_form
from caligo.core.strategy import behavioral_from_realization, uniform_strategy
from caligo.core.tree import FloatArray, GameTree
from caligo.errors import CaligoError

PRIMAL_TOL = 1e-10
"""HiGHS's primal feasibility tolerance in every Caligo LP: a constraint may be off by this much."""

REACH_TOL = 10 * PRIMAL_TOL
"""Player 0's own reach (a realization-plan value, chance left out) at or below this is zero.

Strategies that come out of an LP satisfy its rows only to `PRIMAL_TOL`, so a plan value within
ten times that of 0 cannot be told apart from 0: it is rounding noise (nested solving meets
values like 2e-15 where a gadget LP left an action unplayed). Dividing by such a reach, as a
gadget's normalization would, turns the noise into payoffs of 1e15 that HiGHS rejects.
"""

_HIGHS_OPTIONS = {
    "primal_feasibility_tolerance": PRIMAL_TOL,
    "dual_feasibility_tolerance": 1e-10,
    "presolve": True,
}


class LPError(CaligoError, RuntimeError):
    """HiGHS did not return an optimal solution."""


class TieBreak(enum.Enum):
    """Which optimal solution an LP returns when its optimal face is more than one point.

    Equilibria and gadget solutions are rarely unique, and which one a solver returns can change
    what is built from it (Table 1's "after" column depends on it).

    SIMPLEX: HiGHS's dual simplex, the vertex its pivoting ends on (the default).
    IPM: HiGHS's interior point method, then crossover to a vertex near the centre of the face;
        the paper's Table 1 column comes out with this one.
    RANDOM: a vertex of the optimal face chosen by a random linear objective: first the LP for
        its optimal value, then a second LP minimizing a random Gaussian objective over player
        variables subject to that value (less `PRIMAL_TOL` times its size). Needs an `rng`.
    """

    SIMPLEX = "simplex"
    IPM = "ipm"
    RANDOM = "random"


@dataclass(frozen=True)
class PlayerLPResult:
    """One player's optimal strategy of a (possibly floored) sequence-form LP.

    value: the guaranteed value for player 0 (max-min for player 0, min-max for player 1).
    plan: the player's realization plan; strategy: a full profile holding the player's
    behavioral strategy (the other player's slots are uniform).
    """

    player: int
    value: float
    plan: FloatArray
    strategy: FloatArray

    def __repr__(self) -> str:
        return f"<PlayerLPResult player {self.player}: value {self.value:.9g}>"


@dataclass(frozen=True)
class LPResult:
    """Both players' equilibrium strategies and the game value for player 0."""

    value: float
    plan0: FloatArray
    plan1: FloatArray
    strategy: FloatArray

    def __repr__(self) -> str:
        return (f"<LPResult value {self.value:.9g}: {self.plan0.shape[0]} + "
                f"{self.plan1.shape[0]} sequences>")


def _floor_rows(tree: GameTree, player: int, floors: FloatArray, n_cols: int) -> sp.csr_matrix:
    """Rows floor * x(parent) - x(Ia) <= 0 for every slot of the player with a positive floor."""
    rows, cols, vals = [], [], []
    r = 0
    for g in tree.infosets_of(player):
        off = int(tree.infoset_offset[g])
        first = int(tree.infoset_seq[g])
        parent = int(tree.infoset_parent_seq[g])
        for a in range(int(tree.infoset_num_actions[g])):
            fl = float(floors[off + a])
            if fl > 0.0:
                rows += [r, r]
                cols += [parent, first + a]
                vals += [fl, -1.0]
                r += 1
    return sp.csr_matrix((vals, (rows, cols)), shape=(r, n_cols))


def _highs(cost: FloatArray, A_ub: sp.csr_matrix, b_ub: FloatArray, A_eq: sp.csr_matrix,
           b_eq: FloatArray, bounds: list[tuple[float | None, float | None]], method: str,
           what: str) -> Any:
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                  method=method, options=_HIGHS_OPTIONS)
    if res.status != 0:
        raise LPError(f"{what}: {res.message}")
    return res


def _random_vertex(res: Any, direction: FloatArray, cost: FloatArray, A_ub: sp.csr_matrix,
                   b_ub: FloatArray, A_eq: sp.csr_matrix, b_eq: FloatArray,
                   bounds: list[tuple[float | None, float | None]], what: str) -> FloatArray:
    """Minimize `direction` over the first variables on the optimal face {cost . z <= optimum}.

    The face row gets a slack of 10 * PRIMAL_TOL (relative to the optimum's size): the first
    solution meets its rows only to PRIMAL_TOL, so a tighter face can look infeasible to
    HiGHS's presolve. If it still does, the slack grows a hundredfold, twice.
    """
    objective = np.concatenate([direction, np.zeros(cost.shape[0] - direction.shape[0])])
    face_ub = sp.vstack([A_ub, sp.csr_matrix(cost.reshape(1, -1))]).tocsr()
    scale = max(1.0, abs(float(res.fun)))
    for slack in (REACH_TOL, 100 * REACH_TOL, 1e4 * REACH_TOL):
        face_b = np.concatenate([b_ub, [float(res.fun) + slack * scale]])
        out = linprog(objective, A_ub=face_ub, b_ub=face_b, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                      method="highs-ds", options=_HIGHS_OPTIONS)
        if out.status == 0:
            return np.asarray(out.x)
    raise LPError(f"{what} (random vertex of the optimal face): {out.message}")


def solve_player(
    tree: GameTree,
    player: int,
    floors: FloatArray | None = None,
    extra: sp.spmatrix | None = None,
    *,
    tie_break: TieBreak = TieBreak.SIMPLEX,
    rng: np.random.Generator | None = None,
) -> PlayerLPResult:
    """The player's max-min (player 0) or min-max (player 1) strategy by LP.

    `tie_break` chooses among optimal strategies (`TieBreak`); `rng` draws the objective of
    `TieBreak.RANDOM`.
    """
    if not isinstance(tie_break, TieBreak):
        raise LPError(f"tie_break must be a TieBreak, got {tie_break!r}")
    if tie_break is TieBreak.RANDOM and rng is None:
        raise LPError("TieBreak.RANDOM needs an rng (numpy Generator)")
    sf = sequence_form(tree)
    A = sf.A if extra is None else (sf.A + extra).tocsr()
    if player == 0:
        M, (C, c), (D, d), sign = A.T, (sf.E, sf.e), (sf.F, sf.f), 1.0
    elif player == 1:
        # min_y max_x x^T A y = -max_y min_x x^T (-A) y: same LP with -A^T roles swapped.
        M, (C, c), (D, d), sign = -A, (sf.F, sf.f), (sf.E, sf.e), -1.0
    else:
        raise ArgumentError(f"player must be 0 or 1, got {player!r}")
    nx = C.shape[1]
    nq = D.shape[0]
    # variables [x (nx), q (nq)]; minimize -d^T q
    cost = np.concatenate([np.zeros(nx), -d])
    A_ub = sp.hstack([-M, D.T]).tocsr()
    b_ub = np.zeros(A_ub.shape[0])
    if floors is not None:
        fr = _floor_rows(tree, player, np.asarray(floors, dtype=np.float64), nx)
        if fr.shape[0]:
            A_ub = sp.vstack([A_ub, sp.hstack([fr, sp.csr_matrix((fr.shape[0], nq))])]).tocsr()
            b_ub = np.concatenate([b_ub, np.zeros(fr.shape[0])])
    A_eq = sp.hstack([C, sp.csr_matrix((C.shape[0], nq))]).tocsr()
    bounds: list[tuple[float | None, float | None]] = [(0.0, None)] * nx + [(None, None)] * nq
    what = f"sequence-form LP for player {player} of {tree.name!r}"
    method = "highs-ipm" if tie_break is TieBreak.IPM else "highs-ds"
    res = _highs(cost, A_ub, b_ub, A_eq, c, bounds, method, what)
    x = res.x
    if tie_break is TieBreak.RANDOM:
        assert rng is not None  # checked above
        # stay on the optimal face: cost . z <= optimum (+ slack), then a random objective
        x = _random_vertex(res, rng.normal(size=nx), cost, A_ub, b_ub, A_eq, c, bounds, what)
    plan = np.maximum(x[:nx], 0.0)
    strategy = behavioral_from_realization(tree, plan, player, into=uniform_strategy(tree))
    return PlayerLPResult(player=player, value=sign * float(-res.fun), plan=plan,
                          strategy=strategy)


def solve_lp(tree: GameTree) -> LPResult:
    """Both players' equilibrium strategies and the game value (cached on the tree)."""
    cached = tree._cache.get("lp")
    if cached is None:
        r0 = solve_player(tree, 0)
        r1 = solve_player(tree, 1)
        strategy = r0.strategy.copy()
        for g in tree.infosets_of(1):
            off = tree.infoset_offset[g]
            n = tree.infoset_num_actions[g]
            strategy[off : off + n] = r1.strategy[off : off + n]
        cached = LPResult(value=r0.value, plan0=r0.plan, plan1=r1.plan, strategy=strategy)
        tree._cache["lp"] = cached
    return cached  # type: ignore[return-value]


def game_value(tree: GameTree) -> float:
    """The value of the game for player 0."""
    return solve_lp(tree).value


def epsilon_floors(
    tree: GameTree,
    player: int,
    epsilon: float,
    exempt: Iterable[int] = (),
    action_filter: Callable[[int, int], bool] | None = None,
) -> FloatArray:
    """Per-slot floors epsilon/|A(I)| at the player's infosets.

    exempt: infoset ids left unconstrained. action_filter(infoset, slot) -> bool restricts the
    floor to chosen actions (e.g. only betting actions); by default every action is floored.
    """
    if not 0.0 <= epsilon <= 1.0:
        raise ArgumentError(f"epsilon must be in [0, 1], got {epsilon!r}")
    floors = np.zeros(tree.num_slots, dtype=np.float64)
    skip = set(int(g) for g in exempt)
    for g in tree.infosets_of(player):
        if int(g) in skip:
            continue
        off = int(tree.infoset_offset[g])
        n = int(tree.infoset_num_actions[g])
        for a in range(n):
            if action_filter is None or action_filter(int(g), off + a):
                floors[off + a] = epsilon / n
    return floors
