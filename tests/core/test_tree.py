"""The compiled tree: layout invariants and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.game import CHANCE, TERMINAL, GameTooLargeError, UnknownGameError
from caligo.core.games import game_definition, load_game
from caligo.core.tree import build_tree

GAMES = [
    "kuhn_poker",
    "leduc_poker",
    "goofspiel(num_cards=4,imp_info=True,points_order=ascending)",
    "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
    "matching_pennies_n(n=10)",
    "rock_paper_scissors",
]


@pytest.mark.parametrize("spec", GAMES)
def test_layout_invariants(spec: str) -> None:
    tree = load_game(spec)
    n = tree.num_nodes
    assert tree.parent[0] == -1
    assert np.all(tree.parent[1:] < np.arange(1, n))  # parents precede children
    for h in range(n):
        kids = range(tree.first_child[h], tree.first_child[h] + tree.num_children[h])
        assert all(tree.parent[c] == h for c in kids)
        if tree.player[h] == TERMINAL:
            assert tree.num_children[h] == 0
        if tree.player[h] == CHANCE:
            assert abs(tree.chance_prob[list(kids)].sum() - 1.0) < 1e-12
    # a child infoset (below a player's sequence) always has a larger id than its parent infoset
    for g in range(tree.num_infosets):
        p = tree.infoset_player[g]
        parent_seq = tree.infoset_parent_seq[g]
        if parent_seq > 0:
            assert tree.seq_infoset[p][parent_seq] < g
    # every node of a decision infoset has the same knowledge infoset of its player
    dec = np.flatnonzero(tree.player <= 1)
    assert np.all(tree.infoset_kinfo[tree.infoset[dec]] == tree.kinfo[dec, tree.player[dec]])


def test_unknown_game_names_the_spec() -> None:
    with pytest.raises(UnknownGameError, match="no_such_game"):
        load_game("no_such_game")


def test_node_limit() -> None:
    with pytest.raises(GameTooLargeError, match="leduc_poker"):
        build_tree(game_definition("leduc_poker"), max_nodes=1000)


def test_not_two_player_zero_sum() -> None:
    from caligo.core.game import UnsupportedGameError

    with pytest.raises(UnsupportedGameError, match="kuhn_poker"):
        load_game("kuhn_poker(players=3)")
    with pytest.raises(UnsupportedGameError, match="zero-sum"):
        load_game("matrix_pd")


def test_bad_builtin_parameters() -> None:
    with pytest.raises(UnknownGameError, match="matching_pennies_n"):
        load_game("matching_pennies_n(q=3)")
