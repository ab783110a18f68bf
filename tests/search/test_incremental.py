"""`KeyMode.INCREMENTAL` (the FoW mode): the game reports per-step observations and the search
hashes observation sequences itself. A wrapper over a compiled tree that reports each node's
knowledge id as a per-step observation must give the tree's decision infosets node for node,
and an agent fed one observation per ply must play exactly what the `KeyMode.CUMULATIVE` agent
plays (same arena, same iterates; only the keys differ).
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.core.tree import GameTree
from caligo.search.agent import SearchAgent, tree_agent
from caligo.search.config import Expansion, Iterations, Purification, SearchConfig
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.game import KeyMode, TreeGame
from tests.search.arena_reader import arena_to_gametree
from tests.search.conftest import util_scale


class IncrementalTreeGame(TreeGame):
    """The same game, but keys are built by the search from per-step observations."""

    key_mode = KeyMode.INCREMENTAL


def _path(tree: GameTree, h: int) -> list[int]:
    out = [h]
    while tree.parent[out[-1]] >= 0:
        out.append(int(tree.parent[out[-1]]))
    return out[::-1]


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_incremental_keys_give_the_trees_infosets(game: str) -> None:
    from caligo.search.engine import GrowingTreeSearch

    tree = load_game(game)
    eng = GrowingTreeSearch(IncrementalTreeGame(tree), PerfectInfoEvaluator(tree),
                            SearchConfig(budget=Iterations(1), expansion=Expansion.FULL), 0,
                            capacity=2 * tree.num_nodes, util_scale=util_scale(tree))
    eng.start(0)
    eng.expand_full()
    ex = arena_to_gametree(eng.arena)
    pairs = set(zip(ex.infoset.tolist(), tree.infoset.tolist(), strict=True))
    assert len(pairs) == len(set(ex.infoset.tolist())) == len(set(tree.infoset.tolist()))
    # Knowledge infosets where the player does not act: incremental keys count every step as
    # an observation (timing is known, as in FoW chess), so they may split a tree class whose
    # player cannot tell two depths apart (Kuhn's second deal), but never merge two.
    for p in (0, 1):
        pairs = set(zip(ex.kinfo[:, p].tolist(), tree.kinfo[:, p].tolist(), strict=True))
        assert len(pairs) == len(set(ex.kinfo[:, p].tolist()))


def _walk(tree: GameTree, agent: SearchAgent, seat: int, per_ply: bool) -> dict[int, np.ndarray]:
    """The agent's play at every decision node of `seat` reached by its own play."""
    out: dict[int, np.ndarray] = {}

    def visit(ag: SearchAgent, node: int, fed: int) -> None:
        p = int(tree.player[node])
        if p == 3:
            return
        if p == seat:
            a = ag.snapshot()
            if per_ply:
                path = _path(tree, node)
                for j in range(fed + 1, len(path)):
                    a.observe(int(tree.kinfo[path[j], seat]))
            else:
                a.observe(int(tree.kinfo[node, seat]))
            dec = a.act()
            out[node] = dec.play.copy()
            for c in range(tree.first_child[node],
                           tree.first_child[node] + tree.num_children[node]):
                if dec.play[list(dec.actions).index(int(tree.action[c]))] > 0:
                    b = a.snapshot()
                    b.force(int(tree.action[c]))
                    visit(b, c, len(_path(tree, node)) - 1)
            return
        for c in range(tree.first_child[node], tree.first_child[node] + tree.num_children[node]):
            visit(ag, c, fed)

    visit(agent, 0, 0)
    return out


@pytest.mark.parametrize("seat", [0, 1])
def test_incremental_agent_plays_like_the_cumulative_one(seat: int) -> None:
    tree = load_game("kuhn_poker")
    cfg = SearchConfig(budget=Iterations(200), expansion=Expansion.FULL,
                       purification=Purification.NONE)
    ev = PerfectInfoEvaluator(tree)
    plays = []
    for game, per_ply in ((TreeGame(tree), False), (IncrementalTreeGame(tree), True)):
        agent = tree_agent(game, ev, cfg, seat)
        agent.new_game(seat, 0)
        plays.append(_walk(tree, agent, seat, per_ply))
    assert plays[0].keys() == plays[1].keys() and len(plays[0]) >= 6
    for node in plays[0]:
        np.testing.assert_array_equal(plays[0][node], plays[1][node])
