"""Zhang & Sandholm 2021, Theorem 9 checked numerically: nested 1-KLSS from an exact equilibrium
blueprint gives an affine equilibrium, which earns exactly the game value against every opponent NE.

Proposition 8: an affine combination x = sum_i a_i x_i* of NE strategies (sum a_i = 1) has
u(x, y*) = v* for every NE y* of the opponent. Theorem 9: nested 1-KLSS at every infoset from an
NE blueprint gives such an x. We enumerate several NE of both players as vertices of the NE
polytopes, found by LP with random linear objectives over

    player 0:  {x : E x = e, x >= 0, F^T q <= A^T x, f^T q >= v*}
    player 1:  {y : F y = f, y >= 0, E^T p >= A y,  e^T p <= v*}

(the dual certificates q, p say min_y x^T A y >= v* and max_x x^T A y <= v*), run nested 1-KLSS
from each player-0 vertex and evaluate u(x', y_j) - v* for every player-1 vertex y_j.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from caligo.core.best_response import player_exploitability
from caligo.core.games import load_game
from caligo.core.lp import LPError, game_value
from caligo.core.sequence_form import sequence_form
from caligo.core.strategy import behavioral_from_realization, realization_plan, uniform_strategy
from caligo.core.tree import FloatArray, GameTree
from caligo.experiments.runner import Column, Progress, Table, no_progress, write_outputs

AFFINE_GAMES = (
    "kuhn_poker",
    "goofspiel(num_cards=4,imp_info=True,points_order=ascending)",
    "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
    "matching_pennies_n(n=10)",
)
_TOL = 1e-9
_OPTS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def equilibrium_vertex(tree: GameTree, player: int, objective: FloatArray) -> FloatArray:
    """A realization plan of `player` that is an NE strategy minimizing objective . plan."""
    sf = sequence_form(tree)
    v = game_value(tree)
    A = sf.A
    if player == 0:
        C, c, D, d, M, sign = sf.E, sf.e, sf.F, sf.f, A.T, 1.0
    else:
        C, c, D, d, M, sign = sf.F, sf.f, sf.E, sf.e, A, -1.0
    nx, nq = C.shape[1], D.shape[0]
    # player 0: F^T q - A^T x <= 0, -f^T q <= -v*; player 1: A y - E^T p <= 0, e^T p <= v*
    rows = sp.hstack([-sign * M, sign * D.T]).tocsr()
    bound = sp.hstack([sp.csr_matrix((1, nx)), sp.csr_matrix(-sign * d.reshape(1, -1))])
    A_ub = sp.vstack([rows, bound]).tocsr()
    b_ub = np.concatenate([np.zeros(rows.shape[0]), [-sign * v + 1e-9]])
    A_eq = sp.hstack([C, sp.csr_matrix((C.shape[0], nq))]).tocsr()
    cost = np.concatenate([np.asarray(objective, dtype=np.float64), np.zeros(nq)])
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=c,
                  bounds=[(0.0, None)] * nx + [(None, None)] * nq, method="highs-ds",
                  options=_OPTS)
    if res.status != 0:
        raise LPError(f"NE vertex LP for player {player} of {tree.name!r}: {res.message}")
    return np.maximum(np.asarray(res.x[:nx]), 0.0)


def equilibrium_vertices(tree: GameTree, player: int, count: int, seed: int = 0,
                         ) -> list[FloatArray]:
    """Up to `count` distinct NE realization plans of `player` (random objectives)."""
    rng = np.random.default_rng(seed + 17 * player)
    n = tree.num_sequences[player]
    found: list[FloatArray] = []
    for _ in range(3 * count):
        plan = equilibrium_vertex(tree, player, rng.normal(size=n))
        if all(np.max(np.abs(plan - f)) > 1e-6 for f in found):
            found.append(plan)
        if len(found) >= count:
            break
    return found


def plan_to_strategy(tree: GameTree, plan: FloatArray, player: int) -> FloatArray:
    """A profile whose `player` slots follow the plan (the other player's uniform)."""
    return behavioral_from_realization(tree, plan, player, into=uniform_strategy(tree))


@dataclass(frozen=True)
class AffineRow:
    """One game: counts of NE vertices and the worst deviation from the value."""

    game: str
    value: float
    blueprints: int
    opponent_ne: int
    max_gap: float  # max over blueprints and opponent NE of |u(x', y*) - v*|
    max_blueprint_gap: float  # the same for the blueprints themselves (0 by definition)
    max_exploitability: float  # of x' (an affine equilibrium need not be an NE)


def payoff(tree: GameTree, x_plan: FloatArray, y_plan: FloatArray) -> float:
    """x^T A y."""
    return float(x_plan @ (sequence_form(tree).A @ y_plan))


def check_game(spec: str, blueprints: int = 3, opponents: int = 6, seed: int = 0) -> AffineRow:
    """Theorem 9 on one game: nested 1-KLSS from several NE blueprints against several NE."""
    from caligo.subgame.nested import NestedConfig, nested_solve

    tree = load_game(spec)
    v = game_value(tree)
    xs = equilibrium_vertices(tree, 0, blueprints, seed)
    ys = equilibrium_vertices(tree, 1, opponents, seed)
    gap = bgap = expl = 0.0
    for xp in xs:
        x = plan_to_strategy(tree, xp, 0)
        res = nested_solve(tree, x, NestedConfig())
        new_plan = realization_plan(tree, res.strategy, 0)
        expl = max(expl, player_exploitability(tree, res.strategy, 0))
        for yp in ys:
            gap = max(gap, abs(payoff(tree, new_plan, yp) - v))
            bgap = max(bgap, abs(payoff(tree, xp, yp) - v))
    return AffineRow(spec, v, len(xs), len(ys), gap, bgap, expl)


def run_affine(games: Sequence[str] = AFFINE_GAMES, blueprints: int = 3, opponents: int = 6,
               progress: Progress = no_progress) -> tuple[AffineRow, ...]:
    """Check Theorem 9 on each game."""
    rows = []
    for g in games:
        rows.append(check_game(g, blueprints, opponents))
        progress(1)
    return tuple(rows)


def affine_table(rows: Sequence[AffineRow]) -> Table:
    """The markdown/CSV table of the rows."""
    cols = (Column("game", "game"), Column("value", "v*", "{:.6f}"),
            Column("blueprints", "NE blueprints"), Column("opponent_ne", "opponent NE"),
            Column("max_gap", "max |u(x',y*) - v*|", "{:.2e}"),
            Column("max_exploitability", "max exploitability of x'", "{:.2e}"))
    notes = ("Zhang & Sandholm 2021, Theorem 9: x' = nested maxmargin 1-KLSS at every infoset "
             "from an exact NE blueprint; y* ranges over NE vertices of the opponent found by "
             "LP; x' may be exploitable (an affine equilibrium), yet earns v* against each y*.",)
    return Table("affine", tuple(dict(r.__dict__) for r in rows), cols, notes)


def write_affine(rows: Sequence[AffineRow], out_dir: Path | None = None) -> list[Path]:
    """Write affine.md/.csv/.json."""
    return write_outputs(affine_table(rows), out_dir)
