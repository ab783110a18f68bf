"""The construction's published stages, one by one, against `caligo.core` and `caligo.subgame`.

`tests/search/test_construct.py` checks the whole subgame (`build_kluss`) against the gadget of
`caligo.subgame.gadget.make_subgame`; here each stage ZS21 and other builders call is checked
on its own, on fully expanded arenas of small games (a `TreeGame` state is the tree's node id
and its keys are the tree's knowledge infosets, so arena and tree can be compared node by node):

- `knowledge_set` (step 2) against `caligo.core.knowledge.order_k_set`, the order-k knowledge
  set of Zhang & Sandholm 2021 over the observation hypergraph (I^k, and I^inf);
- `played_profile` + `profile` (step 1) against the core's realization plans: the searcher's
  and the opponent's reach of every node are the products `caligo.core.strategy` computes, and
  the chance reach is the tree's. (`init_weights`' floor is checked in test_construct.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.core.knowledge import infoset_nodes, order_k_set
from caligo.core.strategy import realization_plan, uniform_strategy
from caligo.search.config import Iterate
from caligo.search.construct import knowledge_set, played_profile, profile
from caligo.search.export import strategy_on_tree
from tests.search.conftest import full_search

GAMES = ["kuhn_poker", "leduc_poker"]


def _node_map(eng: object) -> np.ndarray:
    """Arena row -> tree node id (a TreeGame's state)."""
    arena = eng.arena  # type: ignore[attr-defined]
    return arena.nodes.state[: arena.n_nodes].astype(np.int64)


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("k", [2, 3, math.inf])
def test_knowledge_set_is_the_order_k_set_of_the_tree(game: str, k: float) -> None:
    tree = load_game(game)
    eng = full_search(tree, 0)
    arena = eng.arena
    n = arena.n_nodes
    states = _node_map(eng)
    assert sorted(states.tolist()) == list(range(tree.num_nodes))  # fully expanded, once each
    keys = np.ascontiguousarray(arena.nodes.key[:n])
    allowed = np.ones(n, dtype=np.bool_)
    for g in tree.infosets_of(0)[:6]:
        nodes = infoset_nodes(tree, int(g))
        start = np.isin(states, nodes)
        hops = 0 if k == math.inf else int(k) - 1
        ours = np.sort(states[knowledge_set(keys, allowed, start, hops)])
        theirs = order_k_set(tree, nodes, k)
        np.testing.assert_array_equal(ours, theirs, err_msg=f"{game} infoset {int(g)} k={k}")


@pytest.mark.parametrize("game", GAMES)
def test_profile_reaches_are_the_core_s_realization_plans(game: str) -> None:
    tree = load_game(game)
    eng = full_search(tree, 30)
    arena = eng.arena
    strat = played_profile(arena, Iterate.LAST)
    prof = profile(arena, strat)
    # the same profile as a strategy of the source tree, then the core's sequence-form reach
    on_tree = strategy_on_tree(arena, tree, uniform_strategy(tree), strat)
    x = realization_plan(tree, on_tree, 0)
    y = realization_plan(tree, on_tree, 1)
    states = _node_map(eng)
    seq = tree.seq[states]
    np.testing.assert_allclose(prof.x[: states.size], x[seq[:, 0]], atol=1e-12)
    np.testing.assert_allclose(prof.y[: states.size], y[seq[:, 1]], atol=1e-12)
    np.testing.assert_allclose(prof.c[: states.size], tree.chance_reach[states], atol=1e-12)
