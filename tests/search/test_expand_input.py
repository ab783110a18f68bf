"""The expander (`caligo.search.expand.Expander`) against a game or an evaluator that misbehaves,
a full arena and a passed deadline.

The search's game and evaluator interfaces are open (any `SearchGame`, any `Evaluator`), so a
wrong answer must stop the expansion with an error naming what was wrong, never write a broken
tree: an evaluator with the wrong number of values, a game with no children for a live state,
a game that gives one infoset two action sets (it breaks perfect recall: the commit reports
MISMATCH). A full arena unclaims the leaves and reports itself full. Under a deadline whose soft
instant has passed (an injected clock) only the first claimed leaf is expanded, the others are
handed back unclaimed.
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.core.tree import GameTree
from caligo.limits import Deadline
from caligo.search.arena import EXPANDED, Arena, check_invariants
from caligo.search.config import Iterations, SearchConfig, SearchError
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import ZeroEvaluator
from caligo.search.expand import MISMATCH, OK, Expander, commit, expand_fully, frontier
from caligo.search.game import ChildBatch, TreeGame
from tests.search.conftest import util_scale


def _arena(tree: GameTree, capacity: int = 4096) -> Arena:
    eng = GrowingTreeSearch(TreeGame(tree), ZeroEvaluator(), SearchConfig(budget=Iterations(1)),
                            0, capacity=capacity, util_scale=util_scale(tree))
    eng.start(0)
    return eng.arena


def _grow(arena: Arena, game: TreeGame, levels: int) -> None:
    ex = Expander(arena, game, ZeroEvaluator(), 0)
    for _ in range(levels):
        leaves = frontier(arena)
        arena.nodes.claim[leaves] = 1
        pending = ex.expand(leaves)
        assert pending is not None and commit(arena, pending, False) == OK


class _ShortEvaluator(ZeroEvaluator):
    def children(self, parents: np.ndarray, batch: ChildBatch) -> np.ndarray:
        return np.zeros(max(batch.state.shape[0] - 1, 0))


class _Childless(TreeGame):
    def expand(self, states: np.ndarray) -> ChildBatch:
        b = super().expand(states)
        empty = np.zeros(0)
        return ChildBatch(ptr=np.zeros_like(b.ptr), state=empty.astype(np.int64),
                          action=empty.astype(np.int32), player=empty.astype(np.int8),
                          chance_prob=empty, obs=np.zeros((0, 2), np.uint64), utility=empty)


class _Relabelled(TreeGame):
    """Kuhn poker where the children of one decision node carry other action labels than the
    other nodes of its infoset."""

    def __init__(self, tree: GameTree, odd: int) -> None:
        super().__init__(tree)
        self.odd = odd

    def expand(self, states: np.ndarray) -> ChildBatch:
        b = super().expand(states)
        action = b.action.copy()
        for i, s in enumerate(np.asarray(states).tolist()):
            if s == self.odd:
                action[b.ptr[i] : b.ptr[i + 1]] += 10
        return ChildBatch(ptr=b.ptr, state=b.state, action=action, player=b.player,
                          chance_prob=b.chance_prob, obs=b.obs, utility=b.utility)


@pytest.mark.parametrize("timed", [False, True])
def test_an_evaluator_with_too_few_values_is_refused(timed: bool) -> None:
    tree = load_game("kuhn_poker")
    arena = _arena(tree)
    leaves = frontier(arena)
    arena.nodes.claim[leaves] = 1
    deadline = Deadline(10.0, 20.0, now=lambda: 0.0) if timed else None
    with pytest.raises(SearchError, match=r"evaluator returned \(\d+,\) values for \d+ children"):
        Expander(arena, TreeGame(tree), _ShortEvaluator(), 0).expand(leaves, deadline)
    assert arena.n_nodes == 1  # nothing was written


def test_a_game_without_children_for_a_live_state_is_refused_by_state() -> None:
    tree = load_game("kuhn_poker")
    arena = _arena(tree)
    leaves = frontier(arena)
    arena.nodes.claim[leaves] = 1
    with pytest.raises(SearchError, match="no children for non-terminal state 0"):
        Expander(arena, _Childless(tree), ZeroEvaluator(), 0).expand(leaves)


def test_two_action_sets_for_one_infoset_is_a_mismatch() -> None:
    tree = load_game("kuhn_poker")
    g = tree.infosets_of(0)[0]
    nodes = np.flatnonzero(tree.infoset == g)
    assert nodes.size >= 2
    arena = _arena(tree)
    status = expand_fully(Expander(arena, _Relabelled(tree, int(nodes[-1])), ZeroEvaluator(), 0),
                          False)
    assert status == MISMATCH
    clean = _arena(tree)
    assert expand_fully(Expander(clean, TreeGame(tree), ZeroEvaluator(), 0), False) == OK
    check_invariants(clean)


def test_a_full_arena_hands_the_leaves_back() -> None:
    tree = load_game("leduc_poker")
    arena = _arena(tree, capacity=16)
    game = TreeGame(tree)
    ex = Expander(arena, game, ZeroEvaluator(), 0)
    for _ in range(10):
        leaves = frontier(arena)
        arena.nodes.claim[leaves] = 1
        pending = ex.expand(leaves)
        if pending is None:
            break
        assert commit(arena, pending, False) == OK
    assert ex.full and arena.n_nodes <= 16
    assert not arena.nodes.claim[: arena.n_nodes].any()  # every leaf is free again
    check_invariants(arena)


def test_past_the_soft_instant_only_the_first_leaf_is_expanded() -> None:
    tree = load_game("leduc_poker")
    game = TreeGame(tree)
    arena = _arena(tree)
    _grow(arena, game, 2)
    leaves = frontier(arena)
    assert leaves.size >= 3
    clock = [0.0]
    deadline = Deadline(1.0, 5.0, now=lambda: clock[0])
    clock[0] = 2.0  # the soft instant has passed, the hard one has not
    arena.nodes.claim[leaves] = 1
    pending = Expander(arena, game, ZeroEvaluator(), 0).expand(leaves, deadline)
    assert pending is not None
    np.testing.assert_array_equal(pending.leaves, leaves[:1])
    assert not arena.nodes.claim[leaves[1:]].any()
    assert commit(arena, pending, False) == OK
    flags = arena.nodes.flags[leaves]
    assert flags[0] & EXPANDED and not (flags[1:] & EXPANDED).any()
    check_invariants(arena)
