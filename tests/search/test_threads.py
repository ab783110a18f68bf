"""Threaded search (Obscuro, section 3.4): one solver thread and expander threads on a shared
arena. Over thousands of short searches, re-rooted from one another as in play, the arena's
invariants (`check_invariants`) must hold after every search: no torn publication, no lost
child, no infoset merged or split, no crash.
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.search.arena import M_EXPANSIONS, check_invariants
from caligo.search.config import Iterations, Schedule, SearchConfig, Seconds
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.game import TreeGame
from tests.conftest import SHORT
from tests.search.conftest import belief_at, util_scale


def _threaded(tree_name: str, searches: int, budget: Seconds | Iterations,
              expanders: int) -> int:
    tree = load_game(tree_name)
    game = TreeGame(tree)
    cfg = SearchConfig(budget=budget, expansions=None if isinstance(budget, Seconds) else 400,
                       schedule=Schedule.THREADED, expanders=expanders)
    infosets = [int(g) for g in tree.infosets_of(0)]
    rng = np.random.default_rng(0)
    done = 0
    grown = 0
    eng = GrowingTreeSearch(game, PerfectInfoEvaluator(tree), cfg, 0,
                            evaluator_factory=lambda: PerfectInfoEvaluator(tree),
                            capacity=3 * tree.num_nodes + 600, util_scale=util_scale(tree))
    eng.start(0)
    eng.run(0)
    check_invariants(eng.arena)
    while done < searches:
        g = infosets[int(rng.integers(len(infosets)))]
        bel, key = belief_at(tree, g)
        if done % 25 == 0:  # now and then start over from the true start
            eng.start(0)
            eng.run(done)
        else:
            eng.reroot(bel, key, rng)
            eng.ensure_infoset(key)
            eng.run(done)
        check_invariants(eng.arena)
        assert not eng.arena.nodes.claim[: eng.arena.n_nodes].any()
        grown += int(eng.arena.meta[M_EXPANSIONS] > 0 and eng.arena.iteration > 0)
        done += 1
    assert grown > searches // 2  # the threads did expand and iterate in most searches
    return done


@pytest.mark.slow
def test_thousands_of_threaded_searches_keep_invariants() -> None:
    n = 150 if SHORT else 2000
    assert _threaded("leduc_poker", n, Seconds(0.03), 2) == n


def test_threaded_iteration_budget() -> None:
    assert _threaded("liars_dice(dice_sides=3)", 40, Iterations(60), 2) == 40
