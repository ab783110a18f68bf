"""The exported trunk solved exactly by LP (Zhang & Sandholm 2021, appendix D.2).

ZS21 solves its trunk "exactly (e.g., with an LP solver)": Algorithm 15 reasons about the
support of the solution (which nodes to expand next), so an exact method is wanted (Zhang &
Sandholm 2021, appendix E; Algorithm 15, line 23). The trunk held in a search `Arena` is
exported under its root gadget (Maxmargin, Resolve or none) by the search's one exporter,
`caligo.search.export.export_trunk`, as a `caligo.core.tree.GameTree` plus extra payoffs B;
`solve` solves it for both players in one HiGHS dual-simplex call (our max-min LP, the
opponent's plan from its duals), or with `caligo.core.lp.solve_player` per player when a
tie-break or the canonical vertex is asked for, so the LP is the core's.
`caligo.search.export.write_back` stores the solution in the arena.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from caligo.core.lp import PRIMAL_TOL, LPError, TieBreak, solve_player
from caligo.core.sequence_form import sequence_form
from caligo.core.strategy import behavioral_from_realization, uniform_strategy
from caligo.core.tree import GameTree
from caligo.search.arena import Arena
from caligo.search.export import TrunkGame
from caligo.search.intern import splitmix64

__all__ = ["LPSolution", "canonical_weights", "solve"]

_HIGHS = {"primal_feasibility_tolerance": PRIMAL_TOL, "dual_feasibility_tolerance": 1e-10,
          "presolve": True}  # caligo.core.lp's settings


@dataclass(frozen=True, eq=False)
class LPSolution:
    """Both players' exact strategies of an exported trunk (over its slots) and our value."""

    strategy: np.ndarray
    value: float  # our guaranteed value of the gadget game, our utility
    seconds: float


def canonical_weights(keys: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """A fixed generic weight in [-1, 1) for each (infoset key, action label) pair.

    The objective that picks one vertex of an LP's optimal face when `ZS21Config.canonical` is
    on: it depends only on what a sequence *is*, not on how a formulation numbers it.
    """
    k = np.asarray(keys, dtype=np.uint64)
    a = np.asarray(actions, dtype=np.int64).astype(np.uint64)
    h = np.array([splitmix64(np.uint64(x)) for x in (k ^ (a * np.uint64(0x9E3779B97F4A7C15)))],
                 dtype=np.uint64)
    return (h >> np.uint64(11)).astype(np.float64) * (2.0 / 9007199254740992.0) - 1.0


class _Direction:
    """Stands in for the rng `caligo.core.lp.solve_player` draws its tie-break objective from."""

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights

    def normal(self, size: int) -> np.ndarray:
        return self.weights[:size]


def _canonical_direction(trunk: TrunkGame, arena: Arena, player: int) -> _Direction:
    t = trunk.tree
    w = np.zeros(t.num_sequences[player], dtype=np.float64)
    for g in t.infosets_of(player):
        ag = int(trunk.infoset_of[g])
        if ag < 0:
            continue
        n = int(t.infoset_num_actions[g])
        off = int(t.infoset_offset[g])
        key = np.full(n, int(arena.infosets.key[ag]), dtype=np.uint64)
        first = int(t.infoset_seq[g])
        w[first : first + n] = canonical_weights(key, t.slot_action[off : off + n])
    return _Direction(w)


def _solve_with_duals(tree: GameTree, extra: sp.csr_matrix, me: int,
                      time_limit: float | None = None,
                      started: float | None = None) -> tuple[np.ndarray, float]:
    """Our max-min LP (`caligo.core.lp.solve_player`'s formulation) in one HiGHS dual-simplex
    call; the opponent's min-max realization plan is the LP's dual: the multipliers of the rows
    F^T q - A^T x <= 0, one per opponent sequence (sequence-form LP duality, Ha 2016, chapter E).
    Returns (a strategy over the tree's slots with both players' parts, our value in player 0's
    utility). `time_limit`: seconds from `started` (`time.perf_counter`, default now) for the
    whole call; HiGHS gets what is left of them once the LP is built."""
    started = time.perf_counter() if started is None else started
    sf = sequence_form(tree)
    A = (sf.A + extra).tocsr()
    if me == 0:
        M, (C, c), (Dm, d), sign = A.T, (sf.E, sf.e), (sf.F, sf.f), 1.0
    else:
        M, (C, c), (Dm, d), sign = -A, (sf.F, sf.f), (sf.E, sf.e), -1.0
    nx, nq = C.shape[1], Dm.shape[0]
    cost = np.concatenate([np.zeros(nx), -d])
    A_ub = sp.hstack([-M, Dm.T]).tocsr()
    A_eq = sp.hstack([C, sp.csr_matrix((C.shape[0], nq))]).tocsr()
    # as an array: scipy checks a list of 100,000 bound pairs in Python (25 ms, outside the
    # LP's time limit)
    bounds = np.empty((nx + nq, 2))
    bounds[:nx] = (0.0, np.inf)
    bounds[nx:] = (-np.inf, np.inf)
    # the limit is HiGHS's from here: the sequence form and the sparse blocks above took part
    # of it (40 ms on a 100,000-node trunk, past ZS21's move when HiGHS had the whole limit)
    options = dict(_HIGHS) if time_limit is None else {
        **_HIGHS, "time_limit": max(time_limit - (time.perf_counter() - started), 1e-3)}
    res = linprog(cost, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=A_eq, b_eq=c,
                  bounds=bounds, method="highs-ds", options=options)
    if res.status != 0:
        raise LPError(f"sequence-form LP of the ZS21 trunk ({tree.num_nodes} nodes): "
                      f"{res.message}")
    x = np.maximum(res.x[:nx], 0.0)
    y = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
    out = behavioral_from_realization(tree, x, me, into=uniform_strategy(tree))
    out = behavioral_from_realization(tree, y, 1 - me, into=out)
    return out, sign * float(-res.fun)


def solve(trunk: TrunkGame, arena: Arena, tie_break: TieBreak = TieBreak.SIMPLEX,
          canonical: bool = False, time_limit: float | None = None) -> LPSolution:
    """Both players' exact LP strategies of the exported trunk (ours maximizes our value).

    Default: one LP, the opponent's strategy from its duals; `time_limit` (seconds from this
    call, building the LP included) stops HiGHS, and the solve then fails with `LPError`. With
    another `tie_break` or `canonical`, `caligo.core.lp.solve_player` for each player (the
    tie-break picks our vertex).
    """
    t0 = time.perf_counter()
    me = trunk.searcher
    tree = trunk.tree
    if tie_break is TieBreak.SIMPLEX and not canonical:
        strategy, v0 = _solve_with_duals(tree, trunk.extra, me, time_limit, t0)
        value = v0 if me == 0 else -v0
        return LPSolution(strategy=strategy, value=float(value),
                          seconds=time.perf_counter() - t0)
    if canonical:
        r_me = solve_player(tree, me, extra=trunk.extra, tie_break=TieBreak.RANDOM,
                            rng=_canonical_direction(trunk, arena, me))  # type: ignore[arg-type]
    else:
        r_me = solve_player(tree, me, extra=trunk.extra, tie_break=tie_break)
    r_opp = solve_player(tree, 1 - me, extra=trunk.extra, tie_break=(
        TieBreak.SIMPLEX if tie_break is TieBreak.RANDOM else tie_break))
    strategy = r_me.strategy.copy()
    theirs = tree.infoset_player[tree.slot_infoset()] == 1 - me
    strategy[theirs] = r_opp.strategy[theirs]
    value = r_me.value if me == 0 else -r_me.value
    return LPSolution(strategy=strategy, value=float(value), seconds=time.perf_counter() - t0)
