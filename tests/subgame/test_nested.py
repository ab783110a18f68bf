"""Nested solving at every player-0 infoset (Zhang & Sandholm 2021, section 7).

Plumbing is checked with stand-in steps whose answer is known (the chain forest, the assembly of
the strategy from the last solve of each chain, solve sets closed under ancestors). The real
gadget runs are checked against hand-derived values: Zhang & Sandholm 2021, Proposition 3 (blueprint
4/N, nested maxmargin 1-KLSS exploitability exactly 1, derivation in
`caligo.experiments.counterexample`), and Zhang & Sandholm 2021, section 7's epsilon = 0 claim (an
exact NE blueprint stays unexploitable, < 1e-9).
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
from tests.conftest import SHORT


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


def _leduc_random_blueprint(seed: int) -> tuple[object, np.ndarray]:
    from caligo.core.strategy import normalize_per_infoset

    tree = load_game("leduc_poker")
    w = np.random.default_rng(seed).random(tree.num_slots) ** 2 + 0.01
    return tree, normalize_per_infoset(tree, w)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11] if SHORT else [11, 0, 1, 2])
def test_nested_random_full_support_leduc(seed: int) -> None:
    """Regression (issue 11): a gadget LP leaves an action's probability at rounding noise
    (2e-15); solving below it divided by that reach and HiGHS rejected B entries of 1e16.

    Expected values from the gadget construction (Zhang & Sandholm 2021, appendix C, "the blueprint
    has every branch value 0"): the previous level's strategy is feasible in every maxmargin gadget
    with value 0, so every level's LP optimum is >= 0, and the assembled strategy is a strategy.
    """
    from caligo.core.best_response import best_response
    from caligo.core.strategy import check_strategy
    from caligo.subgame.nested import solve_step

    tree, bp = _leduc_random_blueprint(seed)
    values: list[float] = []

    def step(state: GameState, g: int, config: NestedConfig, t: object) -> GameState:
        nxt = solve_step(state, g, NestedConfig(), tree)
        if nxt is not state:
            values.append(best_response(nxt.tree, nxt.strategy, 1, extra=nxt.extra).value)
        return nxt

    res = nested_solve(tree, bp, NestedConfig(step=step))
    check_strategy(tree, res.strategy)
    assert res.solves == len(values) > 300
    assert min(values) > -1e-9


SAFE_GAMES = [
    "kuhn_poker",
    "figure1",
    "matching_pennies_n(n=10)",
    "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
    "goofspiel(num_cards=3,imp_info=True,points_order=random)",
    "random_game(seed=3,max_depth=6)",
    "random_game(seed=17,max_depth=6)",
]


@pytest.mark.parametrize("spec", SAFE_GAMES)
def test_nested_safe_klss_never_exceeds_blueprint(spec: str) -> None:
    """Nested Safe-1-KLSS at every infoset is safe at every level (docs/experiments.md has the
    induction): the result is never more exploitable than the blueprint. Blueprints: random with
    full support, random with zeros, CFR+ after 10 iterations; Maxmargin and Resolve gadgets.
    The bound is the definition of safety in Zhang & Sandholm 2021, section 3 (and Liu et al.
    2023)."""
    from caligo.core.cfr import CFRConfig, solve_cfr
    from caligo.core.strategy import normalize_per_infoset
    from caligo.subgame.gadget import GadgetKind, SubgameOptions

    tree = load_game(spec)
    rng = np.random.default_rng(7)
    full = normalize_per_infoset(tree, rng.random(tree.num_slots) ** 2 + 0.01)
    w = rng.random(tree.num_slots)
    w[rng.random(tree.num_slots) < 0.3] = 0.0
    sparse = normalize_per_infoset(tree, w)
    cfr10 = solve_cfr(tree, CFRConfig.cfr_plus(), 10).average
    for bp in (full, sparse, cfr10):
        before = player_exploitability(tree, bp, 0)
        for kind in (GadgetKind.MAXMARGIN, GadgetKind.RESOLVE):
            cfg = NestedConfig(options=SubgameOptions(kind=kind, k=1), safe_klss=True)
            after = player_exploitability(tree, nested_solve(tree, bp, cfg).strategy, 0)
            assert after <= before + 1e-9, (kind, before, after)


@pytest.mark.slow
@pytest.mark.parametrize("iterations", [100] if SHORT else [10, 100])
def test_nested_safe_klss_leduc_cfr_blueprint(iterations: int) -> None:
    """Regression (issue 11): with the plain 1-KLSS gadget handed down the chain, nested
    Safe-1-KLSS took Leduc's CFR+ blueprint from 0.01716 to 0.03396 (T = 100) and from 0.792 to
    0.962 (T = 10). Safety (Zhang & Sandholm 2021, section 3) bounds the result by the blueprint."""
    from caligo.core.cfr import CFRConfig, solve_cfr

    tree = load_game("leduc_poker")
    bp = solve_cfr(tree, CFRConfig.cfr_plus(), iterations).average
    before = player_exploitability(tree, bp, 0)
    after = player_exploitability(tree, nested_solve(tree, bp, NestedConfig(safe_klss=True))
                                  .strategy, 0)
    assert after <= before + 1e-9
