"""Nested solving at every player-0 infoset (seed 000 section 7).

Plumbing is checked with stand-in steps whose answer is known (the chain forest, the assembly of
the strategy from the last solve of each chain, solve sets closed under ancestors). The real
gadget runs are checked against hand-derived values: seed 000 Proposition 3 (blueprint 4/N,
nested maxmargin 1-KLSS exploitability exactly 1, derivation in
`caligo.experiments.counterexample`), and seed 000 section 7's epsilon = 0 claim (an exact NE
blueprint stays unexploitable, < 1e-9).
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.best_response import player_exploitability
from caligo.core.games import load_game
from caligo.core.lp import solve_lp
from caligo.subgame.nested import (
    GameState,
    NestedConfig,
    chain_of,
    infoset_children,
    infoset_parents,
    nested_solve,
)


def test_infoset_forest_kuhn() -> None:
    tree = load_game("kuhn_poker")
    roots, kids = infoset_children(tree, 0)
    names = tree.infoset_names
    assert sorted(names[g] for g in roots) == ["0", "1", "2"]
    for r in roots:
        assert [names[c] for c in kids[r]] == [names[r] + "pb"]
    g = tree.infoset_index()["1pb"]
    assert [names[h] for h in chain_of(tree, g)] == ["1", "1pb"]
    assert infoset_parents(tree)[g] == tree.infoset_index()["1"]


def _counting_step(log: list[int], first: float | None) -> NestedConfig:
    """A stand-in solve: action 0 with probability `first` at the root (uniform when None)."""

    def step(state: GameState, g: int, config: NestedConfig, tree: object) -> GameState:
        log.append(g)
        s = state.strategy.copy()
        t = state.tree
        here = state.copy_of(g)
        off = int(t.infoset_offset[here])
        n = int(t.infoset_num_actions[here])
        if first is None:
            s[off : off + n] = 1.0 / n
        else:
            s[off : off + n] = (1.0 - first) / (n - 1)
            s[off] = first
        return GameState(state.tree, state.extra, s, state.origin)

    return NestedConfig(step=step)


def test_nested_visits_each_infoset_once_and_assembles() -> None:
    tree = load_game("leduc_poker")
    x = solve_lp(tree).strategy
    visited: list[int] = []
    res = nested_solve(tree, x, _counting_step(visited, None))
    mine = [int(g) for g in tree.infosets_of(0)]
    assert sorted(visited) == mine  # one solve per player-0 infoset: prefixes are shared
    assert res.solves == len(mine) and res.skipped == 0
    for g in mine:
        n = tree.infoset_num_actions[g]
        off = tree.infoset_offset[g]
        assert np.allclose(res.strategy[off : off + n], 1.0 / n)
    # A solve that never leaves action 0 makes the other branches unreachable: skipped.
    visited.clear()
    res = nested_solve(tree, x, _counting_step(visited, 1.0))
    assert res.skipped > 0 and res.solves + res.skipped == len(mine)


def test_solve_set_keeps_blueprint_outside() -> None:
    tree = load_game("kuhn_poker")
    x = solve_lp(tree).strategy
    idx = tree.infoset_index()
    visited: list[int] = []
    res = nested_solve(tree, x, _counting_step(visited, 1.0), solve_set=[idx["0"]])
    assert visited == [idx["0"]]
    assert res.strategy[tree.infoset_offset[idx["0"]]] == 1.0
    for name in ("1", "2", "1pb"):
        off = tree.infoset_offset[idx[name]]
        assert res.strategy[off] == x[off]


@pytest.mark.parametrize("n", [4, 8, 16])
def test_counterexample_exact(n: int) -> None:
    """Proposition 3: 4/N before, exactly 1 after (hand derivation in the module docstring)."""
    from caligo.experiments.counterexample import counterexample_blueprint, counterexample_tree

    tree = counterexample_tree(n)
    bp = counterexample_blueprint(tree, n)
    res = nested_solve(tree, bp)
    assert player_exploitability(tree, bp, 0) == pytest.approx(4 / n, abs=1e-12)
    assert player_exploitability(tree, res.strategy, 0) == pytest.approx(1.0, abs=1e-7)
    heads = res.strategy[tree.infoset_offset[tree.infosets_of(0)]]
    assert np.allclose(heads, 0.0, atol=1e-7)  # tails at every n


@pytest.mark.parametrize(
    "spec",
    ["kuhn_poker", "matching_pennies_n(n=10)", "dark_hex(gameversion=adh,num_rows=2,num_cols=2)"],
)
def test_epsilon_zero_stays_equilibrium(spec: str) -> None:
    tree = load_game(spec)
    x = solve_lp(tree).strategy
    res = nested_solve(tree, x)
    assert player_exploitability(tree, res.strategy, 0) < 1e-9
