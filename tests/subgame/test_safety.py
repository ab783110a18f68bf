"""Safety variants of nested k-KLSS: Zhang & Sandholm 2021, Theorems 4 and 5 (Algorithms 13 and 14).

Theorem 4: with every solve incorporated into the blueprint, the blueprints' exploitability
never increases. Theorem 5: with solves only on an ancestor-closed independent set of the
collapsed graph G', an eps-NE blueprint stays an eps-NE. Both are asserted up to 1e-9 on random
playthroughs of several games, from the epsilon = 0.25 floored blueprints of Table 1.
"""

from __future__ import annotations

import itertools
import os

import pytest

from caligo.core.games import load_game
from caligo.experiments.table1 import FloorKind, blueprint
from caligo.subgame.safety import allocate_deviations, collapsed_graph, update_blueprint

SHORT = os.environ.get("CALIGO_SHORT") == "1"

GAMES = [
    "kuhn_poker",
    "matching_pennies_n(n=10)",
    "goofspiel(num_cards=4,imp_info=True,points_order=ascending)",
]


def test_collapsed_graph_kuhn() -> None:
    """Kuhn: ⊖ holding card c sees ⊕'s infosets of the two other cards, so the three first
    infosets form a triangle, and likewise the three infosets after pass-bet."""
    tree = load_game("kuhn_poker")
    idx = tree.infoset_index()
    adj = collapsed_graph(tree)
    assert adj[idx["0"]] == {idx["1"], idx["2"]}
    assert adj[idx["0pb"]] == {idx["1pb"], idx["2pb"]}


@pytest.mark.parametrize("spec", GAMES)
def test_theorem4_blueprint_updates_never_increase(spec: str) -> None:
    tree = load_game(spec)
    bp = blueprint(tree, FloorKind.UNIFORM)
    trace = update_blueprint(tree, bp.strategy, playthroughs=3 if SHORT else 6, seed=1)
    ex = trace.exploitabilities
    assert len(ex) > 1
    for a, b in itertools.pairwise(ex):
        assert b <= a + 1e-9


@pytest.mark.parametrize("spec", GAMES)
@pytest.mark.parametrize("join", [1.0, 0.6])
def test_theorem5_independent_set_stays_eps_ne(spec: str, join: float) -> None:
    tree = load_game(spec)
    bp = blueprint(tree, FloorKind.UNIFORM)
    trace = allocate_deviations(
        tree, bp.strategy, playthroughs=3 if SHORT else 6, seed=2, join_probability=join
    )
    adj = collapsed_graph(tree)
    chosen = set(trace.solved)
    assert all(not (adj[g] & chosen) for g in chosen)  # independent in G'
    for e in trace.exploitabilities[1:]:
        assert e <= trace.exploitabilities[0] + 1e-9
