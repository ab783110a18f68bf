"""2-KLUSS (Obscuro, appendix C.6): like 2-KLSS, but the player-0 nodes one step away are kept and
re-optimized instead of frozen."""

from __future__ import annotations

import math

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.core.random_games import random_game
from caligo.core.sequence_form import payoff_matrix
from caligo.core.strategy import normalize_per_infoset, uniform_strategy
from caligo.core.tree import build_tree
from caligo.subgame.gadget import SubgameOptions, lift, make_subgame, subgame_margins
from caligo.subgame.kluss import make_kluss_subgame
from caligo.subgame.solve import solve_subgame


def test_figure1_kluss_keeps_node_3_unfrozen() -> None:
    t = load_game("figure1")
    s = uniform_strategy(t)
    ix = t.infoset_index()
    sub = make_kluss_subgame(t, s, ix["p0:R1"])
    assert sorted(int(t.action[h]) for h in sub.kept_nodes) == [1, 2, 3]  # I^2 = C0' ∪ C2'
    # R3 is re-optimized over its kept node 3 only; nothing is frozen into B
    mapped = {t.infoset_names[g] for g in sub.infoset_map[sub.tree.infosets_of(0)]}
    assert mapped == {"p0:R1", "p0:R3"}
    assert sub.alternate_values.tolist() == pytest.approx([0.5, 1.25])
    top = sub.extra.toarray()[0]
    assert np.count_nonzero(top) == 2  # alternate values only
    assert np.count_nonzero(payoff_matrix(sub.tree).toarray()) == 6
    assert np.all(sub.scale() == 1.0)  # every root infoset is wholly kept
    sol = solve_subgame(sub)
    assert sol.min_margin >= -1e-9


def test_kluss_vs_klss_vs_common_knowledge_sizes() -> None:
    """|I| <= |I^2| <= |I^inf| in kept nodes; KLUSS never freezes anything into B."""
    for seed in range(6):
        t = build_tree(random_game(seed, max_depth=5))
        s = normalize_per_infoset(t, np.linspace(1.0, 2.0, t.num_slots))
        for g in t.infosets_of(0):
            a = make_subgame(t, s, int(g), SubgameOptions(k=1))
            b = make_kluss_subgame(t, s, int(g))
            c = make_subgame(t, s, int(g), SubgameOptions(k=math.inf))
            assert a.kept_nodes.size <= b.kept_nodes.size <= c.kept_nodes.size
            assert not b.phantom.any()
            if b.is_empty:
                continue
            sol = solve_subgame(b)
            assert sol.min_margin >= -1e-9
            np.testing.assert_allclose(subgame_margins(b, sol.strategy), sol.margins, atol=1e-12)
            lifted = lift(t, s, b, sol)
            assert lifted.shape == s.shape
