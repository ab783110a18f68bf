"""The arena's layout and its debug checker (`caligo.search.arena`).

`check_invariants` is the oracle of every search test (and of `caligo search` in debug runs),
so it must catch each invariant it names: here a valid arena is broken one field at a time and
the checker must name what broke. The valid arenas are full expansions of the core's Kuhn and
Leduc poker and subgames re-rooted in them; the shape they must have (node and infoset counts,
depths, each infoset's nodes) is the compiled `GameTree`'s, which the core checks against
OpenSpiel (tests/core).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

from caligo.core.game import CHANCE
from caligo.core.games import load_game
from caligo.search.arena import (
    EXPANDED,
    M_SLOTS,
    Arena,
    ArenaInvariantError,
    Capacity,
    check_invariants,
)
from tests.search.conftest import full_search, rerooted

GAMES = ["kuhn_poker", "leduc_poker"]


def _full(game: str) -> Arena:
    return full_search(load_game(game), 10).arena


def _expanded(arena: Arena, player: int | None = None, min_children: int = 1) -> int:
    """The first expanded node (of `player`, when given) with at least `min_children`."""
    nd = arena.nodes
    for h in range(arena.n_nodes):
        if not nd.flags[h] & EXPANDED or nd.num_children[h] < min_children:
            continue
        if player is None or int(nd.player[h]) == player:
            return h
    raise AssertionError("no such node")


def _leaf(arena: Arena) -> int:
    nd = arena.nodes
    return int(np.flatnonzero((nd.flags[: arena.n_nodes] & EXPANDED) == 0)[0])


@pytest.mark.parametrize("game", GAMES)
def test_a_full_expansion_has_the_tree_s_shape(game: str) -> None:
    tree = load_game(game)
    arena = full_search(tree, 0).arena
    check_invariants(arena)
    assert arena.n_nodes == tree.num_nodes
    assert arena.n_infosets == tree.num_infosets
    assert arena.n_slots == tree.num_slots
    assert arena.max_depth() == int(tree.depth.max())
    states = arena.nodes.state[: arena.n_nodes].astype(np.int64)
    np.testing.assert_array_equal(arena.nodes.depth[: arena.n_nodes], tree.depth[states])
    # every infoset of the arena is one infoset of the tree, with the same nodes
    for g in range(arena.n_infosets):
        p = int(arena.infosets.player[g])
        key = int(arena.infosets.key[g])
        assert arena.infoset_of_key(p, key) == g
        rows = np.flatnonzero((arena.nodes.infoset[: arena.n_nodes] == g)
                              & (arena.nodes.flags[: arena.n_nodes] & EXPANDED != 0))
        assert len({int(tree.infoset[s]) for s in states[rows]}) == 1
        assert int(arena.infosets.n_actions[g]) == int(
            tree.infoset_num_actions[tree.infoset[states[rows[0]]]])
    for h in range(arena.n_nodes):
        for c in arena.children(h):
            assert int(arena.nodes.parent[c]) == h
    assert arena.infoset_of_key(0, 0x1234_5678_9ABC) == -1


@pytest.mark.parametrize("game", GAMES)
def test_a_copy_is_independent_and_valid(game: str) -> None:
    arena = _full(game)
    twin = arena.copy()
    check_invariants(twin)
    assert (twin.n_nodes, twin.n_infosets, twin.n_slots) == (arena.n_nodes, arena.n_infosets,
                                                             arena.n_slots)
    before = arena.slots.strat[: arena.n_slots].copy()
    twin.slots.strat[: twin.n_slots] = 0.0
    twin.nodes.value[: twin.n_nodes] = 12345.5  # no payoff of these games
    twin.meta[M_SLOTS] += 1
    np.testing.assert_array_equal(arena.slots.strat[: arena.n_slots], before)
    assert not np.any(arena.nodes.value[: arena.n_nodes] == 12345.5)
    check_invariants(arena)


def test_capacity_for_nodes_has_room_for_every_row_kind() -> None:
    small = Capacity.for_nodes(1)
    assert small.nodes == 16 and small.slots >= small.nodes and small.infosets >= 8
    big = Capacity.for_nodes(100_000)
    assert big.nodes == 100_000
    assert big.infosets >= big.nodes // 2 and big.slots >= big.nodes and big.roots >= 1024


def _break_root_parent(a: Arena) -> None:
    a.nodes.parent[0] = 0


def _break_child_pointer(a: Arena) -> None:
    h = _expanded(a, min_children=2)
    fc = int(a.nodes.first_child[h])
    a.nodes.parent[fc + 1] = fc


def _break_depth(a: Arena) -> None:
    h = _expanded(a)
    a.nodes.depth[int(a.nodes.first_child[h])] += 1


def _break_sequence(a: Arena) -> None:
    h = _expanded(a, player=0)
    c = int(a.nodes.first_child[h])
    a.nodes.seq[c, 0] += 1


def _break_infoset_key(a: Arena) -> None:
    h = _expanded(a, player=1)
    g = int(a.nodes.infoset[h])
    a.infosets.key[g] ^= np.uint64(1)


def _break_chance(a: Arena) -> None:
    h = _expanded(a, player=CHANCE)
    a.nodes.chance_prob[int(a.nodes.first_child[h])] += 0.125


def _break_leaf(a: Arena) -> None:
    a.nodes.num_children[_leaf(a)] = 1


def _break_strategy(a: Arena) -> None:
    g = int(a.nodes.infoset[_expanded(a, player=0)])
    a.slots.strat[int(a.infosets.slot0[g])] += 0.5


def _break_slot_owner(a: Arena) -> None:
    g = int(a.nodes.infoset[_expanded(a, player=0)])
    a.slots.infoset[int(a.infosets.slot0[g])] = g + 1


def _break_slot_count(a: Arena) -> None:
    a.meta[M_SLOTS] += 1


def _break_actions(a: Arena) -> None:
    h = _expanded(a, player=0, min_children=2)
    g = int(a.nodes.infoset[h])
    s0 = int(a.infosets.slot0[g])
    a.slots.action[s0], a.slots.action[s0 + 1] = a.slots.action[s0 + 1], a.slots.action[s0]


BREAKS: list[tuple[Callable[[Arena], None], str]] = [
    (_break_root_parent, "a root has a parent"),
    (_break_child_pointer, "a child does not point back"),
    (_break_depth, "depth is not its parent's + 1"),
    (_break_sequence, "sequences"),
    (_break_infoset_key, "has another player/key"),
    (_break_chance, "probabilities sum to"),
    (_break_leaf, "has children"),
    (_break_strategy, "is not a distribution"),
    (_break_slot_owner, "a slot names another owner"),
    (_break_slot_count, "slots in use but infosets own"),
    (_break_actions, "actions differ"),
]


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("breaker,says", BREAKS, ids=[b.__name__[7:] for b, _ in BREAKS])
def test_the_checker_names_each_broken_invariant(game: str, breaker: Callable[[Arena], None],
                                                 says: str) -> None:
    arena = _full(game)
    broken = arena.copy()
    breaker(broken)
    with pytest.raises(ArenaInvariantError, match=re.escape(says)):
        check_invariants(broken)
    check_invariants(arena)  # the original is untouched


@pytest.mark.parametrize("game", GAMES)
def test_the_checker_guards_the_root_layer(game: str) -> None:
    arena = rerooted(load_game(game), 1)[0]
    check_invariants(arena)
    m = arena.n_j
    broken = arena.copy()
    broken.roots.ptr[m] += 1
    with pytest.raises(ArenaInvariantError, match="root pointers"):
        check_invariants(broken)
    broken = arena.copy()
    broken.roots.ptr[1] = broken.roots.ptr[0]  # a root infoset J without a root
    with pytest.raises(ArenaInvariantError, match="root pointers"):
        check_invariants(broken)
    check_invariants(arena)
