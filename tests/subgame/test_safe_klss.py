"""Safe-1-KLSS (Liu et al. 2023): margins per (I, J) with the gift split; safe when solving at every
infoset independently, where plain 1-KLSS is not (Zhang & Sandholm 2021, Proposition 3)."""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.best_response import player_exploitability
from caligo.core.builtin_games import TableGame
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.random_games import random_game
from caligo.core.strategy import normalize_per_infoset, uniform_strategy
from caligo.core.tree import GameTree, build_tree
from caligo.subgame.gadget import GadgetKind, SubgameError, SubgameOptions, lift, make_subgame
from caligo.subgame.safe_klss import blueprint_on_gadget, make_safe_klss_subgame, safe_margins
from caligo.subgame.solve import solve_subgame


def _copies_of_pennies(n: int) -> GameTree:
    """Proposition 3's game: chance picks one of n matching pennies, told to player 0 only;
    player 1 wins (player 0 gets -1) when the pennies match, else player 0 gets 1."""

    def pf(h: tuple[int, ...]) -> int:
        return (CHANCE, 0, 1, TERMINAL)[len(h)]

    def af(h: tuple[int, ...]) -> list[int]:
        return list(range(n)) if not h else [0, 1]

    def of(h: tuple[int, ...], p: int) -> object:
        return h[0] if len(h) == 1 and p == 0 else None

    def uf(h: tuple[int, ...]) -> float:
        return -1.0 if h[1] == h[2] else 1.0

    return build_tree(TableGame(f"copies({n})", pf, af, of, uf, {0: "H", 1: "T"}))


def _solve_everywhere(tree: GameTree, s: np.ndarray, safe: bool) -> np.ndarray:
    out = s.copy()
    for g in tree.infosets_of(0):
        build = make_safe_klss_subgame if safe else make_subgame
        sub = build(tree, s, int(g), SubgameOptions(k=1))
        lifted = lift(tree, s, sub, solve_subgame(sub))
        o, n = int(tree.infoset_offset[g]), int(tree.infoset_num_actions[g])
        out[o : o + n] = lifted[o : o + n]
    return out


@pytest.mark.parametrize("n", [8, 20])
def test_proposition3_counterexample(n: int) -> None:
    t = _copies_of_pennies(n)
    s = uniform_strategy(t)
    for g in t.infosets_of(0):
        o = int(t.infoset_offset[g])
        s[o : o + 2] = [0.5 + 2 / n, 0.5 - 2 / n]
    before = player_exploitability(t, s, 0)
    assert before == pytest.approx(4 / n)
    unsafe = _solve_everywhere(t, s, safe=False)
    assert player_exploitability(t, unsafe, 0) == pytest.approx(1.0)  # always tails
    safe = _solve_everywhere(t, s, safe=True)
    assert player_exploitability(t, safe, 0) <= before + 1e-9
    assert player_exploitability(t, safe, 0) == pytest.approx(0.0, abs=1e-9)
    sub = make_safe_klss_subgame(t, s, int(t.infosets_of(0)[0]))
    # Margin_{I,J} = max_a min(2 (q - a), 2 (a + q - 1)) = 2 q - 1 at a = 1/2
    assert safe_margins(sub, solve_subgame(sub).strategy) == pytest.approx([4 / n])


@pytest.mark.parametrize("kind", [GadgetKind.MAXMARGIN, GadgetKind.RESOLVE])
def test_safe_klss_on_random_games(kind: GadgetKind) -> None:
    """The blueprint has safe margin 0; the solution's is >= 0 and never worse than the
    blueprint's; independent solves at all infosets never raise exploitability."""
    for seed in range(8):
        t = build_tree(random_game(seed, max_depth=5))
        if not (len(t.infosets_of(0)) and len(t.infosets_of(1))):
            continue
        s = normalize_per_infoset(t, np.random.default_rng(seed).uniform(0.1, 1, t.num_slots))
        for g in t.infosets_of(0):
            sub = make_safe_klss_subgame(t, s, int(g), SubgameOptions(kind=kind))
            if sub.is_empty:
                continue
            base = blueprint_on_gadget(sub, t, s)
            np.testing.assert_allclose(safe_margins(sub, base), 0, atol=1e-9)
            sol = solve_subgame(sub)
            assert np.all(safe_margins(sub, sol.strategy) >= -1e-9)
        if kind is GadgetKind.MAXMARGIN:
            out = _solve_everywhere(t, s, safe=True)
            assert player_exploitability(t, out, 0) <= player_exploitability(t, s, 0) + 1e-9


def test_safe_klss_rejects_other_gadgets() -> None:
    t = _copies_of_pennies(4)
    s = uniform_strategy(t)
    with pytest.raises(SubgameError):
        make_safe_klss_subgame(t, s, 0, SubgameOptions(kind=GadgetKind.UNSAFE))
    with pytest.raises(SubgameError):
        make_safe_klss_subgame(t, s, 0, SubgameOptions(k=3))


def test_nested_solve_with_safe_klss_gadgets() -> None:
    """`NestedConfig(safe_klss=True)` (the comparison's Safe-1-KLSS column) on Proposition 3's
    game: nested 1-KLSS goes to exploitability 1, nested Safe-1-KLSS to 0."""
    from caligo.subgame.nested import NestedConfig, nested_solve

    n = 8
    t = _copies_of_pennies(n)
    s = uniform_strategy(t)
    for g in t.infosets_of(0):
        o = int(t.infoset_offset[g])
        s[o : o + 2] = [0.5 + 2 / n, 0.5 - 2 / n]
    plain = nested_solve(t, s, NestedConfig()).strategy
    assert player_exploitability(t, plain, 0) == pytest.approx(1.0)
    safe = nested_solve(t, s, NestedConfig(safe_klss=True)).strategy
    assert player_exploitability(t, safe, 0) == pytest.approx(0.0, abs=1e-9)


def test_comparison_has_a_safe_column() -> None:
    from caligo.experiments.comparison import comparison_table, run_comparison

    result = run_comparison(rows=("kuhn_bet",))
    assert "safe_1klss" in result.labels
    row = result.rows[0]
    assert row["safe_1klss"] is not None and row["safe_1klss"] <= row["blueprint"] + 1e-9
    assert "Safe-1-KLSS" in comparison_table(result).markdown()
