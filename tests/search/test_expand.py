"""One-sided GT-CFR expansion (Obscuro, Fig. 12, C.4, C.5) and the deterministic schedule.

The selection kernel is checked against `caligo.search.reference.reference_select` (Fig. 12's
walk in plain Python over the same xorshift stream): same leaves, same PUCT statistics. The
arena invariants (`check_invariants`) must hold after every growth step, also when the arena
fills up. Deterministic runs must be bit-identical (docs/design.md, "Conventions").
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.core.random_games import random_game
from caligo.core.tree import GameTree, build_tree
from caligo.search.arena import EXPANDED, M_NODES, check_invariants
from caligo.search.config import Expansion, Iterations, SearchConfig, SearchError
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.expand import Expander
from caligo.search.game import TreeGame
from caligo.search.reference import XorShift, reference_select
from tests.search.conftest import belief_at, gtcfr_search, rng, util_scale


def _rerooted(tree: GameTree, expansions: int) -> GrowingTreeSearch:
    """A 60-iteration search with `expansions` expansions, re-rooted at player 0's fourth
    infoset and iterated 5 times there."""
    eng = gtcfr_search(tree, 60, expansions)
    bel, key = belief_at(tree, int(tree.infosets_of(0)[3]))
    eng.reroot(bel, key, rng())
    eng.ensure_infoset(key)
    eng.iterate(5)
    return eng


@pytest.mark.parametrize(("two_sided", "prior"), [(False, 0.0), (True, 0.0), (False, 0.3),
                                                   (True, 0.05)])
def test_select_kernel_matches_reference(two_sided: bool, prior: float) -> None:
    """Also with a PUCT prior (`SearchConfig.puct_prior`), against the reference's softmax."""
    tree = load_game("leduc_poker")
    eng = _rerooted(tree, 150)
    for explorer in (0, 1, 0, 1):
        a, b = eng.arena.copy(), eng.arena.copy()
        ex = Expander(a, eng.game, eng.evaluator, 11)
        ref = XorShift(int(ex.rng[0]))
        for _ in range(40):
            h1 = ex.select(explorer, two_sided, 1.0, 0.5, util_scale(tree), prior)
            h2 = reference_select(b, explorer, two_sided, 1.0, 0.5, util_scale(tree), ref, prior)
            assert h1 == h2
        ns, ni, nn = a.n_slots, a.n_infosets, a.n_nodes
        for name in ("n_visits", "q_sum", "q_sqsum"):
            np.testing.assert_allclose(getattr(a.slots, name)[:ns], getattr(b.slots, name)[:ns],
                                       atol=1e-12)
        np.testing.assert_array_equal(a.infosets.visits[:ni], b.infosets.visits[:ni])
        np.testing.assert_array_equal(a.nodes.claim[:nn], b.nodes.claim[:nn])
        eng.arena = a
        eng.arena.nodes.claim[: a.n_nodes] = 0
        eng.iterate(3)


@pytest.mark.parametrize("seed", range(6))
def test_growth_keeps_invariants_on_random_games(seed: int) -> None:
    tree = build_tree(random_game(seed, max_depth=6, max_actions=3))
    for expansion in (Expansion.ONE_SIDED, Expansion.TWO_SIDED):
        eng = gtcfr_search(tree, 50, 80, seed=seed, expansion=expansion)
        check_invariants(eng.arena)
        nd = eng.arena.nodes
        n = eng.arena.n_nodes
        assert n <= tree.num_nodes  # every arena node is a distinct node of the game
        assert len(set(nd.state[:n].tolist())) == n


def test_expansion_stops_cleanly_when_the_arena_is_full() -> None:
    tree = load_game("leduc_poker")
    cfg = SearchConfig(budget=Iterations(200), expansions=2000)
    eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, 0, capacity=300,
                            util_scale=util_scale(tree))
    eng.start(0)
    eng.run(1)
    check_invariants(eng.arena)
    assert eng.arena.n_nodes <= 300 and eng.arena.iteration == 200


def test_our_infoset_with_no_room_to_expand_is_a_named_error() -> None:
    """A re-rooted subgame whose arena has no free row cannot give our infoset a strategy:
    `ensure_infoset` says so, naming the arena's occupancy, instead of leaving the search to
    fail later without a reason. With room, the same call expands a node of it."""
    tree = load_game("leduc_poker")
    eng = gtcfr_search(tree, 60, 5)  # five expansions: the fourth infoset was never grown
    bel, key = belief_at(tree, int(tree.infosets_of(0)[3]))
    eng.reroot(bel, key, rng())
    assert eng.arena.infoset_of_key(0, key) < 0
    free = eng.arena.n_nodes
    eng.arena.meta[M_NODES] = eng.arena.capacity.nodes  # every row taken
    with pytest.raises(SearchError, match=r"no room to expand our infoset's node .* node rows"):
        eng.ensure_infoset(key)
    eng.arena.meta[M_NODES] = free
    eng.ensure_infoset(key)
    assert eng.arena.infoset_of_key(0, key) >= 0


def test_full_expansion_covers_the_subgame() -> None:
    tree = load_game("kuhn_poker")
    cfg = SearchConfig(budget=Iterations(5), expansion=Expansion.FULL)
    eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, 0,
                            capacity=400, util_scale=2.0)
    eng.start(0)
    eng.run(0)
    a = eng.arena
    nonterm = a.nodes.player[: a.n_nodes] != 3
    assert a.n_nodes == tree.num_nodes
    assert np.all(a.nodes.flags[: a.n_nodes][nonterm] & EXPANDED)


def test_new_infosets_start_on_their_best_child() -> None:
    """C.5: a new infoset's first strategy is pure on the child with the best heuristic value
    for the player to move (values from the perfect-information evaluator)."""
    tree = load_game("leduc_poker")
    eng = gtcfr_search(tree, 1, 0)  # one iteration, no expansions: only the root
    eng.ensure_infoset(0)
    ex = Expander(eng.arena, eng.game, eng.evaluator, 0)
    a = eng.arena
    todo = np.flatnonzero((a.nodes.player[: a.n_nodes] < 2)
                          & ~(a.nodes.flags[: a.n_nodes] & EXPANDED).astype(bool))
    if todo.size == 0:  # the root is chance: expand below it
        from caligo.search.expand import expand_fully

        expand_fully(ex, False)
    for g in range(a.n_infosets):
        sl = a.infoset_slots(g)
        h = int(a.infosets.first_node[g])
        vals = a.nodes.value[a.children(h)] * (1 if a.infosets.player[g] == 0 else -1)
        assert a.slots.strat[sl].tolist() == np.eye(len(vals))[int(np.argmax(vals))].tolist()


def _fingerprint(eng: GrowingTreeSearch) -> bytes:
    a = eng.arena
    parts = [a.meta.tobytes(), a.fmeta.tobytes()]
    for t, n in ((a.nodes, a.n_nodes), (a.infosets, a.n_infosets), (a.slots, a.n_slots),
                 (a.roots, a.n_j)):
        parts.extend(arr[:n].tobytes() for arr in t)
    return b"".join(parts)


def test_deterministic_runs_are_bit_identical() -> None:
    tree = load_game("leduc_poker")
    prints = set()
    for _ in range(2):
        eng = gtcfr_search(tree, 80, 120, seed=5)
        bel, key = belief_at(tree, int(tree.infosets_of(0)[2]))
        eng.reroot(bel, key, rng(3))
        eng.run(9)
        prints.add(_fingerprint(eng))
    assert len(prints) == 1
    other = gtcfr_search(tree, 80, 120, seed=6)
    assert _fingerprint(other) not in prints


def test_a_puct_prior_explores_the_evaluators_favourite_first() -> None:
    """With equal values, variances and visit counts the PUCT argmax is the prior's argmax: the
    child the evaluator likes best for the acting player (without a prior, the first action)."""
    tree = load_game("leduc_poker")
    eng = _rerooted(tree, 40)
    moved = walks = 0
    for walk in range(40):
        a = eng.arena.copy()
        for name in ("q", "q_sum", "q_sqsum", "n_visits"):
            getattr(a.slots, name)[:] = 0
        a.infosets.visits[:] = 0
        nd = a.nodes
        ex = Expander(a, eng.game, eng.evaluator, 100 + walk)
        h = ex.select(0, True, 1.0, 1.0, util_scale(tree), 0.01)
        if h < 0:
            continue  # the walk ended on a terminal node: no leaf to trace back
        walks += 1
        while nd.parent[h] >= 0:
            p = int(nd.parent[h])
            if nd.player[p] in (0, 1):
                sign = 1.0 if nd.player[p] == 0 else -1.0
                kids = a.children(p)
                values = [sign * float(nd.value[c]) for c in kids]
                assert sign * float(nd.value[h]) == max(values)
                moved += int(h != kids[0])
            h = p
    assert walks >= 5
    assert moved > 0  # the prior's choice is not the no-prior tie-break's first action
